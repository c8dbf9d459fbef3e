package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"

	"github.com/furrowhq/furrow"
	"github.com/furrowhq/furrow/activities"
	"github.com/furrowhq/furrow/api"
	"github.com/furrowhq/furrow/api/ratelimit"
	"github.com/furrowhq/furrow/internal/redisclient"
	"github.com/furrowhq/furrow/live"
	"github.com/furrowhq/furrow/store"
	"github.com/furrowhq/furrow/telemetry"
	"github.com/furrowhq/furrow/temporal"
)

// The worker of the delivery engine is wired here once, for the three
// commands that run one: `furrow worker` alone, `furrow serve` beside the
// API (workflow tasks and first attempts only) and `furrow dev`.

// runWorker runs the Temporal worker of the delivery engine.
func runWorker(ctx context.Context, cfg Config, obs *observability, log *slog.Logger) error {
	if cfg.TemporalAddress == "" {
		return errNoTemporal
	}
	probes, err := listenProbes(cfg.HTTPAddr)
	if err != nil {
		return err
	}
	defer probes.Close() // on a return before they are served
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
	if err := checkKeyRing(ctx, db, log); err != nil {
		return err
	}
	go warnAtStart(ctx, db, log)
	watchSecrets(obs.metrics, db, log)
	defer serveProbes(probes, api.Probes(db, log), log)()
	events, closeBus, err := workerBus(cfg, obs.metrics, log)
	if err != nil {
		return err
	}
	defer closeBus()
	ctx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	w, err := buildWorker(cfg, obs, log, tc, db, events, stopOnFatal(stop, log))
	if err != nil {
		return err
	}
	if err := startWorker(ctx, cfg, log, tc, w); err != nil {
		return err
	}
	log.Info("worker started", "temporal", cfg.TemporalAddress, "namespace", cfg.TemporalNamespace)
	<-ctx.Done()
	log.Info("stopping: activities in flight finish", "shutdown_timeout", cfg.ShutdownTimeout)
	w.Stop()
	if err := workerFatal(ctx); err != nil {
		return err
	}
	log.Info("stopped")
	return nil
}

// errWorkerFatal ends a process whose worker the SDK stopped on an error
// it does not retry (an unknown namespace, say): running on, the process
// would take no task while its /readyz said it was ready.
var errWorkerFatal = errors.New("the Temporal worker stopped on an error it does not retry")

// stopOnFatal returns the OnFatalError of a process's worker: it logs err
// and ends the process's context with it as the cause (workerFatal).
func stopOnFatal(stop context.CancelCauseFunc, log *slog.Logger) func(error) {
	return func(err error) {
		log.Error(errWorkerFatal.Error()+"; stopping", "err", err)
		stop(fmt.Errorf("%w: %w", errWorkerFatal, err))
	}
}

// workerFatal returns the worker's fatal error if it ended ctx, else nil.
func workerFatal(ctx context.Context) error {
	if err := context.Cause(ctx); errors.Is(err, errWorkerFatal) {
		return err
	}
	return nil
}

// workerBus returns the live bus the worker publishes the events it stores
// on (webhook lifecycle, device.offline), and its closer: the Redis bus when
// FURROW_REDIS_URL is set, its counters exported to m; without Redis no
// socket can reach this process, so nothing is published.
func workerBus(cfg Config, m *telemetry.Metrics, log *slog.Logger) (furrow.EventPublisher, func(), error) {
	if cfg.RedisURL == "" {
		log.Info("FURROW_REDIS_URL is not set: events stored by this worker are not published on the live bus")
		return nil, func() {}, nil
	}
	rc, err := redisclient.Open(cfg.RedisURL, redisOptions(cfg))
	if err != nil {
		return nil, nil, fmt.Errorf("FURROW_REDIS_URL: %w", err)
	}
	bus := live.NewRedisBus(rc, liveRedisPrefix, log)
	m.WatchLive(telemetry.LiveStats{Published: bus.Published, Dropped: bus.Dropped})
	return bus, func() { _ = bus.Close(); _ = rc.Close() }, nil
}

// startWorker starts w and makes sure the maintenance schedules exist with
// the configured settings.
func startWorker(ctx context.Context, cfg Config, log *slog.Logger, tc client.Client, w worker.Worker) error {
	if err := w.Start(); err != nil {
		return fmt.Errorf("start worker: %w", namespaceHint(err, cfg))
	}
	changes, err := temporal.EnsureSchedules(ctx, tc, temporal.ScheduleOptions{
		SweepEvery: cfg.DeviceSweepEvery, OfflineAfter: cfg.DeviceOfflineAfter, ReadingsRetention: cfg.ReadingsRetention})
	if err != nil {
		w.Stop()
		return err
	}
	for _, c := range changes {
		// Every worker sets the schedules at start: workers configured
		// differently undo each other's settings.
		log.Warn("maintenance schedule changed to this worker's settings; give every worker the same FURROW_DEVICE_* and FURROW_READINGS_RETENTION",
			"schedule", c.ID, "from", c.From, "to", c.To)
	}
	return nil
}

// buildWorker builds the worker of `furrow worker` and `furrow dev`; a
// variable so that tests can stand in one that fails.
var buildWorker = newWorker

// newWorker builds a worker running every workflow and activity; events,
// which may be nil, publishes the events its activities store, and
// onFatal is its OnFatalError.
func newWorker(cfg Config, obs *observability, log *slog.Logger, tc client.Client, db *store.DB, events furrow.EventPublisher, onFatal func(error)) (worker.Worker, error) {
	build, err := workerBuilder(cfg, obs, log, tc, db, events, false)
	if err != nil {
		return nil, err
	}
	return build(onFatal), nil
}

// workerBuilder returns a function building workers of the activities
// newActivities wires, given each worker's OnFatalError; localOnly leaves
// regular activities (retries, maintenance) to other workers.
func workerBuilder(cfg Config, obs *observability, log *slog.Logger, tc client.Client, db *store.DB, events furrow.EventPublisher, localOnly bool) (func(onFatal func(error)) worker.Worker, error) {
	acts, err := newActivities(cfg, obs, log, tc, db, events)
	if err != nil {
		return nil, err
	}
	return func(onFatal func(error)) worker.Worker {
		opts := temporal.WorkerOptions{StopTimeout: cfg.ShutdownTimeout, LocalActivitiesOnly: localOnly, OnFatalError: onFatal}
		return temporal.NewWorker(tc, acts, opts)
	}, nil
}

// newActivities wires the activities to the store, the guarded webhook
// HTTP client of the configuration, the chain reporter, the live bus, the metrics and the
// starter of redeliveries.
func newActivities(cfg Config, obs *observability, log *slog.Logger, tc client.Client, db *store.DB, events furrow.EventPublisher) (*activities.Activities, error) {
	pacer, err := newPacer(cfg, log)
	if err != nil {
		return nil, err
	}
	return &activities.Activities{
		Webhooks: db, Devices: db, Retention: db, HTTP: cfg.WebhookClient, Clock: furrow.SystemClock{}, Logger: log,
		Reporter: temporal.NewReporter(tc), Live: events, Metrics: obs.metrics, Pacer: pacer,
		Redeliverer: temporal.NewControl(tc, cfg.RetrySchedule).WithMetrics(obs.metrics),
	}, nil
}

// newPacer returns the keeper of the webhooks' delivery rates: shared by
// every process through Redis when FURROW_REDIS_URL is set, else kept by
// this process alone. Its Redis client lives as long as the process.
func newPacer(cfg Config, log *slog.Logger) (activities.Pacer, error) {
	if cfg.RedisURL == "" {
		return ratelimit.NewLocalPacer(furrow.SystemClock{}), nil
	}
	rc, err := redisclient.Open(cfg.RedisURL, redisOptions(cfg))
	if err != nil {
		return nil, fmt.Errorf("FURROW_REDIS_URL: %w", err)
	}
	return ratelimit.NewPacer(rc, "furrow:pace:", log), nil
}
