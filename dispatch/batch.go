package dispatch

import (
	"context"
	"fmt"
	"sync"

	"github.com/google/uuid"
	"golang.org/x/sync/errgroup"

	"github.com/furrowhq/furrow"
	"github.com/furrowhq/furrow/workflows"
)

// skippedNamespace derives the delivery id of a skipped record from the
// webhook and event, so that dispatching an event again collides with the
// first record (ECONFLICT, ignored) instead of adding one.
var skippedNamespace = uuid.MustParse("6f1d7a52-3c1e-4c4b-9d61-0b0f3f1f7a11")

// DispatchOnce claims one batch and dispatches it. full reports that the
// batch was full, so more may be waiting. Events whose dispatch failed are
// left undispatched, and the first error is returned.
func (d *Dispatcher) DispatchOnce(ctx context.Context) (full bool, err error) {
	events, err := d.deps.Outbox.ClaimEvents(ctx, d.cfg.Batch, d.cfg.Lease)
	if err != nil {
		return false, fmt.Errorf("claim events: %w", err)
	}
	if len(events) == 0 {
		return false, nil
	}
	var done []string
	for farmID, farmEvents := range byFarm(events) {
		ok, ferr := d.dispatchFarm(ctx, farmID, farmEvents)
		done = append(done, ok...)
		if ferr != nil {
			err = ferr
			break // Temporal or the store is likely down; back off.
		}
	}
	if len(done) > 0 {
		if merr := d.deps.Outbox.MarkDispatched(ctx, done); merr != nil && err == nil {
			err = fmt.Errorf("mark dispatched: %w", merr)
		}
	}
	return len(events) == d.cfg.Batch && err == nil, err
}

// byFarm groups events by farm, keeping their order within a farm.
func byFarm(events []furrow.Event) map[uuid.UUID][]furrow.Event {
	m := make(map[uuid.UUID][]furrow.Event)
	for _, e := range events {
		m[e.FarmID] = append(m[e.FarmID], e)
	}
	return m
}

// dispatchFarm reads the farm's webhooks once and dispatches its events,
// returning the ids of those fully dispatched.
func (d *Dispatcher) dispatchFarm(ctx context.Context, farmID uuid.UUID, events []furrow.Event) ([]string, error) {
	hooks, err := d.deps.Webhooks.Webhooks(ctx, farmID)
	if err != nil {
		return nil, fmt.Errorf("webhooks of farm %s: %w", farmID, err)
	}
	// Starts run side by side: each is a round trip to Temporal, and
	// deliveries carry no order (receivers sort on occurred_at_ms).
	var (
		mu   sync.Mutex
		done []string
	)
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(d.cfg.Parallel)
	for _, e := range events {
		g.Go(func() error {
			if err := d.dispatchEvent(gctx, hooks, e); err != nil {
				return err
			}
			mu.Lock()
			done = append(done, e.ID)
			mu.Unlock()
			return nil
		})
	}
	err = g.Wait()
	return done, err
}

func (d *Dispatcher) dispatchEvent(ctx context.Context, hooks []furrow.Webhook, e furrow.Event) error {
	for _, w := range hooks {
		if !w.Subscribes(e.Type) {
			continue
		}
		var err error
		if w.Enabled {
			err = d.start(ctx, w, e)
		} else {
			err = d.skip(ctx, w, e)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// start starts the delivery workflow; an existing one counts as started.
func (d *Dispatcher) start(ctx context.Context, w furrow.Webhook, e furrow.Event) error {
	opts, in := workflows.DeliveryStart(workflows.DeliveryWorkflowID(w.ID, e.ID), w.ID, e, d.cfg.Schedule)
	_, err := d.deps.Starter.ExecuteWorkflow(ctx, opts, workflows.DeliveryWorkflowName, in)
	if err != nil && !workflows.AlreadyStarted(err) {
		return fmt.Errorf("start delivery of %s to webhook %s: %w", e.ID, w.ID, err)
	}
	return nil
}

// skip records e as skipped for the disabled webhook w (attempt 0), so it
// can be redelivered after re-enabling.
func (d *Dispatcher) skip(ctx context.Context, w furrow.Webhook, e furrow.Event) error {
	a := furrow.Attempt{
		DeliveryID: uuid.NewSHA1(skippedNamespace, []byte(w.ID.String()+"/"+e.ID)),
		WebhookID:  w.ID,
		EventID:    e.ID,
		Error:      "skipped: webhook disabled",
		AtMs:       furrow.Millis(d.deps.Clock.Now()),
	}
	err := d.deps.Webhooks.AddAttempt(ctx, a)
	if err != nil && furrow.ErrorCode(err) != furrow.ECONFLICT {
		return fmt.Errorf("record skipped %s for webhook %s: %w", e.ID, w.ID, err)
	}
	return nil
}
