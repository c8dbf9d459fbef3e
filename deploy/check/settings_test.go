package check

import (
	"slices"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"

	"github.com/furrowhq/furrow/internal/doccheck"
)

// furrowSettings returns every FURROW_* variable cmd/furrow reads.
func furrowSettings(t *testing.T) map[string]bool {
	t.Helper()
	out, err := doccheck.Settings("../../cmd/furrow")
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// checkSettings fails t for every FURROW_* name in env that cmd/furrow does
// not read; where says which file and object set it.
func checkSettings(t *testing.T, where string, env map[string]string) {
	t.Helper()
	known := furrowSettings(t)
	for k := range env {
		if strings.HasPrefix(k, "FURROW_") && !known[k] {
			t.Errorf("%s sets %s, which is not a setting of cmd/furrow", where, k)
		}
	}
}

// reservedSettings are the variables the chart sets itself, which
// `settings` must not name.
var reservedSettings = []string{"FURROW_HTTP_ADDR", "FURROW_METRICS_ADDR", "FURROW_DATABASE_URL", "PGPASSWORD", "FURROW_REDIS_URL",
	"FURROW_SECRET_KEYS", "FURROW_SECRET_KEYS_FILE", "FURROW_TEMPORAL_ADDRESS", "FURROW_TEMPORAL_NAMESPACE", "FURROW_TRUSTED_PROXIES"}

// chartSettings returns the chart's list of the settings Furrow reads
// (furrow.settingsRead), rendered through a template added for the test.
func chartSettings(t *testing.T) map[string]bool {
	t.Helper()
	ch, err := loader.Load(chartDir)
	if err != nil {
		t.Fatal(err)
	}
	const probe = "templates/settings-read-probe.txt"
	ch.Templates = append(ch.Templates, &chart.File{Name: probe, Data: []byte(`{{ include "furrow.settingsRead" . }}`)})
	files, err := renderChart(t, ch, "furrow", map[string]any{})
	if err != nil {
		t.Fatalf("the chart's list of settings does not render: %v", err)
	}
	out := map[string]bool{}
	for _, name := range strings.Fields(files[ch.Name()+"/"+probe]) {
		out[name] = true
	}
	return out
}

// TestHelmSettingsReadIsCmdFurrows: the chart's list of the settings
// Furrow reads, by which it refuses a misspelt one, is cmd/furrow's (the
// one docs/operating/configuration.md's table is held to).
func TestHelmSettingsReadIsCmdFurrows(t *testing.T) {
	chartList, code := chartSettings(t), furrowSettings(t)
	for name := range code {
		if !chartList[name] {
			t.Errorf("cmd/furrow reads %s, which the chart's furrow.settingsRead (_helpers.tpl) does not list: settings would refuse it", name)
		}
	}
	for name := range chartList {
		if !code[name] {
			t.Errorf("the chart's furrow.settingsRead (_helpers.tpl) lists %s, which cmd/furrow does not read", name)
		}
	}
}

// TestHelmUnknownSetting: a FURROW_* key of settings that Furrow does not
// read (a misspelling) fails the render, naming it, rather than being
// ignored by every pod; every setting Furrow reads that the chart does not
// set itself is accepted, but furrow dev's own, and so are variables of
// other programs (OTEL_*).
func TestHelmUnknownSetting(t *testing.T) {
	for _, k := range []string{"FURROW_RETRY_SCHEDUL", "FURROW_READING_RETENTION", "FURROW_WEBHOOK_ALLOW_PRIVATES"} {
		renderFails(t, map[string]any{"settings": map[string]any{k: "x"}}, "settings."+k)
	}
	all := map[string]any{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4317"}
	for name := range furrowSettings(t) {
		if !slices.Contains(reservedSettings, name) && !strings.HasPrefix(name, "FURROW_DEV_") {
			all[name] = "x"
		}
	}
	all["FURROW_SHUTDOWN_TIMEOUT"] = "30s" // the chart reads this one
	if _, err := renderFiles(t, map[string]any{"settings": all}); err != nil {
		t.Errorf("settings of every variable Furrow reads (but those the chart sets) do not render: %v", err)
	}
}

// TestHelmDevSettingsRefused: a setting only furrow dev reads fails the
// render, naming it and why, since the chart's serve and worker would
// ignore it without a word.
func TestHelmDevSettingsRefused(t *testing.T) {
	var dev int
	for name := range furrowSettings(t) {
		if strings.HasPrefix(name, "FURROW_DEV_") {
			dev++
			renderFails(t, map[string]any{"settings": map[string]any{name: "x"}}, "settings."+name, "only furrow dev reads")
		}
	}
	if dev < 3 {
		t.Fatalf("found %d FURROW_DEV_ settings in cmd/furrow, want the data directory, Temporal and UI addresses", dev)
	}
}
