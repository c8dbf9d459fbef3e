// Package dispatch is the outbox dispatcher: it starts one delivery
// workflow per stored event per subscribed, enabled webhook, and records
// the event as skipped for subscribed webhooks that are disabled.
//
// Several dispatchers may share one database. Each claims a batch of events
// under a short lease in its own name, renews the lease while the batch is
// worked on, and gives back at once every claim it cannot finish, so that a
// fault or the death of one dispatcher delays others' events by at most a
// lease.
package dispatch

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/google/uuid"
	"go.temporal.io/sdk/client"

	"github.com/furrowhq/furrow"
	"github.com/furrowhq/furrow/internal/warm"
)

// Config tunes the dispatcher; zero values take the defaults in brackets.
type Config struct {
	Sweep        time.Duration   // periodic catch-up, also of expired leases [2s]
	Lease        time.Duration   // claim lease of an event, renewed every third of it [5s]
	CallTimeout  time.Duration   // deadline of each store call [5s]
	StartTimeout time.Duration   // deadline of each workflow start [10s]
	Batch        int             // events per claim [100]
	MaxBackoff   time.Duration   // longest wait before claiming after failures [1m]
	Schedule     []time.Duration // retry schedule of deliveries [furrow.DefaultSchedule]
	Parallel     int             // store calls in flight at once [16]
	// Starts bounds the workflow starts in flight at once [64]. A start
	// waits for Temporal, not for a database connection, and the outbox
	// drains at Starts divided by a start's latency: with 16, a loaded
	// 2-core machine (starts of about 100 ms) dispatched no more than about
	// 140 events a second.
	Starts int
	// Gather is how long a woken dispatcher waits for more events before
	// it claims, while wakes come at least one per Gather [20ms]; see
	// defaultGather.
	Gather time.Duration
}

// Starter starts workflows; *client.Client satisfies it.
type Starter interface {
	ExecuteWorkflow(ctx context.Context, options client.StartWorkflowOptions, workflow any, args ...any) (client.WorkflowRun, error)
}

// Webhooks is what the dispatcher uses of the webhook store.
type Webhooks interface {
	// DispatchWebhooks lists a farm's webhooks, oldest first, with their
	// ID, FarmID, URL, Enabled, EventTypes and MaxPerSecond, and no
	// secret: the dispatcher signs nothing, and a secret that does not
	// open must fail only its own webhook's deliveries, in their attempts,
	// not the dispatch of the whole farm.
	DispatchWebhooks(ctx context.Context, farmID uuid.UUID) ([]furrow.Webhook, error)
	// AddAttempt records an event skipped for a disabled webhook, as
	// furrow.WebhookService.AddAttempt.
	AddAttempt(ctx context.Context, a furrow.Attempt) error
}

// Deps are the dispatcher's collaborators.
type Deps struct {
	Outbox   furrow.Outbox
	Webhooks Webhooks
	Starter  Starter
	Clock    furrow.Clock
	Logger   *slog.Logger
	Metrics  Metrics // nil counts nothing
	// ContinueTrace returns ctx continuing the trace of traceParent, the
	// W3C traceparent an event was stored with ("" when none), so that the
	// event's workflow start belongs to the trace of the request that
	// stored it. Nil leaves ctx as it is.
	ContinueTrace func(ctx context.Context, traceParent string) context.Context
}

// Dispatcher moves outbox events into delivery workflows. It implements
// furrow.Waker.
type Dispatcher struct {
	cfg   Config
	deps  Deps
	owner uuid.UUID // names this dispatcher's leases in the outbox
	wake  chan struct{}
	woken wokenFarms // the farms of the wakes since a claim looked for them
	came  arrivals   // how often wakes come
	// mu guards what a pass and the express passes beside it keep of the
	// farms.
	mu         sync.Mutex
	farms      farmBackoffs
	failStreak int // farms failed on their own since one succeeded
	paced      startPacer
	calls      *warm.Pool // runs the store calls and starts (see limited)
}

var _ furrow.Waker = (*Dispatcher)(nil)

// New returns a dispatcher; call Run to start it.
func New(cfg Config, deps Deps) *Dispatcher {
	cfg.Sweep = orDefault(cfg.Sweep, 2*time.Second)
	cfg.Lease = orDefault(cfg.Lease, 5*time.Second)
	cfg.CallTimeout = orDefault(cfg.CallTimeout, 5*time.Second)
	cfg.StartTimeout = orDefault(cfg.StartTimeout, 10*time.Second)
	cfg.MaxBackoff = orDefault(cfg.MaxBackoff, time.Minute)
	cfg.Batch = orDefault(cfg.Batch, 100)
	cfg.Parallel = orDefault(cfg.Parallel, 16)
	cfg.Starts = orDefault(cfg.Starts, 64)
	cfg.Gather = orDefault(cfg.Gather, defaultGather)
	if deps.Logger == nil {
		deps.Logger = slog.Default()
	}
	if deps.Clock == nil {
		deps.Clock = furrow.SystemClock{}
	}
	if deps.Metrics == nil {
		deps.Metrics = noMetrics{}
	}
	if deps.ContinueTrace == nil {
		deps.ContinueTrace = func(ctx context.Context, _ string) context.Context { return ctx }
	}
	return &Dispatcher{cfg: cfg, deps: deps, owner: uuid.New(), wake: make(chan struct{}, 1), farms: farmBackoffs{}, calls: warm.New()}
}

func orDefault[T int | time.Duration](v, def T) T {
	if v <= 0 {
		return def
	}
	return v
}

// Owner is the id this dispatcher's leases carry in the outbox.
func (d *Dispatcher) Owner() uuid.UUID { return d.owner }

// Wake asks the dispatcher to look at the outbox now, for events of farm
// stored by this process. It never blocks, and wakes arriving while one is
// pending coalesce into it. A dispatcher backing off after failures keeps
// the wake for when its wait is over.
func (d *Dispatcher) Wake(farm uuid.UUID) {
	d.woken.note(farm)
	d.came.note(time.Now())
	d.signal()
}

// signal makes a wake pending.
func (d *Dispatcher) signal() {
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

// Run dispatches until ctx is done, then gives back the leases it holds and
// returns nil. After a pass that dispatched nothing because of a shared
// fault, or of farms failing one after another with none succeeding, it
// waits, with a
// doubling backoff, before claiming again: a broken dispatcher must not keep
// taking work that healthy ones could do. A single failing farm is only left
// aside itself (see farmBackoffs).
func (d *Dispatcher) Run(ctx context.Context) error {
	var backoff time.Duration
	for {
		p, err := d.DispatchOnce(ctx)
		if ctx.Err() != nil {
			return nil
		}
		switch {
		case err != nil && p.Dispatched == 0 && (p.Shared || d.failingFarms() >= 2):
			backoff = min(max(2*backoff, time.Second), d.cfg.MaxBackoff)
			d.deps.Metrics.DispatchBackingOff(backoff)
			d.deps.Logger.WarnContext(ctx, "dispatch failed; waiting before claiming again",
				"err", err, "retry_in", backoff, "released", p.Released, "shared_fault", p.Shared, "dispatcher", d.owner)
			if !d.pause(ctx, backoff) {
				return nil
			}
			continue
		case backoff > 0 && (p.Dispatched > 0 || err == nil):
			// A clean pass recovers even with the outbox empty: the gauge
			// must not keep showing the last wait.
			backoff = 0
			d.deps.Metrics.DispatchBackingOff(0)
			d.deps.Logger.InfoContext(ctx, "dispatch recovered", "dispatcher", d.owner)
		}
		if p.Full {
			continue
		}
		if !d.sleep(ctx, d.cfg.Sweep) {
			return nil
		}
	}
}

// sleep waits for wait, a Wake or the end of ctx; false means ctx ended.
// While wakes come steadily it then waits Gather more, so that the next
// claim takes the events of the wakes meanwhile too.
func (d *Dispatcher) sleep(ctx context.Context, wait time.Duration) bool {
	if !d.wait(ctx, wait, d.wake) {
		return false
	}
	if d.came.steady(time.Now(), d.cfg.Gather) {
		return d.pause(ctx, d.cfg.Gather)
	}
	return true
}

// pause waits for wait or the end of ctx, leaving wakes pending; false
// means ctx ended.
func (d *Dispatcher) pause(ctx context.Context, wait time.Duration) bool {
	return d.wait(ctx, wait, nil)
}

// wait waits for wait, a receive on wake (nil: none) or the end of ctx.
func (d *Dispatcher) wait(ctx context.Context, wait time.Duration, wake <-chan struct{}) bool {
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-wake:
	case <-t.C:
	}
	return true
}
