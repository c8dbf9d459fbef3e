package telemetry

import (
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"

	"github.com/go-chi/chi/v5"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
)

// answerRouter routes a reading whose handler aborts before writing
// anything (its body cut off, as api.readBody does) and a probe whose
// handler returns without writing (net/http answers it 200).
func answerRouter() http.Handler {
	r := chi.NewRouter()
	r.Post("/api/metric-values", func(http.ResponseWriter, *http.Request) { panic(http.ErrAbortHandler) })
	r.Get("/healthz", func(http.ResponseWriter, *http.Request) {})
	return r
}

// serveAborting serves req with h and returns what it panicked with.
func serveAborting(h http.Handler, req *http.Request) (panicked any) {
	defer func() { panicked = recover() }()
	h.ServeHTTP(httptest.NewRecorder(), req)
	return nil
}

// A request aborted before anything was written got no answer: neither
// HTTP series counts it, and its panic still reaches net/http.
func TestHTTPLeavesOutRequestsAbortedBeforeAnswering(t *testing.T) {
	m := New()
	h := m.HTTP(answerRouter())
	if p := serveAborting(h, httptest.NewRequest("POST", "/api/metric-values", nil)); p != http.ErrAbortHandler {
		t.Fatalf("the handler's panic reached net/http as %v, want http.ErrAbortHandler", p)
	}
	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/healthz", nil))
	if got := testutil.ToFloat64(m.httpRequests.WithLabelValues("/healthz", "GET", "200")); got != 1 {
		t.Errorf("requests{/healthz GET 200} = %v, want 1 (returned without writing: net/http answers 200)", got)
	}
	if n := testutil.CollectAndCount(m.httpRequests); n != 1 {
		t.Errorf("%d request series, want 1: the aborted request got no answer to count", n)
	}
	if n := testutil.CollectAndCount(m.httpDuration); n != 1 {
		t.Errorf("%d duration series, want 1: the aborted request got no answer to time", n)
	}
}

// A request's span is named by its bounded method and its route, also
// when its handler panicked; it carries the status net/http answered, and
// none when there was no answer.
func TestHTTPSpanNamesAndAnswers(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tr, err := NewTracing(exp, false)
	if err != nil {
		t.Fatal(err)
	}
	h := tr.HTTP(answerRouter())
	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("SECRET-abc123", "/x", nil))
	if p := serveAborting(h, httptest.NewRequest("POST", "/api/metric-values", nil)); p != http.ErrAbortHandler {
		t.Fatalf("the handler's panic reached net/http as %v, want http.ErrAbortHandler", p)
	}
	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/healthz", nil))
	spans := exp.GetSpans()
	if len(spans) != 3 {
		t.Fatalf("spans %v, want 3", spanNames(spans))
	}
	cases := []struct {
		name, method, route string
		code                int64 // 0: no status code attribute
		status              codes.Code
	}{
		{"OTHER unmatched", "OTHER", "unmatched", 405, codes.Unset},
		{"POST /api/metric-values", "POST", "/api/metric-values", 0, codes.Error},
		{"GET /healthz", "GET", "/healthz", 200, codes.Unset},
	}
	for i, c := range cases {
		s := spans[i]
		attrs := attribute.NewSet(s.Attributes...)
		method, _ := attrs.Value(semconv.HTTPRequestMethodKey)
		route, _ := attrs.Value(semconv.HTTPRouteKey)
		code, _ := attrs.Value(semconv.HTTPResponseStatusCodeKey)
		if s.Name != c.name || method.AsString() != c.method || route.AsString() != c.route || code.AsInt64() != c.code || s.Status.Code != c.status {
			t.Errorf("span %d: %q method %q route %q code %d status %v; want %q %q %q %d %v",
				i, s.Name, method.AsString(), route.AsString(), code.AsInt64(), s.Status.Code, c.name, c.method, c.route, c.code, c.status)
		}
	}
}

// The latency histograms have bounds at the targets they are read
// against: ingest p99 under 10 ms and 15 ms, delivery p50 of a few ms.
func TestHistogramBoundsMeetTheTargets(t *testing.T) {
	m := New()
	m.HTTP(answerRouter()).ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/healthz", nil))
	m.Delivered(0)
	mfs, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string][]float64{
		"furrow_http_request_duration_seconds": {.0025, .005, .01, .015, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
		"furrow_delivery_latency_seconds":      {.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300, 900, 1800, 3600, 7200, 21600, 43200, 86400},
	} {
		var got []float64
		for _, b := range metricFamily(t, mfs, name).GetMetric()[0].GetHistogram().GetBucket() {
			got = append(got, b.GetUpperBound())
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s bounds %v, want %v", name, got, want)
		}
	}
}
