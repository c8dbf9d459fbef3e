package e2e

import (
	"github.com/furrowhq/furrow/internal/testenv"
	"net/http"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/furrowhq/furrow/internal/obscheck"
)

// TestMetricsFollowTheService drives `furrow dev` through every kind of
// event its metrics count and asserts that each named series moved by
// exactly the amount the test caused. Retry delays of 5 s leave room
// to delete a webhook between a chain's first and second attempt.
func TestMetricsFollowTheService(t *testing.T) {
	testenv.SkipShort(t, "the furrow binary (furrow dev, embedded Temporal server) and a webhook receiver")
	e := newDevEnv(t, "FURROW_RETRY_SCHEDULE", "5s,5s",
		"FURROW_DEVICE_STALE_AFTER", "2s", "FURROW_DEVICE_OFFLINE_AFTER", "3s", "FURROW_DEVICE_SWEEP_EVERY", "1s")
	before := scrape(t, e.f.MetricsURL)
	const route = `route="/api/metric-values",method="POST"`

	// Ingest: one good reading, a 400, a 401, then a second device up to
	// its limit of 120 and one 429. No webhook exists yet, so nothing is
	// delivered.
	e.postReading(t, 21.5)
	expect(t, do(t, nil, "POST", e.f.URL+"/api/metric-values", "{not json", bearer(e.fx.Key)...), 400, "bad_request")
	expect(t, do(t, nil, "POST", e.f.URL+"/api/metric-values", reading(e.fx.DeviceID, 1), bearer("fdk_nope")...), 401, "unauthorized")
	flood, floodKey := newDevice(t, e.f, e.fx)
	for i := range 120 {
		expect(t, do(t, nil, "POST", e.f.URL+"/api/metric-values", reading(flood, i), bearer(floodKey)...), 201, "")
	}
	expect(t, do(t, nil, "POST", e.f.URL+"/api/metric-values", reading(flood, 0), bearer(floodKey)...), 429, "rate_limited")

	after := eventually(t, e.f.MetricsURL, func(m metrics) bool {
		return m.diff(before, "furrow_live_published_total") >= 121
	})
	after.expectDiff(t, before, map[string]float64{
		`furrow_http_requests_total{` + route + `,code="201"}`:                                   121,
		`furrow_http_requests_total{` + route + `,code="400"}`:                                   1,
		`furrow_http_requests_total{` + route + `,code="401"}`:                                   1,
		`furrow_http_requests_total{` + route + `,code="429"}`:                                   1,
		`furrow_http_request_duration_seconds_count{` + route + `}`:                              124,
		"furrow_readings_stored_total":                                                           121,
		"furrow_ingest_batch_size_sum":                                                           121,
		"furrow_ratelimit_rejected_total":                                                        1,
		"furrow_ratelimit_failopen_total":                                                        0,
		"furrow_live_published_total":                                                            121,
		"furrow_live_dropped_total":                                                              0,
		"furrow_dispatch_workflows_started_total":                                                0,
		`furrow_http_requests_total{route="/api/farms/{farm}/devices",method="POST",code="201"}`: 1,
	})
	if n := after.diff(before, "furrow_ingest_batch_size_count"); n < 1 || n > 121 {
		t.Errorf("group-commit transactions moved by %v, want 1..121", n)
	}

	// Delivery: the receiver fails the first two attempts of each
	// metric.value event and accepts the third, so that both the local
	// first attempt and the regular activity's retries are counted.
	e.rc.setAnswer(func(_ string, nth int) int {
		if nth <= 2 {
			return 503
		}
		return 200
	})
	hook := e.createWebhook(t, map[string]any{"url": e.rc.URL(), "event_types": []string{"metric.value"}})
	e.rc.setSecret(hook.Secret)
	before = scrape(t, e.f.MetricsURL)
	e.postReading(t, 22)
	for i, want := range []int{503, 503, 200} {
		if d := e.rc.next(t, 60*time.Second); d.Status != want {
			t.Fatalf("attempt %d answered %d", i+1, d.Status)
		}
	}
	after = eventually(t, e.f.MetricsURL, func(m metrics) bool {
		return m.diff(before, `furrow_delivery_chains_total{outcome="delivered"}`) >= 1
	})
	after.expectDiff(t, before, map[string]float64{
		"furrow_dispatch_workflows_started_total":            1,
		`furrow_delivery_attempts_total{result="retry"}`:     2,
		`furrow_delivery_attempts_total{result="delivered"}`: 1,
		`furrow_delivery_attempts_total{result="failed"}`:    0,
		`furrow_delivery_chains_total{outcome="delivered"}`:  1,
		"furrow_delivery_attempt_duration_seconds_count":     3,
		"furrow_delivery_latency_seconds_count":              1,
	})
	if lat := after.diff(before, "furrow_delivery_latency_seconds_sum"); lat < 10 || lat > 300 {
		t.Errorf("event-to-2xx latency %v s, want the two 5 s retry delays and a little more", lat)
	}

	// A webhook whose receiver rejects every trigger.fired event (400, never
	// retried) is disabled after five failed chains.
	reject := newReceiver(t)
	reject.setAnswer(func(string, int) int { return 400 })
	bad := e.createWebhook(t, map[string]any{"url": reject.URL(), "event_types": []string{"trigger.fired"}})
	before = scrape(t, e.f.MetricsURL)
	for range 5 {
		postEvent(t, e, "trigger.fired")
		reject.next(t, 30*time.Second)
	}
	waitFor(t, 60*time.Second, func() bool { return !e.webhook(t, bad.ID).Enabled })
	after = eventually(t, e.f.MetricsURL, func(m metrics) bool {
		return m.diff(before, "furrow_webhooks_disabled_total") >= 1
	})
	after.expectDiff(t, before, map[string]float64{
		"furrow_dispatch_workflows_started_total":          5,
		`furrow_delivery_attempts_total{result="failed"}`:  5,
		`furrow_delivery_chains_total{outcome="failed"}`:   5,
		"furrow_webhooks_disabled_total":                   1,
		`furrow_delivery_attempts_total{result="skipped"}`: 0,
	})

	// A chain whose webhook is deleted between its attempts is skipped.
	gone := newReceiver(t)
	gone.setAnswer(func(string, int) int { return 503 })
	doomed := e.createWebhook(t, map[string]any{"url": gone.URL(), "event_types": []string{"recommendation.created"}})
	before = scrape(t, e.f.MetricsURL)
	postEvent(t, e, "recommendation.created")
	gone.next(t, 30*time.Second)
	expect(t, do(t, nil, "DELETE", e.f.URL+"/api/farms/"+e.fx.FarmID+"/webhooks/"+doomed.ID, nil, bearer(e.fx.Token)...), 204, "")
	after = eventually(t, e.f.MetricsURL, func(m metrics) bool {
		return m.diff(before, `furrow_delivery_chains_total{outcome="skipped"}`) >= 1
	})
	after.expectDiff(t, before, map[string]float64{
		`furrow_delivery_attempts_total{result="retry"}`:   1,
		`furrow_delivery_attempts_total{result="skipped"}`: 1,
		`furrow_delivery_chains_total{outcome="skipped"}`:  1,
		"furrow_delivery_attempt_duration_seconds_count":   1,
	})

	// Devices fall silent and are marked offline: the counter equals the
	// device.offline events stored.
	waitFor(t, 60*time.Second, func() bool {
		m := scrape(t, e.f.MetricsURL)
		n := countEvents(t, e, "device.offline")
		return n >= 2 && m.value("furrow_devices_offline_total") == float64(n) &&
			countEvents(t, e, "device.offline") == n
	})

	final := scrape(t, e.f.MetricsURL)
	if v := final.value("furrow_outbox_pending"); v != 0 {
		t.Errorf("outbox pending %v after everything was dispatched", v)
	}
	if v := final.value("furrow_outbox_oldest_pending_seconds"); v != 0 {
		t.Errorf("outbox oldest %v s with nothing pending", v)
	}
	if final.sum("temporal_workflow_task_schedule_to_start_latency_seconds_count") < 1 {
		t.Error("the Temporal SDK's workflow task schedule-to-start did not move")
	}
	assertDashboardSeriesExported(t, final)
}

// assertDashboardSeriesExported checks every series of the dashboard and
// the alert rules against what the running binary serves.
func assertDashboardSeriesExported(t *testing.T, m metrics) {
	t.Helper()
	names, err := obscheck.SeriesNames("../deploy/observability")
	if err != nil {
		t.Fatal(err)
	}
	families := map[string]bool{}
	for name := range m {
		families[name] = true
	}
	for _, n := range names {
		if !obscheck.Exported(n, families) {
			t.Errorf("the dashboard or the alert rules use %s, which furrow does not export", n)
		}
	}
}

func postEvent(t *testing.T, e *devEnv, typ string) {
	t.Helper()
	r := do(t, nil, "POST", e.f.URL+"/api/farms/"+e.fx.FarmID+"/events", map[string]any{"type": typ, "data": map[string]any{}}, bearer(e.fx.Token)...)
	expect(t, r, 201, "")
}

func countEvents(t *testing.T, e *devEnv, typ string) int {
	t.Helper()
	r := do(t, nil, "GET", e.f.URL+"/api/farms/"+e.fx.FarmID+"/events?limit=100&type="+typ, nil, bearer(e.fx.Token)...)
	expect(t, r, 200, "")
	var evs []struct{ ID string }
	r.JSON(t, &evs)
	return len(evs)
}

// metrics is one scrape, by family name.
type metrics map[string]*dto.MetricFamily

func scrape(t *testing.T, url string) metrics {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("scrape %s: %v", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("scrape %s: %d", url, resp.StatusCode)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("scrape %s: %v", url, err)
	}
	return fams
}

// eventually scrapes until ok holds (the workers record asynchronously),
// then scrapes once more after a pause, so that nothing still in flight is
// missed by the exact comparisons that follow.
func eventually(t *testing.T, url string, ok func(metrics) bool) metrics {
	t.Helper()
	waitFor(t, 60*time.Second, func() bool { return ok(scrape(t, url)) })
	time.Sleep(time.Second)
	return scrape(t, url)
}

// value returns one series; key is a name with optional {labels}, and a
// histogram's name may end in _count or _sum. A missing series is 0.
func (m metrics) value(key string) float64 {
	name, want := splitKey(key)
	base, part := name, ""
	if _, ok := m[name]; !ok {
		for _, s := range []string{"_count", "_sum"} {
			if b, ok := strings.CutSuffix(name, s); ok {
				base, part = b, s
			}
		}
	}
	fam, ok := m[base]
	if !ok {
		return 0
	}
	for _, s := range fam.GetMetric() {
		if !matches(s, want) {
			continue
		}
		switch {
		case part == "_count" && s.Histogram != nil:
			return float64(s.Histogram.GetSampleCount())
		case part == "_sum" && s.Histogram != nil:
			return s.Histogram.GetSampleSum()
		case s.Counter != nil:
			return s.Counter.GetValue()
		case s.Gauge != nil:
			return s.Gauge.GetValue()
		case s.Untyped != nil:
			return s.Untyped.GetValue()
		}
	}
	return 0
}

// sum adds a histogram's _count or a counter over all its series.
func (m metrics) sum(name string) float64 {
	base := strings.TrimSuffix(name, "_count")
	var total float64
	for _, s := range m[base].GetMetric() {
		if s.Histogram != nil {
			total += float64(s.Histogram.GetSampleCount())
		} else if s.Counter != nil {
			total += s.Counter.GetValue()
		}
	}
	return total
}

func (m metrics) diff(before metrics, key string) float64 { return m.value(key) - before.value(key) }

func (m metrics) expectDiff(t *testing.T, before metrics, want map[string]float64) {
	t.Helper()
	for key, w := range want {
		if got := m.diff(before, key); got != w {
			t.Errorf("%s moved by %v, want %v", key, got, w)
		}
	}
}

// splitKey splits `name{a="x",b="y"}` into name and its labels.
func splitKey(key string) (string, map[string]string) {
	name, rest, ok := strings.Cut(key, "{")
	labels := map[string]string{}
	if !ok {
		return name, labels
	}
	for _, kv := range strings.Split(strings.TrimSuffix(rest, "}"), ",") {
		k, v, _ := strings.Cut(kv, "=")
		labels[k] = strings.Trim(v, `"`)
	}
	return name, labels
}

func matches(s *dto.Metric, want map[string]string) bool {
	have := map[string]string{}
	for _, l := range s.GetLabel() {
		have[l.GetName()] = l.GetValue()
	}
	for k, v := range want {
		if have[k] != v {
			return false
		}
	}
	return true
}
