package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"go.temporal.io/api/serviceerror"

	"github.com/furrowhq/furrow/temporal"
)

var errNoTemporal = errors.New("FURROW_TEMPORAL_ADDRESS is required (host:port of the Temporal frontend); `furrow dev` embeds one")

// runServe runs the API and the dispatcher, and a worker for delivery
// workflow tasks and first attempts, so that the dispatcher's starts are
// eager and the first attempt runs at once in this process (local
// activity); retries and maintenance are left to `furrow worker`. Temporal
// is dialled lazily so that readings are accepted, and kept in the outbox,
// while it is down or refuses the worker.
func runServe(ctx context.Context, cfg Config, obs *observability, log *slog.Logger) error {
	if cfg.TemporalAddress == "" {
		return errNoTemporal
	}
	paceGC(cfg)
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
	// A worker refused for a reason only a change of configuration cures
	// (an unknown namespace, say) is an error in the log at every try, but
	// serve runs on: its readings wait in the outbox, not lost, and the
	// namespace may be being registered (`furrow worker` exits instead,
	// having nothing else to do).
	s.stopWorker = temporal.StartRetrying(build, 30*time.Second, log, func(err error) {
		log.Error("the Temporal worker cannot start until Temporal or Furrow's settings change; readings are kept in the outbox; retrying",
			"err", namespaceHint(err, cfg))
	}).Stop
	return s.run(ctx)
}

// namespaceHint adds to err, when Temporal does not know the namespace,
// the setting that names it.
func namespaceHint(err error, cfg Config) error {
	if _, ok := errors.AsType[*serviceerror.NamespaceNotFound](err); ok {
		return fmt.Errorf("%w (FURROW_TEMPORAL_NAMESPACE is %q: create that namespace, or name one that exists)", err, cfg.TemporalNamespace)
	}
	return err
}

// temporalOptions says which Temporal the configuration names.
func temporalOptions(cfg Config, obs *observability, log *slog.Logger) temporal.Options {
	return temporal.Options{
		Address: cfg.TemporalAddress, Namespace: cfg.TemporalNamespace, Logger: log,
		Metrics: obs.temporal, Interceptors: obs.interceptors, Gzip: cfg.TemporalGzip,
	}
}
