package check

import (
	"fmt"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/chart/loader"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/util/validation"
)

// TestHelmLongReleaseName: with the longest release name Helm accepts
// (53 characters), with and without "furrow" in it, every object's name
// is a DNS label (63 characters at most; a Job's name becomes a label of
// its pods, and a Service's its DNS name) unique within its kind, and
// every label value is valid.
func TestHelmLongReleaseName(t *testing.T) {
	ch, err := loader.Load(chartDir)
	if err != nil {
		t.Fatal(err)
	}
	given := map[string]any{"metrics": map[string]any{"serviceMonitor": map[string]any{"enabled": true}}}
	for _, release := range []string{
		"farm-sensors-ingestion-and-delivery-production-eu-01",  // 52: <release>-furrow is cut
		"eu-west-production-furrow-ingestion-and-delivery-01a",  // 52: contains furrow
		"farm-sensors-ingestion-and-delivery-production-eu-01b", // 53, Helm's most
	} {
		if len(release) > 53 {
			t.Fatalf("release %q is longer than Helm allows", release)
		}
		files, err := renderChart(t, ch, release, given)
		if err != nil {
			t.Fatalf("release %q: %v", release, err)
		}
		objs := decodeFiles(t, "release "+release, files)
		seen := map[string]bool{}
		for _, o := range objs {
			m, err := meta.Accessor(o)
			if err != nil {
				t.Fatal(err)
			}
			kind := fmt.Sprintf("%T", o)
			if errs := validation.IsDNS1123Label(m.GetName()); len(errs) > 0 {
				t.Errorf("release %q: %s %s (%d characters): %s", release, kind, m.GetName(), len(m.GetName()), strings.Join(errs, "; "))
			}
			if seen[kind+"/"+m.GetName()] {
				t.Errorf("release %q: two objects %s %s", release, kind, m.GetName())
			}
			seen[kind+"/"+m.GetName()] = true
			checkLabels(t, release, kind+" "+m.GetName(), m.GetLabels())
		}
		c := collect(t, objs)
		for _, p := range pods(c) {
			checkLabels(t, release, p.where+" pod template", p.meta.Labels)
		}
		if len(seen) < 10 {
			t.Errorf("release %q: checked %d objects", release, len(seen))
		}
	}
}

func checkLabels(t *testing.T, release, where string, labels map[string]string) {
	t.Helper()
	for k, v := range labels {
		if errs := validation.IsValidLabelValue(v); len(errs) > 0 {
			t.Errorf("release %q: %s: label %s=%q: %s", release, where, k, v, strings.Join(errs, "; "))
		}
	}
}
