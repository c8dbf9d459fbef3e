package main

import (
	"context"
	"log/slog"

	"go.temporal.io/sdk/client"

	"github.com/furrowhq/furrow/telemetry"
)

// observability is what dev, serve and worker wire into their parts:
// Furrow's metrics and the Temporal SDK's, both nil when
// FURROW_METRICS_ADDR is off (recording then costs nothing).
type observability struct {
	metrics  *telemetry.Metrics
	temporal client.MetricsHandler
}

// startObservability creates the metrics and binds their listener, which
// serves GET /metrics until ctx ends. A listener that cannot bind is an
// error: an operator who asked for metrics must not silently lose them.
func startObservability(ctx context.Context, cfg Config, log *slog.Logger) (*observability, error) {
	o := &observability{}
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
	go func() {
		if err := srv.Run(ctx); err != nil {
			log.Error("metrics listener stopped", "err", err)
		}
	}()
	o.metrics, o.temporal = m, th
	return o, nil
}
