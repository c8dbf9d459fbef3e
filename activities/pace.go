package activities

import (
	"context"
	"time"

	"github.com/google/uuid"

	"github.com/furrowhq/furrow"
)

// Pacer keeps the attempts to each webhook within its max_per_second,
// across every process. cmd/furrow wires a Redis one (package
// api/ratelimit), which falls back to a per-process one when Redis fails.
type Pacer interface {
	// Reserve takes the webhook's next slot at perSecond attempts a second
	// and returns how long until it comes; the slot is the caller's.
	Reserve(ctx context.Context, webhookID uuid.UUID, perSecond float64) (time.Duration, error)
}

// maxInlineWait is the longest wait for a slot an attempt sleeps through
// itself; a longer one is left to a durable timer of the workflow, so that
// no activity slot is held while a webhook's rate holds its deliveries back.
const maxInlineWait = 200 * time.Millisecond

// pace takes a slot of w's rate for a Paced attempt that did not take one
// yet and returns the wait the workflow must sleep before sending (0: send
// now, after sleeping a short wait here). A failing Pacer lets the attempt
// go: the rate is a courtesy to the receiver, not a reason to fail.
func (a *Activities) pace(ctx context.Context, in DeliverInput, w furrow.Webhook) time.Duration {
	if !in.Paced || in.Reserved || w.MaxPerSecond == nil || a.Pacer == nil {
		return 0
	}
	wait, err := a.Pacer.Reserve(ctx, w.ID, *w.MaxPerSecond)
	if err != nil {
		a.logger().WarnContext(ctx, "taking a slot of the webhook's rate failed; sending now", "webhook_id", w.ID, "err", err)
		return 0
	}
	if wait <= 0 {
		return 0
	}
	a.metrics().DeliveryThrottled()
	if wait > maxInlineWait {
		return wait
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
	return 0
}
