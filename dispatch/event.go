package dispatch

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"
	"go.temporal.io/api/serviceerror"
	"google.golang.org/grpc/codes"

	"github.com/furrowhq/furrow"
	"github.com/furrowhq/furrow/workflows"
)

// skippedNamespace derives the delivery id of a skipped record from the
// webhook and event.
var skippedNamespace = uuid.MustParse("6f1d7a52-3c1e-4c4b-9d61-0b0f3f1f7a11")

// dispatchEvent starts e's delivery workflows, or records it skipped for
// disabled webhooks; rank is its place among its farm's events of the
// batch (see ranked). A start a paced webhook has no room for yet is left
// out, and hold says how long the event is to wait before it is claimed
// again (0: every workflow is started). paced says whether one of hooks has
// a rate (anyPaced): only then can the event have been held, so the others
// leave the pacer's lock alone.
func (d *Dispatcher) dispatchEvent(ctx context.Context, sem slots, rank int, hooks []furrow.Webhook, paced bool, e furrow.Event) (hold time.Duration, err error) {
	var done, started []uuid.UUID
	if paced {
		done = d.paced.startedOf(e.ID) // while it was held
	}
	for _, w := range hooks {
		if !w.Subscribes(e.Type) || slices.Contains(done, w.ID) {
			continue
		}
		call, timeout, slot := func(ctx context.Context) error { return d.skip(ctx, w, e) }, d.cfg.CallTimeout, sem.store
		if w.Enabled {
			if h := d.paced.take(w, time.UnixMilli(e.OccurredAtMs), d.deps.Clock.Now()); h > 0 {
				hold = max(hold, h)
				continue
			}
			call, timeout, slot = func(ctx context.Context) error { return d.start(ctx, w, e) }, d.cfg.StartTimeout, sem.starts
			started = append(started, w.ID)
		}
		if err := d.limited(ctx, slot, rank, timeout, call); err != nil {
			return 0, err
		}
	}
	if paced {
		d.paced.settled(e.ID, started, hold > 0)
	}
	return hold, nil
}

// anyPaced reports whether one of hooks has a rate (max_per_second).
func anyPaced(hooks []furrow.Webhook) bool {
	return slices.ContainsFunc(hooks, func(w furrow.Webhook) bool { return w.MaxPerSecond != nil })
}

// start starts the delivery workflow; an existing one counts as started.
func (d *Dispatcher) start(ctx context.Context, w furrow.Webhook, e furrow.Event) error {
	opts, in := workflows.DeliveryStart(workflows.DeliveryWorkflowID(w.ID, e.ID), w, e, d.cfg.Schedule)
	ctx = d.deps.ContinueTrace(ctx, e.TraceParent)
	_, err := d.deps.Starter.ExecuteWorkflow(ctx, opts, workflows.DeliveryWorkflowName, in)
	switch {
	case err == nil:
		d.deps.Metrics.WorkflowStarted()
	case !workflows.AlreadyStarted(err):
		return startError{fmt.Errorf("start delivery of %s to webhook %s: %w", e.ID, w.ID, err)}
	}
	return nil
}

// skip records e as skipped for the disabled webhook w (attempt 0), so it
// can be redelivered after re-enabling. The row's delivery id and time
// derive from the webhook and the event, so that recording it again (after
// a crash, or by a dispatcher taking the event over) is ECONFLICT, ignored
// and not counted again.
func (d *Dispatcher) skip(ctx context.Context, w furrow.Webhook, e furrow.Event) error {
	a := furrow.Attempt{
		DeliveryID: uuid.NewSHA1(skippedNamespace, []byte(w.ID.String()+"/"+e.ID)),
		WebhookID:  w.ID,
		EventID:    e.ID,
		Error:      furrow.SkipWebhookDisabled,
		AtMs:       e.OccurredAtMs,
	}
	err := d.deps.Webhooks.AddAttempt(ctx, a)
	switch {
	case err == nil:
		d.deps.Metrics.DeliveryAttempt(furrow.OutcomeSkipped, 0)
	case furrow.ErrorCode(err) != furrow.ECONFLICT:
		return fmt.Errorf("record skipped %s for webhook %s: %w", e.ID, w.ID, err)
	}
	return nil
}

// startError is Temporal refusing to start a delivery.
type startError struct{ err error }

func (e startError) Error() string { return e.err.Error() }
func (e startError) Unwrap() error { return e.err }

// sharedFault says whether err is a fault every farm would meet: a call
// that ran out of time, or Temporal refusing a start for any reason but the
// start's own arguments. A store error is told apart by giving the farm's
// leases back: if that fails too, the database is unreachable.
func sharedFault(err error) bool {
	if se := (startError{}); errors.As(err, &se) {
		return serviceerror.ToStatus(se.err).Code() != codes.InvalidArgument
	}
	return errors.Is(err, context.DeadlineExceeded)
}
