package temporal

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"go.temporal.io/sdk/worker"
)

// RetryingWorker starts a worker once Temporal answers, so that a process
// can start, and do its other work, while Temporal is down. A worker the
// SDK stops on an error it does not retry (an unknown namespace, say) is
// replaced the same way, so that the process takes tasks again once
// Temporal is put right, rather than holding a worker that takes none.
type RetryingWorker struct {
	cancel context.CancelFunc
	done   chan struct{}

	mu sync.Mutex
	w  worker.Worker // the running worker, nil while there is none
}

// StartRetrying builds a worker with build and starts it, again with a fresh
// one after each failure to start or fatal error (a worker cannot be
// started twice), waiting up to maxWait between tries. build must make
// onFatal the worker's OnFatalError (WorkerOptions).
func StartRetrying(build func(onFatal func(error)) worker.Worker, maxWait time.Duration, log *slog.Logger) *RetryingWorker {
	ctx, cancel := context.WithCancel(context.Background())
	r := &RetryingWorker{cancel: cancel, done: make(chan struct{})}
	go r.loop(ctx, build, maxWait, log)
	return r
}

func (r *RetryingWorker) loop(ctx context.Context, build func(onFatal func(error)) worker.Worker, maxWait time.Duration, log *slog.Logger) {
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
		if err := w.Start(); err != nil {
			log.Warn("worker cannot start yet; retrying", "err", err, "retry_in", wait)
		} else {
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
