package main

import (
	"context"
	"log/slog"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/interceptor"

	"github.com/furrowhq/furrow/telemetry"
)

// observability is what dev, serve and worker wire into their parts:
// Furrow's metrics and the Temporal SDK's, both nil when
// FURROW_METRICS_ADDR is off (recording then costs nothing).
type observability struct {
	metrics  *telemetry.Metrics
	temporal client.MetricsHandler
	// tracing is nil unless OTEL_EXPORTER_OTLP_ENDPOINT is set, and
	// interceptors then carry it through Temporal.
	tracing      *telemetry.Tracing
	interceptors []interceptor.ClientInterceptor
	// stopMetrics shuts the /metrics listener down; nil when metrics are
	// off.
	stopMetrics func()
}

// startTracing turns OTLP tracing on when the configuration asks for it.
func (o *observability) startTracing(ctx context.Context, cfg Config, log *slog.Logger) error {
	if !cfg.Tracing {
		return nil
	}
	t, err := telemetry.NewOTLPTracing(ctx, cfg.TraceProtocol)
	if err != nil {
		return err
	}
	log.Info("tracing on: spans are exported over OTLP", "protocol", or(cfg.TraceProtocol, "http/protobuf"))
	return o.withTracing(t)
}

// stop flushes the spans still buffered, within a few seconds, and shuts
// the /metrics listener down. It is called once the command's drain has
// returned, so that what the drain counts can still be scraped.
func (o *observability) stop() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = o.tracing.Shutdown(ctx)
	if o.stopMetrics != nil {
		o.stopMetrics()
	}
}

// withTracing sets t as the tracing of o and of its Temporal client.
func (o *observability) withTracing(t *telemetry.Tracing) error {
	i, err := t.Temporal()
	if err != nil {
		return err
	}
	o.tracing, o.interceptors = t, []interceptor.ClientInterceptor{i}
	return nil
}

// startObservability creates the metrics and binds their listener, which
// serves GET /metrics until stop: not until ctx ends, since ctx ends with
// the signal that starts the drain, and the drain's requests and
// activities are counted too. A listener that cannot bind is an error: an
// operator who asked for metrics must not silently lose them.
func startObservability(ctx context.Context, cfg Config, log *slog.Logger) (*observability, error) {
	o := &observability{}
	if err := o.startTracing(ctx, cfg, log); err != nil {
		return nil, err
	}
	if cfg.MetricsAddr == "" {
		log.Info("metrics are off (FURROW_METRICS_ADDR=off)")
		return o, nil
	}
	m := telemetry.New()
	th, err := m.TemporalMetrics()
	if err != nil {
		return nil, err
	}
	srv, err := m.Listen(cfg.MetricsAddr)
	if err != nil {
		return nil, err
	}
	log.Info("metrics listening", "addr", srv.Addr(), "path", "/metrics")
	o.metrics, o.temporal, o.stopMetrics = m, th, runMetrics(srv, log)
	return o, nil
}

// runMetrics serves srv until the function it returns is called; that
// function returns once the listener is shut down (telemetry.Server.Run
// bounds the shutdown).
func runMetrics(srv *telemetry.Server, log *slog.Logger) func() {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Run(ctx); err != nil {
			log.Error("metrics listener stopped", "err", err)
		}
	}()
	return func() {
		cancel()
		<-done
	}
}
