package telemetry

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/go-chi/chi/v5"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

func TestTracingOffCostsNothing(t *testing.T) {
	var tr *Tracing
	h := http.NotFoundHandler()
	if tr.Readings(nil) != nil || tr.Tracer() != nil || tr.Shutdown(context.Background()) != nil {
		t.Error("nil tracing must do nothing")
	}
	if i, err := tr.Temporal(); i != nil || err != nil {
		t.Errorf("Temporal() = %v, %v", i, err)
	}
	if TraceParent(context.Background()) != "" {
		t.Error("a context without a span has no traceparent")
	}
	if ctx := context.Background(); WithTraceParent(ctx, "") != ctx || WithTraceParent(ctx, "garbage").Value(struct{}{}) != nil {
		t.Error("WithTraceParent must leave ctx alone without a traceparent")
	}
	_ = tr.HTTP(h)
}

// The exporter is made for the protocols it speaks only: another, a typo
// say, is an error rather than http/protobuf without a word.
func TestOTLPTracingTakesOnlyItsProtocols(t *testing.T) {
	for _, p := range []string{"", "grpc", "http/protobuf"} {
		if err := CheckOTLPProtocol(p); err != nil {
			t.Errorf("%q: %v", p, err)
		}
	}
	for _, p := range []string{"gprc", "http/json", "HTTP/PROTOBUF", "http"} {
		if err := CheckOTLPProtocol(p); err == nil {
			t.Errorf("%q accepted", p)
		}
		if tr, err := NewOTLPTracing(context.Background(), p); err == nil {
			_ = tr.Shutdown(context.Background())
			t.Errorf("NewOTLPTracing(%q) made an exporter", p)
		}
	}
}

func TestTraceParentCarriesTheTraceThroughTheOutbox(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tr, err := NewTracing(exp, false)
	if err != nil {
		t.Fatal(err)
	}
	r := chi.NewRouter()
	var stored string
	r.Post("/api/farms/{farm}/events", func(w http.ResponseWriter, r *http.Request) {
		stored = TraceParent(r.Context())
	})
	tr.HTTP(r).ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("POST", "/api/farms/f1/events", nil))
	if stored == "" {
		t.Fatal("no traceparent inside the request")
	}
	ctx, span := tr.Span(WithTraceParent(context.Background(), stored), "dispatch")
	span.End()
	spans := exp.GetSpans()
	if len(spans) != 2 || spans[0].Name != "POST /api/farms/{farm}/events" {
		t.Fatalf("spans %v", spanNames(spans))
	}
	if trace.SpanContextFromContext(ctx).TraceID() != spans[0].SpanContext.TraceID() {
		t.Error("the span made from the stored traceparent is not in the request's trace")
	}
}

func spanNames(spans tracetest.SpanStubs) []string {
	var out []string
	for _, s := range spans {
		out = append(out, s.Name)
	}
	return out
}
