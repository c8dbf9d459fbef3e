package telemetry

import (
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"

	dto "github.com/prometheus/client_model/go"
)

// TestContract holds the metrics to the table of docs/operating/observability.md:
// every name, its type and its labels.
func TestContract(t *testing.T) {
	m := New()
	m.WatchFailOpen(func() int64 { return 0 })
	m.WatchLive(LiveStats{Published: func() uint64 { return 0 }, Dropped: func() uint64 { return 0 }, Connections: func() int { return 0 }, SlowDisconnects: func() uint64 { return 0 }})
	m.WatchOutbox(backlog{}, nil)
	m.WatchSecrets(&secretStates{}, false, nil)
	m.HTTP(http.NotFoundHandler()).ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/", nil))
	want := map[string]struct {
		typ    dto.MetricType
		labels []string
	}{
		"furrow_http_requests_total":               {dto.MetricType_COUNTER, []string{"code", "method", "route"}},
		"furrow_http_request_duration_seconds":     {dto.MetricType_HISTOGRAM, []string{"method", "route"}},
		"furrow_readings_stored_total":             {dto.MetricType_COUNTER, nil},
		"furrow_ingest_batch_size":                 {dto.MetricType_HISTOGRAM, nil},
		"furrow_ratelimit_rejected_total":          {dto.MetricType_COUNTER, nil},
		"furrow_ratelimit_failopen_total":          {dto.MetricType_COUNTER, nil},
		"furrow_live_published_total":              {dto.MetricType_COUNTER, nil},
		"furrow_live_dropped_total":                {dto.MetricType_COUNTER, nil},
		"furrow_live_connections":                  {dto.MetricType_GAUGE, nil},
		"furrow_live_slow_disconnects_total":       {dto.MetricType_COUNTER, nil},
		"furrow_outbox_pending":                    {dto.MetricType_GAUGE, nil},
		"furrow_outbox_oldest_pending_seconds":     {dto.MetricType_GAUGE, nil},
		"furrow_dispatch_workflows_started_total":  {dto.MetricType_COUNTER, nil},
		"furrow_delivery_attempts_total":           {dto.MetricType_COUNTER, []string{"result"}},
		"furrow_delivery_attempt_duration_seconds": {dto.MetricType_HISTOGRAM, nil},
		"furrow_delivery_chains_total":             {dto.MetricType_COUNTER, []string{"outcome"}},
		"furrow_delivery_latency_seconds":          {dto.MetricType_HISTOGRAM, nil},
		"furrow_webhooks_disabled_total":           {dto.MetricType_COUNTER, nil},
		"furrow_webhook_lifecycle_events_total":    {dto.MetricType_COUNTER, []string{"type"}},
		"furrow_devices_offline_total":             {dto.MetricType_COUNTER, nil},
		"furrow_dispatch_farm_failures_total":      {dto.MetricType_COUNTER, []string{"cause"}},
		"furrow_dispatch_leases_released_total":    {dto.MetricType_COUNTER, nil},
		"furrow_dispatch_held_total":               {dto.MetricType_COUNTER, nil},
		"furrow_dispatch_backoff_seconds":          {dto.MetricType_GAUGE, nil},
		"furrow_webhook_secrets":                   {dto.MetricType_GAUGE, []string{"state"}},
		"furrow_webhook_secrets_sealing":           {dto.MetricType_GAUGE, nil},
		"furrow_webhook_secret_rotations_total":    {dto.MetricType_COUNTER, nil},
		"furrow_webhook_test_deliveries_total":     {dto.MetricType_COUNTER, []string{"outcome"}},
		"furrow_delivery_throttled_total":          {dto.MetricType_COUNTER, nil},
	}
	mfs, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, mf := range mfs {
		w, ok := want[mf.GetName()]
		if !ok {
			continue
		}
		seen[mf.GetName()] = true
		if mf.GetType() != w.typ {
			t.Errorf("%s is a %v, want %v", mf.GetName(), mf.GetType(), w.typ)
		}
		for _, s := range mf.GetMetric() {
			var labels []string
			for _, l := range s.GetLabel() {
				labels = append(labels, l.GetName())
			}
			if !slices.Equal(labels, w.labels) {
				t.Errorf("%s has labels %v, want %v", mf.GetName(), labels, w.labels)
			}
		}
	}
	for name := range want {
		if !seen[name] {
			t.Errorf("%s is not exported", name)
		}
	}
	var results []string
	for _, s := range metricFamily(t, mfs, "furrow_delivery_attempts_total").GetMetric() {
		results = append(results, s.GetLabel()[0].GetValue())
	}
	slices.Sort(results)
	if !slices.Equal(results, []string{"delivered", "failed", "retry", "skipped"}) {
		t.Errorf("attempt results %v", results)
	}
}

func metricFamily(t *testing.T, mfs []*dto.MetricFamily, name string) *dto.MetricFamily {
	t.Helper()
	for _, mf := range mfs {
		if mf.GetName() == name {
			return mf
		}
	}
	t.Fatalf("%s missing", name)
	return nil
}
