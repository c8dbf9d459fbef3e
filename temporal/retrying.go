package temporal

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"go.temporal.io/sdk/worker"
)

// RetryingWorker starts a worker once Temporal answers, so that a process
// can start, and do its other work, while Temporal is down.
type RetryingWorker struct {
	cancel context.CancelFunc
	done   chan struct{}

	mu sync.Mutex
	w  worker.Worker // the started worker, nil until one started
}

// StartRetrying builds a worker with build and starts it, again with a fresh
// one after each failure (a worker cannot be started twice), waiting up to
// maxWait between tries.
func StartRetrying(build func() worker.Worker, maxWait time.Duration, log *slog.Logger) *RetryingWorker {
	ctx, cancel := context.WithCancel(context.Background())
	r := &RetryingWorker{cancel: cancel, done: make(chan struct{})}
	go r.loop(ctx, build, maxWait, log)
	return r
}

func (r *RetryingWorker) loop(ctx context.Context, build func() worker.Worker, maxWait time.Duration, log *slog.Logger) {
	defer close(r.done)
	wait := 250 * time.Millisecond
	for {
		w := build()
		err := w.Start()
		if err == nil {
			r.mu.Lock()
			r.w = w
			r.mu.Unlock()
			log.Info("worker started")
			return
		}
		log.Warn("worker cannot start yet; retrying", "err", err, "retry_in", wait)
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		wait = min(2*wait, maxWait)
	}
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
