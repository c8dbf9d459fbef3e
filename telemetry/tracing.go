package telemetry

import (
	"context"
	"fmt"
	"net/http"

	"github.com/go-chi/chi/v5/middleware"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"
	"go.temporal.io/sdk/contrib/opentelemetry"
	"go.temporal.io/sdk/interceptor"

	"github.com/furrowhq/furrow"
)

// ServiceName is the service.name of Furrow's spans.
const ServiceName = "furrow"

// propagator carries trace context in the W3C traceparent form, across
// HTTP and through the outbox.
var propagator = propagation.TraceContext{}

// Tracing follows one reading from the POST through the store, the
// dispatcher, the workflow and each delivery attempt. A nil *Tracing is
// tracing off: every method then does nothing and costs nothing.
type Tracing struct {
	provider *sdktrace.TracerProvider
	tracer   trace.Tracer
}

// NewTracing returns tracing that hands finished spans to exp in batches;
// batch false hands each span at once (tests).
func NewTracing(exp sdktrace.SpanExporter, batch bool) (*Tracing, error) {
	res, err := resource.Merge(resource.Default(), resource.NewWithAttributes(semconv.SchemaURL, semconv.ServiceName(ServiceName)))
	if err != nil {
		return nil, fmt.Errorf("trace resource: %w", err)
	}
	opt := sdktrace.WithBatcher(exp)
	if !batch {
		opt = sdktrace.WithSyncer(exp)
	}
	p := sdktrace.NewTracerProvider(opt, sdktrace.WithResource(res))
	return &Tracing{provider: p, tracer: p.Tracer("github.com/furrowhq/furrow")}, nil
}

// CheckOTLPProtocol says whether NewOTLPTracing speaks protocol, a value of
// OTEL_EXPORTER_OTLP_(TRACES_)PROTOCOL: "grpc", "http/protobuf" or ""
// (http/protobuf). OTLP's http/json is not one: the Go exporter has no
// JSON encoding.
func CheckOTLPProtocol(protocol string) error {
	switch protocol {
	case "", "grpc", "http/protobuf":
		return nil
	}
	return fmt.Errorf("%q is not a protocol Furrow's exporter speaks: grpc or http/protobuf (the default)", protocol)
}

// NewOTLPTracing exports spans over OTLP, configured by the standard
// OTEL_EXPORTER_OTLP_* variables that the exporter reads itself; protocol
// is OTEL_EXPORTER_OTLP_PROTOCOL, as CheckOTLPProtocol takes it.
func NewOTLPTracing(ctx context.Context, protocol string) (*Tracing, error) {
	if err := CheckOTLPProtocol(protocol); err != nil {
		return nil, err
	}
	var exp sdktrace.SpanExporter
	var err error
	if protocol == "grpc" {
		exp, err = otlptracegrpc.New(ctx)
	} else {
		exp, err = otlptracehttp.New(ctx)
	}
	if err != nil {
		return nil, fmt.Errorf("OTLP trace exporter: %w", err)
	}
	return NewTracing(exp, true)
}

// Shutdown exports the spans still buffered, within ctx.
func (t *Tracing) Shutdown(ctx context.Context) error {
	if t == nil {
		return nil
	}
	return t.provider.Shutdown(ctx)
}

// Tracer returns the tracer of Furrow's own spans; nil when off.
func (t *Tracing) Tracer() trace.Tracer {
	if t == nil {
		return nil
	}
	return t.tracer
}

// Temporal returns the interceptor to set on the Temporal client: it starts
// spans for workflow starts, workflows and activities, and carries the
// trace context in Temporal headers so that it crosses from the starter to
// the workers. Nil when off.
func (t *Tracing) Temporal() (interceptor.ClientInterceptor, error) {
	if t == nil {
		return nil, nil
	}
	return opentelemetry.NewTracingInterceptor(opentelemetry.TracerOptions{
		Tracer:            t.provider.Tracer("temporal-sdk-go"),
		TextMapPropagator: propagator,
	})
}

// HTTP wraps a chi router with one server span per request, named by its
// method and the route pattern routing found. An incoming traceparent is
// continued. A nil t returns next unchanged.
func (t *Tracing) HTTP(next http.Handler) http.Handler {
	if t == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := propagator.Extract(r.Context(), propagation.HeaderCarrier(r.Header))
		method := methodLabel(r.Method)
		ctx, span := t.tracer.Start(ctx, method, trace.WithSpanKind(trace.SpanKindServer))
		rctx := routeContext(&ctx)
		ww := middleware.NewWrapResponseWriter(w, r.ProtoMajor)
		returned := false
		// Deferred, so that the span of a request whose handler panicked
		// keeps its route and what it answered.
		defer func() {
			endHTTPSpan(span, method, routeOf(rctx), ww, returned)
		}()
		next.ServeHTTP(ww, r.WithContext(ctx))
		returned = true
	})
}

// endHTTPSpan names the span of a request by its bounded method and route
// (a client may send any method name), records its answer and ends it.
func endHTTPSpan(span trace.Span, method, route string, ww middleware.WrapResponseWriter, returned bool) {
	defer span.End()
	span.SetName(method + " " + route)
	span.SetAttributes(semconv.HTTPRequestMethodKey.String(method), semconv.HTTPRoute(route))
	code, ok := answerOf(ww, returned)
	if !ok {
		span.SetStatus(codes.Error, "no answer: the handler panicked before writing")
		return
	}
	span.SetAttributes(semconv.HTTPResponseStatusCode(code))
	if code >= 500 {
		span.SetStatus(codes.Error, http.StatusText(code))
	}
}

// Span starts a span named name as a child of ctx's; with tracing off it
// returns ctx and a span that does nothing.
func (t *Tracing) Span(ctx context.Context, name string, attrs ...attribute.KeyValue) (context.Context, trace.Span) {
	if t == nil {
		return ctx, trace.SpanFromContext(ctx)
	}
	return t.tracer.Start(ctx, name, trace.WithAttributes(attrs...))
}

// TraceParent returns ctx's span as a W3C traceparent value, or "" when
// ctx carries no sampled span (always so with tracing off). The store
// keeps it with an event so the dispatcher can continue the trace.
func TraceParent(ctx context.Context) string {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return ""
	}
	c := propagation.MapCarrier{}
	propagator.Inject(ctx, c)
	return c["traceparent"]
}

// WithTraceParent returns ctx continuing the trace of a traceparent value
// taken by TraceParent; "" or a malformed value returns ctx unchanged.
func WithTraceParent(ctx context.Context, traceParent string) context.Context {
	if traceParent == "" {
		return ctx
	}
	return propagator.Extract(ctx, propagation.MapCarrier{"traceparent": traceParent})
}

// Readings wraps rs so that storing a reading is a span of the request's
// trace. A nil t returns rs unchanged.
func (t *Tracing) Readings(rs furrow.ReadingService) furrow.ReadingService {
	if t == nil {
		return rs
	}
	return tracedReadings{rs, t}
}

type tracedReadings struct {
	furrow.ReadingService
	t *Tracing
}

func (r tracedReadings) CreateReading(ctx context.Context, in furrow.Reading, keyHash *furrow.SecretHash) (furrow.Reading, furrow.OutboxEvent, error) {
	ctx, span := r.t.tracer.Start(ctx, "store.CreateReading")
	defer span.End()
	out, ev, err := r.ReadingService.CreateReading(ctx, in, keyHash)
	endStore(span, ev, err)
	return out, ev, err
}

func (r tracedReadings) CreateReadingOnce(ctx context.Context, in furrow.Reading, keyHash *furrow.SecretHash, once furrow.Idempotency) (furrow.Reading, furrow.OutboxEvent, bool, error) {
	ctx, span := r.t.tracer.Start(ctx, "store.CreateReadingOnce")
	defer span.End()
	out, ev, replayed, err := r.ReadingService.CreateReadingOnce(ctx, in, keyHash, once)
	endStore(span, ev, err)
	span.SetAttributes(attribute.Bool("furrow.replayed", replayed))
	return out, ev, replayed, err
}

func endStore(span trace.Span, ev furrow.OutboxEvent, err error) {
	if err != nil {
		span.SetStatus(codes.Error, furrow.ErrorCode(err))
		return
	}
	span.SetAttributes(attribute.String("furrow.event_id", ev.ID))
}
