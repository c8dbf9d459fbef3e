// Package obscheck reads which metrics Furrow's Grafana dashboard and
// Prometheus alert rules (deploy/observability/) use, so that tests can
// hold them to the metrics Furrow exports. The files stay plain data in
// deploy/, which is its own Go module and is mounted as is by compose.
package obscheck

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Dir is deploy/observability/ relative to a package directory of this
// module, where tests run.
const Dir = "../../deploy/observability"

// metricName matches the names of Furrow's and the Temporal SDK's series;
// label values and functions never start with these prefixes.
var metricName = regexp.MustCompile(`\b(?:furrow|temporal)_[a-z0-9_]+`)

// histogramSuffixes are the series a histogram is exposed as.
var histogramSuffixes = []string{"_bucket", "_sum", "_count"}

// Expressions returns every PromQL expression of the dashboard and the
// alert rules in dir.
func Expressions(dir string) ([]string, error) {
	dashboard, err := os.ReadFile(filepath.Join(dir, "dashboard.json"))
	if err != nil {
		return nil, err
	}
	alerts, err := os.ReadFile(filepath.Join(dir, "alerts.yaml"))
	if err != nil {
		return nil, err
	}
	var d struct {
		Panels []struct {
			Targets []struct{ Expr string } `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(dashboard, &d); err != nil {
		return nil, fmt.Errorf("dashboard.json: %w", err)
	}
	var out []string
	for _, p := range d.Panels {
		for _, t := range p.Targets {
			out = append(out, t.Expr)
		}
	}
	var r struct {
		Groups []struct {
			Rules []struct{ Expr string } `yaml:"rules"`
		} `yaml:"groups"`
	}
	if err := yaml.Unmarshal(alerts, &r); err != nil {
		return nil, fmt.Errorf("alerts.yaml: %w", err)
	}
	for _, g := range r.Groups {
		for _, rule := range g.Rules {
			out = append(out, rule.Expr)
		}
	}
	return out, nil
}

// SeriesNames returns, sorted and once each, the series names the
// dashboard and the rules in dir query (histograms as their _bucket, _sum
// or _count series).
func SeriesNames(dir string) ([]string, error) {
	exprs, err := Expressions(dir)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, e := range exprs {
		names = append(names, metricName.FindAllString(e, -1)...)
	}
	slices.Sort(names)
	return slices.Compact(names), nil
}

// Exported reports whether series is among the exposed metric families:
// a family's own name, or a histogram family's _bucket, _sum or _count.
func Exported(series string, families map[string]bool) bool {
	if families[series] {
		return true
	}
	for _, s := range histogramSuffixes {
		if base, ok := strings.CutSuffix(series, s); ok && families[base] {
			return true
		}
	}
	return false
}
