package main

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/furrowhq/furrow/temporal"
)

var errNoTemporal = errors.New("FURROW_TEMPORAL_ADDRESS is required (host:port of the Temporal frontend); `furrow dev` embeds one")

// runServe runs the API and the dispatcher, and a worker for delivery
// workflow tasks and first attempts, so that the dispatcher's starts are
// eager and the first attempt runs at once in this process (local
// activity); retries and maintenance are left to `furrow worker`. Temporal
// is dialled lazily so that readings are accepted, and kept in the outbox,
// while it is down.
func runServe(ctx context.Context, cfg Config, obs *observability, log *slog.Logger) error {
	if cfg.TemporalAddress == "" {
		return errNoTemporal
	}
	paceGC()
	tc, err := temporal.DialLazy(temporalOptions(cfg, obs, log))
	if err != nil {
		return err
	}
	defer tc.Close()
	s, err := newServer(ctx, cfg, obs, log, tc)
	if err != nil {
		return err
	}
	build, err := workerBuilder(cfg, obs, log, tc, s.db, s.bus, true)
	if err != nil {
		s.close()
		return err
	}
	s.stopWorker = temporal.StartRetrying(build, 30*time.Second, log).Stop
	return s.run(ctx)
}

// temporalOptions says which Temporal the configuration names.
func temporalOptions(cfg Config, obs *observability, log *slog.Logger) temporal.Options {
	return temporal.Options{
		Address: cfg.TemporalAddress, Namespace: cfg.TemporalNamespace, Logger: log,
		Metrics: obs.temporal, Interceptors: obs.interceptors, Gzip: cfg.TemporalGzip,
	}
}
