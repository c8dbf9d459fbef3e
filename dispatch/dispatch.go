// Package dispatch is the outbox dispatcher: it starts one delivery
// workflow per stored event per subscribed, enabled webhook, and records
// the event as skipped for subscribed webhooks that are disabled.
package dispatch

import (
	"context"
	"log/slog"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/furrowhq/furrow"
)

// Config tunes the dispatcher; zero values take the defaults in brackets.
type Config struct {
	Sweep      time.Duration   // periodic catch-up [5s]
	Lease      time.Duration   // claim lease of an event [30s]
	Batch      int             // events per claim [100]
	MaxBackoff time.Duration   // longest wait after a failure [1m]
	Schedule   []time.Duration // retry schedule of deliveries [workflows.DefaultSchedule]
	Parallel   int             // workflow starts in flight at once [16]
}

// Starter starts workflows; *client.Client satisfies it.
type Starter interface {
	ExecuteWorkflow(ctx context.Context, options client.StartWorkflowOptions, workflow any, args ...any) (client.WorkflowRun, error)
}

// Deps are the dispatcher's collaborators.
type Deps struct {
	Outbox   furrow.Outbox
	Webhooks furrow.WebhookService
	Starter  Starter
	Clock    furrow.Clock
	Logger   *slog.Logger
}

// Dispatcher moves outbox events into delivery workflows. It implements
// furrow.Waker.
type Dispatcher struct {
	cfg  Config
	deps Deps
	wake chan struct{}
}

var _ furrow.Waker = (*Dispatcher)(nil)

// New returns a dispatcher; call Run to start it.
func New(cfg Config, deps Deps) *Dispatcher {
	if cfg.Sweep <= 0 {
		cfg.Sweep = 5 * time.Second
	}
	if cfg.Lease <= 0 {
		cfg.Lease = 30 * time.Second
	}
	if cfg.Batch <= 0 {
		cfg.Batch = 100
	}
	if cfg.Parallel <= 0 {
		cfg.Parallel = 16
	}
	if cfg.MaxBackoff <= 0 {
		cfg.MaxBackoff = time.Minute
	}
	if deps.Logger == nil {
		deps.Logger = slog.Default()
	}
	if deps.Clock == nil {
		deps.Clock = furrow.SystemClock{}
	}
	return &Dispatcher{cfg: cfg, deps: deps, wake: make(chan struct{}, 1)}
}

// Wake asks the dispatcher to look at the outbox now. It never blocks, and
// wakes arriving while one is pending coalesce into it.
func (d *Dispatcher) Wake() {
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

// Run dispatches until ctx is done, then returns nil. After a failure it
// waits with a doubling backoff; the events concerned stay in the outbox
// and are claimed again once their lease expires.
func (d *Dispatcher) Run(ctx context.Context) error {
	backoff := time.Duration(0)
	for {
		full, err := d.DispatchOnce(ctx)
		wait := d.cfg.Sweep
		switch {
		case ctx.Err() != nil:
			return nil
		case err != nil:
			backoff = min(max(2*backoff, time.Second), d.cfg.MaxBackoff)
			wait = backoff
			d.deps.Logger.WarnContext(ctx, "dispatch failed; retrying", "err", err, "retry_in", wait)
		case full:
			backoff = 0
			continue
		default:
			backoff = 0
		}
		if !d.sleep(ctx, wait) {
			return nil
		}
	}
}

// sleep waits for wait, a Wake or the end of ctx; false means ctx ended.
func (d *Dispatcher) sleep(ctx context.Context, wait time.Duration) bool {
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-d.wake:
	case <-t.C:
	}
	return true
}
