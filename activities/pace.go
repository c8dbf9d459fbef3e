package activities

import (
	"context"
	"math/rand/v2"
	"time"

	"github.com/google/uuid"

	"github.com/furrowhq/furrow"
)

// Pacer keeps the attempts to each webhook within its max_per_second,
// across every process. cmd/furrow wires a Redis one (package
// api/ratelimit), which falls back to a per-process one when Redis fails.
type Pacer interface {
	// Reserve takes the webhook's next slot at perSecond attempts a second
	// and returns how long until it comes; the slot is the caller's. Slots
	// spread a burst of deliveries out over time.
	Reserve(ctx context.Context, webhookID uuid.UUID, perSecond float64) (time.Duration, error)
	// Admit is the check made right before sending: 0 when the webhook may
	// be sent to now, and the send, named sendID, is then counted as still
	// to come until Sent; else how long to wait. It keeps deliveries whose
	// turn came late from arriving bunched.
	Admit(ctx context.Context, webhookID uuid.UUID, perSecond float64, sendID uuid.UUID) (time.Duration, error)
	// Sent says the admitted send went: its request was written, or failed
	// before it could be. The send counts from then on, so that a request
	// written late still counts in the second it reached the receiver.
	Sent(ctx context.Context, webhookID, sendID uuid.UUID) error
}

// maxInlineWait is the longest an attempt waits for its slot itself; a
// longer wait is left to a durable timer of the workflow, so that no
// activity slot is held while a webhook's rate holds its deliveries back.
const maxInlineWait = 200 * time.Millisecond

// maxAdmitWait is the longest an attempt whose slot has come waits, in
// all, for the send-time check: about the rate's one-second window, so
// that a freed place is taken at once rather than after a timer.
const maxAdmitWait = time.Second

// maxSpread bounds the random delay added to a wait for Admit, which
// spreads out attempts that met at the same instant.
const maxSpread = time.Second

// pace keeps a Paced attempt to w's rate. It returns 0 when the attempt may
// send now, or the wait the workflow must sleep before the attempt asks
// again (as Reserved). admitted says the Pacer counted the send as sendID,
// to be told with Pacer.Sent when it went. A failing Pacer lets the attempt
// go: the rate is a courtesy to the receiver, not a reason to fail a
// delivery.
func (a *Activities) pace(ctx context.Context, in DeliverInput, w furrow.Webhook, sendID uuid.UUID) (wait time.Duration, admitted bool) {
	if !in.Paced || w.MaxPerSecond == nil || a.Pacer == nil {
		return 0, false
	}
	rate := *w.MaxPerSecond
	if !in.Reserved {
		wait, err := a.Pacer.Reserve(ctx, w.ID, rate)
		if err != nil {
			a.logger().WarnContext(ctx, "taking a slot of the webhook's rate failed; sending now", "webhook_id", w.ID, "err", err)
			return 0, false
		}
		if wait > maxInlineWait {
			a.metrics().DeliveryThrottled()
			return wait, false
		}
		sleep(ctx, wait)
	}
	budget := maxAdmitWait
	for {
		wait, err := a.Pacer.Admit(ctx, w.ID, rate, sendID)
		if err != nil || wait <= 0 {
			return 0, err == nil
		}
		if wait > budget {
			a.metrics().DeliveryThrottled()
			spread := min(10*furrow.PaceInterval(rate), maxSpread)
			return wait + time.Duration(rand.Int64N(int64(spread)+1)), false
		}
		budget -= wait
		sleep(ctx, wait)
	}
}

// wentOut returns what post calls once the request of an admitted send
// went: it tells the Pacer, whatever became of ctx. Nil when the send was
// not admitted.
func (a *Activities) wentOut(ctx context.Context, webhookID, sendID uuid.UUID, admitted bool) func() {
	if !admitted {
		return nil
	}
	ctx = context.WithoutCancel(ctx)
	return func() {
		if err := a.Pacer.Sent(ctx, webhookID, sendID); err != nil {
			a.logger().WarnContext(ctx, "telling the webhook's rate a send went failed", "webhook_id", webhookID, "err", err)
		}
	}
}

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) {
	if d <= 0 {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}
