package check

import (
	"testing"

	"helm.sh/helm/v3/pkg/chartutil"
)

// TestHelmTemporalValuesNeedNoOperator: the values for Temporal's chart
// leave its ServiceMonitors off, as Furrow's chart does, so that `helm
// install` works where the Prometheus Operator's CRDs are not installed.
func TestHelmTemporalValuesNeedNoOperator(t *testing.T) {
	v, err := chartutil.ReadValuesFile("../helm/temporal-values.yaml")
	if err != nil {
		t.Fatal(err)
	}
	enabled, err := v.PathValue("server.metrics.serviceMonitor.enabled")
	if err != nil || enabled != false {
		t.Errorf("server.metrics.serviceMonitor.enabled is %v (%v), want false: Temporal's chart would need the Prometheus Operator's CRDs", enabled, err)
	}
}
