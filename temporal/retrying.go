package temporal

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/worker"
	"google.golang.org/grpc/codes"
)

// RetryingWorker starts a worker once Temporal answers, so that a process
// can start, and do its other work, while Temporal is down. A worker the
// SDK stops on an error it does not retry is replaced the same way, rather
// than held while it takes no task. A start that fails for a reason only
// a change of configuration cures (not Curable: an unknown namespace, say)
// is handed to the process to say so loudly, and tried again like any
// other: the namespace may be being registered, and the process has other
// work meanwhile (serve keeps readings in the outbox).
type RetryingWorker struct {
	cancel context.CancelFunc
	done   chan struct{}

	mu sync.Mutex
	w  worker.Worker // the running worker, nil while there is none
}

// StartRetrying builds a worker with build and starts it, again with a fresh
// one after each failure to start or fatal error (a worker cannot be
// started twice), waiting up to maxWait between tries. build must make
// onFatal the worker's OnFatalError (WorkerOptions). Each failure to
// start that is not Curable is passed to incurable, which logs it, in
// place of the loop's warning.
func StartRetrying(build func(onFatal func(error)) worker.Worker, maxWait time.Duration, log *slog.Logger, incurable func(error)) *RetryingWorker {
	ctx, cancel := context.WithCancel(context.Background())
	r := &RetryingWorker{cancel: cancel, done: make(chan struct{})}
	go r.loop(ctx, build, maxWait, log, incurable)
	return r
}

func (r *RetryingWorker) loop(ctx context.Context, build func(onFatal func(error)) worker.Worker, maxWait time.Duration, log *slog.Logger, incurable func(error)) {
	defer close(r.done)
	wait := 250 * time.Millisecond
	for {
		fatal := make(chan error, 1)
		w := build(func(err error) {
			select {
			case fatal <- err:
			default:
			}
		})
		switch err := w.Start(); {
		case err != nil && !Curable(err):
			incurable(err)
		case err != nil:
			log.Warn("worker cannot start yet; retrying", "err", err, "retry_in", wait)
		default:
			r.set(w)
			log.Info("worker started")
			select {
			case <-ctx.Done():
				return // Stop stops w
			case err := <-fatal:
				r.set(nil)
				w.Stop()
				log.Error("worker stopped on an error it does not retry; starting a new one", "err", err, "retry_in", wait)
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		wait = min(2*wait, maxWait)
	}
}

// Curable reports whether trying again may cure err, an error starting a
// worker or calling Temporal: an unreachable, overloaded or restarting
// server may come back, but a namespace that does not exist, credentials
// refused or a request the server rejects stay so until someone changes
// the configuration of Furrow or of Temporal.
func Curable(err error) bool {
	if _, ok := errors.AsType[*serviceerror.NamespaceNotFound](err); ok {
		return false
	}
	switch serviceerror.ToStatus(err).Code() {
	case codes.InvalidArgument, codes.PermissionDenied, codes.Unauthenticated, codes.Unimplemented:
		return false
	}
	return true
}

func (r *RetryingWorker) set(w worker.Worker) {
	r.mu.Lock()
	r.w = w
	r.mu.Unlock()
}

// Stop ends the retries and stops the worker if one started, waiting for
// its activities as its options say.
func (r *RetryingWorker) Stop() {
	r.cancel()
	<-r.done
	r.mu.Lock()
	w := r.w
	r.mu.Unlock()
	if w != nil {
		w.Stop()
	}
}
