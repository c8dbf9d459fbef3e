package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"

	"github.com/furrowhq/furrow"
	"github.com/furrowhq/furrow/activities"
	"github.com/furrowhq/furrow/api"
	"github.com/furrowhq/furrow/safehttp"
	"github.com/furrowhq/furrow/store"
	"github.com/furrowhq/furrow/temporal"
)

var errNoTemporal = errors.New("FURROW_TEMPORAL_ADDRESS is required (host:port of the Temporal frontend); `furrow dev` embeds one")

func newControl(tc client.Client, schedule []time.Duration) *temporal.Control {
	c := temporal.NewControl(tc)
	c.Schedule = schedule
	return c
}

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
	build, err := workerBuilder(cfg, obs, log, tc, s.db, true)
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

// runWorker runs the Temporal worker of the delivery engine.
func runWorker(ctx context.Context, cfg Config, obs *observability, log *slog.Logger) error {
	if cfg.TemporalAddress == "" {
		return errNoTemporal
	}
	tc, err := temporal.Dial(ctx, temporalOptions(cfg, obs, log))
	if err != nil {
		return err
	}
	defer tc.Close()
	db, err := store.Open(ctx, cfg.DatabaseURL, storeOptions(cfg, log))
	if err != nil {
		return err
	}
	defer db.Close()
	watchSecrets(obs.metrics, db, log)
	defer serveProbes(cfg.HTTPAddr, api.Probes(db, log), log)()
	w, err := newWorker(cfg, obs, log, tc, db)
	if err != nil {
		return err
	}
	if err := startWorker(ctx, cfg, tc, w); err != nil {
		return err
	}
	log.Info("worker started", "temporal", cfg.TemporalAddress, "namespace", cfg.TemporalNamespace)
	<-ctx.Done()
	w.Stop()
	return nil
}

// startWorker starts w and makes sure the maintenance schedules exist with
// the configured settings.
func startWorker(ctx context.Context, cfg Config, tc client.Client, w worker.Worker) error {
	if err := w.Start(); err != nil {
		return fmt.Errorf("start worker: %w", err)
	}
	err := temporal.EnsureSchedules(ctx, tc, temporal.ScheduleOptions{
		SweepEvery: cfg.DeviceSweepEvery, OfflineAfter: cfg.DeviceOfflineAfter, ReadingsRetention: cfg.ReadingsRetention})
	if err != nil {
		w.Stop()
		return err
	}
	return nil
}

// newWorker builds the worker with the guarded webhook HTTP client.
func newWorker(cfg Config, obs *observability, log *slog.Logger, tc client.Client, db *store.DB) (worker.Worker, error) {
	build, err := workerBuilder(cfg, obs, log, tc, db, false)
	if err != nil {
		return nil, err
	}
	return build(), nil
}

// workerBuilder returns a function building workers with the guarded
// webhook HTTP client; localOnly leaves regular activities (retries,
// maintenance) to other workers.
func workerBuilder(cfg Config, obs *observability, log *slog.Logger, tc client.Client, db *store.DB, localOnly bool) (func() worker.Worker, error) {
	hc, err := safehttp.New(safehttp.Options{AllowPrivate: cfg.WebhookAllowPrivate, CAFile: cfg.WebhookCAFile})
	if err != nil {
		return nil, fmt.Errorf("webhook HTTP client: %w", err)
	}
	acts := &activities.Activities{
		Webhooks: db, Events: db, Devices: db, Retention: db, HTTP: hc, Clock: furrow.SystemClock{}, Logger: log,
		Reporter: newControl(tc, cfg.RetrySchedule), Metrics: obs.metrics,
	}
	opts := temporal.WorkerOptions{StopTimeout: cfg.ShutdownTimeout, LocalActivitiesOnly: localOnly}
	return func() worker.Worker { return temporal.NewWorker(tc, acts, opts) }, nil
}

// serveAll runs s and the worker w until ctx ends (furrow dev).
func serveAll(ctx context.Context, s *server, tc client.Client, w worker.Worker) error {
	if err := startWorker(ctx, s.cfg, tc, w); err != nil {
		s.close()
		return err
	}
	s.stopWorker = w.Stop
	return s.run(ctx)
}
