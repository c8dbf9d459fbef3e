package telemetry

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/furrowhq/furrow"
)

func TestNilMetricsRecordNothingAndWrapNothing(t *testing.T) {
	var m *Metrics
	m.IngestBatch(3, 2)
	m.RateLimited()
	m.WorkflowStarted()
	m.DeliveryAttempt(furrow.OutcomeDelivered, time.Second)
	m.DeliveryChain(furrow.OutcomeFailed)
	m.Delivered(time.Second)
	m.WebhookDisabled()
	m.WebhookLifecycleEvent(furrow.EventWebhookEnabled)
	m.DevicesOffline(2)
	m.WatchFailOpen(func() int64 { return 0 })
	m.WatchLive(LiveStats{})
	m.WatchOutbox(nil, nil)
	h := http.NotFoundHandler()
	if got := m.HTTP(h); got == nil || m.Registry() != nil {
		t.Fatal("nil metrics must hand back the handler and no registry")
	}
	l := furrow.RateLimiter(nil)
	if m.Limiter(l) != nil {
		t.Error("nil metrics must not wrap")
	}
	if th, err := m.TemporalMetrics(); th != nil || err != nil {
		t.Errorf("TemporalMetrics on nil = %v, %v", th, err)
	}
}

func TestHTTPLabelsByRoutePattern(t *testing.T) {
	m := New()
	r := chi.NewRouter()
	r.Get("/healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") })
	r.Route("/api/farms", func(r chi.Router) {
		r.Post("/{farm}/devices", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusCreated) })
	})
	h := m.HTTP(r)
	for _, req := range []*http.Request{
		httptest.NewRequest("POST", "/api/farms/f1/devices", nil),
		httptest.NewRequest("POST", "/api/farms/f2/devices", nil),
		httptest.NewRequest("GET", "/healthz", nil),
		httptest.NewRequest("GET", "/no/such/path/123", nil),
		httptest.NewRequest("BREW", "/healthz", nil),
	} {
		h.ServeHTTP(httptest.NewRecorder(), req)
	}
	cases := []struct {
		route, method, code string
		want                float64
	}{
		{"/api/farms/{farm}/devices", "POST", "201", 2},
		{"/healthz", "GET", "200", 1},
		{"unmatched", "GET", "404", 1},
		{"unmatched", "OTHER", "405", 1},
	}
	for _, c := range cases {
		if got := testutil.ToFloat64(m.httpRequests.WithLabelValues(c.route, c.method, c.code)); got != c.want {
			t.Errorf("requests{%s %s %s} = %v, want %v", c.route, c.method, c.code, got, c.want)
		}
	}
	if n := testutil.CollectAndCount(m.httpRequests); n != len(cases) {
		t.Errorf("%d request series, want %d (raw paths must not become labels)", n, len(cases))
	}
	if n := testutil.CollectAndCount(m.httpDuration); n != 4 {
		t.Errorf("%d duration series, want 4", n)
	}
}

func TestHTTPCountsAbortedResponses(t *testing.T) {
	m := New()
	r := chi.NewRouter()
	r.Get("/api/farms/{farm}/devices", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "[")
		panic(http.ErrAbortHandler) // cut off after the status, as net/http allows
	})
	srv := httptest.NewServer(m.HTTP(r))
	defer srv.Close()
	resp, err := srv.Client().Get(srv.URL + "/api/farms/f1/devices")
	if err == nil {
		_, err = io.ReadAll(resp.Body)
		resp.Body.Close()
	}
	if err == nil {
		t.Fatal("the response was not cut off")
	}
	deadline := time.Now().Add(5 * time.Second)
	for testutil.ToFloat64(m.httpRequests.WithLabelValues("/api/farms/{farm}/devices", "GET", "200")) != 1 {
		if time.Now().After(deadline) {
			t.Fatal("a response cut off after its status is not counted")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

type fixedLimiter struct{ allowed bool }

func (f fixedLimiter) Allow(context.Context, string) (furrow.RateDecision, error) {
	return furrow.RateDecision{Allowed: f.allowed}, nil
}

func TestLimiterCountsRejections(t *testing.T) {
	m := New()
	_, _ = m.Limiter(fixedLimiter{true}).Allow(context.Background(), "k")
	_, _ = m.Limiter(fixedLimiter{false}).Allow(context.Background(), "k")
	_, _ = m.Limiter(fixedLimiter{false}).Allow(context.Background(), "k")
	if got := testutil.ToFloat64(m.rateRejected); got != 2 {
		t.Errorf("rejected = %v, want 2", got)
	}
}

type backlog struct {
	n, oldest int64
	err       error
}

func (b backlog) OutboxBacklog(context.Context) (int64, int64, error) { return b.n, b.oldest, b.err }

func TestOutboxGauges(t *testing.T) {
	m := New()
	m.WatchOutbox(backlog{n: 3, oldest: time.Now().Add(-90 * time.Second).UnixMilli()}, nil)
	body := scrape(t, m)
	if !strings.Contains(body, "furrow_outbox_pending 3\n") {
		t.Errorf("pending missing:\n%s", grep(body, "furrow_outbox"))
	}
	if v := value(t, body, "furrow_outbox_oldest_pending_seconds"); v < 89 || v > 200 {
		t.Errorf("oldest = %v, want about 90", v)
	}

	empty := New()
	empty.WatchOutbox(backlog{}, nil)
	if v := value(t, scrape(t, empty), "furrow_outbox_oldest_pending_seconds"); v != 0 {
		t.Errorf("oldest of an empty outbox = %v, want 0", v)
	}

	broken := New()
	broken.WatchOutbox(backlog{err: errors.New("down")}, nil)
	if body := scrape(t, broken); strings.Contains(body, "furrow_outbox_pending ") {
		t.Errorf("a failed read must leave the gauges out, got:\n%s", grep(body, "furrow_outbox"))
	}
}

func TestLiveAndFailOpenFuncs(t *testing.T) {
	m := New()
	m.WatchFailOpen(func() int64 { return 4 })
	m.WatchLive(LiveStats{
		Published: func() uint64 { return 10 }, Dropped: func() uint64 { return 2 }, Connections: func() int { return 3 },
	})
	body := scrape(t, m)
	for name, want := range map[string]float64{
		"furrow_ratelimit_failopen_total": 4, "furrow_live_published_total": 10,
		"furrow_live_dropped_total": 2, "furrow_live_connections": 3,
	} {
		if v := value(t, body, name); v != want {
			t.Errorf("%s = %v, want %v", name, v, want)
		}
	}
}

func TestListenServesMetricsAndTemporalOnOneRegistry(t *testing.T) {
	m := New()
	th, err := m.TemporalMetrics()
	if err != nil {
		t.Fatal(err)
	}
	th.WithTags(map[string]string{"task_queue": "q"}).Timer("temporal_workflow_task_schedule_to_start_latency").Record(30 * time.Millisecond)
	th.Counter("temporal_request").Inc(2)
	m.IngestBatch(5, 4)
	srv, err := m.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}()
	resp, err := http.Get("http://" + srv.Addr() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	body := string(b)
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain") {
		t.Fatalf("GET /metrics = %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	for _, want := range []string{
		"furrow_readings_stored_total 4\n",
		"furrow_ingest_batch_size_count 1\n",
		`temporal_workflow_task_schedule_to_start_latency_seconds_bucket{task_queue="q",le="0.05"} 1`,
		"temporal_request_total 2\n",
		"go_goroutines ",
		"process_cpu_seconds_total ",
		`furrow_delivery_attempts_total{result="retry"} 0`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	if resp, err := http.Get("http://" + srv.Addr() + "/"); err != nil || resp.StatusCode != 404 {
		t.Errorf("GET / on the metrics listener = %v, %v; want 404", resp, err)
	}
}

func TestListenOnBusyAddressNamesTheSetting(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	_, err = New().Listen(ln.Addr().String())
	if err == nil || !strings.Contains(err.Error(), "FURROW_METRICS_ADDR") {
		t.Errorf("Listen on a busy address: %v", err)
	}
}

func scrape(t *testing.T, m *Metrics) string {
	t.Helper()
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if rec.Code != 200 {
		t.Fatalf("scrape: %d %s", rec.Code, rec.Body)
	}
	return rec.Body.String()
}
