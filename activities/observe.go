package activities

import (
	"time"

	"github.com/furrowhq/furrow"
)

// observeAttempt records an attempt that sent (or tried to send) a
// request, and the end of its chain when it was the chain's last: a 2xx, a
// non-retried answer, or a failure of the final attempt. occurredAtMs is
// the event's time, for the event-to-2xx latency.
func (a *Activities) observeAttempt(in DeliverInput, attempt int, took time.Duration, err error, occurredAtMs int64) {
	m := a.metrics()
	switch {
	case err == nil:
		m.DeliveryAttempt(furrow.OutcomeDelivered, took)
		a.observeChain(in, furrow.OutcomeDelivered)
		m.Delivered(a.Clock.Now().Sub(time.UnixMilli(occurredAtMs)))
	case Retried(err) && attempt <= len(in.Schedule):
		m.DeliveryAttempt(furrow.AttemptRetried, took)
	default:
		m.DeliveryAttempt(furrow.OutcomeFailed, took)
		a.observeChain(in, furrow.OutcomeFailed)
	}
}

// observeUnsent records an attempt that could not load what to send: it
// is no attempt of the endpoint's, so only the chain it ends, if it is the
// last, is counted (failed: the event was not delivered).
func (a *Activities) observeUnsent(in DeliverInput, attempt int, err error) {
	if !Retried(err) || attempt > len(in.Schedule) {
		a.observeChain(in, furrow.OutcomeFailed)
	}
}

// observeChain records the end of a chain, and of a test delivery.
func (a *Activities) observeChain(in DeliverInput, outcome string) {
	a.metrics().DeliveryChain(outcome)
	if in.Test {
		a.metrics().TestDelivery(outcome)
	}
}

// observeSkip records an attempt that found nothing to send.
func (a *Activities) observeSkip(in DeliverInput) {
	a.metrics().DeliveryAttempt(furrow.OutcomeSkipped, 0)
	a.observeChain(in, furrow.OutcomeSkipped)
}
