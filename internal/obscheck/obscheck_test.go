package obscheck

import (
	"context"
	"net/http/httptest"
	"os/exec"
	"strings"
	"testing"

	"github.com/go-chi/chi/v5"

	"github.com/furrowhq/furrow/internal/testenv"
	"github.com/furrowhq/furrow/telemetry"
)

// promtool returns the path of Prometheus's promtool. It is required, not
// optional: .ci/run installs Debian's prometheus package when it is missing.
func promtool(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("promtool")
	if err != nil {
		t.Fatal("promtool is not installed, so the alert rules cannot be checked: " +
			"install Debian's prometheus package (apt-get install prometheus), as .ci/run does")
	}
	return p
}

// promtoolIn runs promtool with args in deploy/observability/.
func promtoolIn(t *testing.T, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(promtool(t), args...)
	cmd.Dir = Dir
	return cmd
}

func TestAlertRulesPassPromtoolCheck(t *testing.T) {
	testenv.SkipShort(t, "promtool")
	out, err := promtoolIn(t, "check", "rules", "alerts.yaml").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "SUCCESS") {
		t.Fatalf("promtool check rules alerts.yaml: %v\n%s", err, out)
	}
}

func TestAlertRulesPassTheirUnitTests(t *testing.T) {
	testenv.SkipShort(t, "promtool")
	out, err := promtoolIn(t, "test", "rules", "alerts_test.yaml").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "SUCCESS") {
		t.Fatalf("promtool test rules alerts_test.yaml: %v\n%s", err, out)
	}
}

// Every alert has a rule and a unit test that fires it.
func TestEveryAlertIsTested(t *testing.T) {
	tests, alerts := readFile(t, "alerts_test.yaml"), readFile(t, "alerts.yaml")
	for _, name := range []string{
		"FurrowOutboxStale", "FurrowDeliveryFailureRatioHigh", "FurrowWebhookDisabled",
		"FurrowReadingEndpoint5xx", "FurrowRateLimiterFailingOpen", "FurrowNotReady",
		"FurrowTemporalScheduleToStartHigh",
	} {
		if !strings.Contains(alerts, "alert: "+name+"\n") {
			t.Errorf("alerts.yaml has no rule %s", name)
		}
		if !strings.Contains(tests, "alertname: "+name+"\n") {
			t.Errorf("alerts_test.yaml does not test %s", name)
		}
	}
}

// The furrow_* series of the dashboard and the rules are all exported by
// package telemetry. The temporal_* ones come from the Temporal SDK at
// run time; e2e's metrics test checks them against a running binary.
func TestDashboardAndRulesUseFurrowsMetrics(t *testing.T) {
	names, err := SeriesNames(Dir)
	if err != nil {
		t.Fatal(err)
	}
	families := telemetryFamilies(t)
	var furrowNames int
	for _, n := range names {
		if !strings.HasPrefix(n, "furrow_") {
			continue
		}
		furrowNames++
		if !Exported(n, families) {
			t.Errorf("%s is used by the dashboard or the rules but Furrow exports no such metric", n)
		}
	}
	if furrowNames < 15 {
		t.Errorf("only %d furrow_* series found in the dashboard and rules: %v", furrowNames, names)
	}
}

// telemetryFamilies returns the metric families of a fully wired
// telemetry.Metrics.
func telemetryFamilies(t *testing.T) map[string]bool {
	t.Helper()
	m := telemetry.New()
	m.WatchFailOpen(func() int64 { return 0 })
	m.WatchLive(telemetry.LiveStats{
		Published: func() uint64 { return 0 }, Dropped: func() uint64 { return 0 }, Connections: func() int { return 0 },
	})
	m.WatchOutbox(emptyOutbox{}, nil)
	// Labelled families appear once they have a series.
	m.HTTP(chi.NewRouter()).ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/", nil))
	mfs, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, mf := range mfs {
		out[mf.GetName()] = true
	}
	return out
}

type emptyOutbox struct{}

func (emptyOutbox) OutboxBacklog(context.Context) (int64, int64, error) { return 0, 0, nil }
