package activities

import (
	"errors"
	"time"

	"go.temporal.io/sdk/temporal"

	"github.com/furrowhq/furrow/telemetry"
)

// observeAttempt records an attempt that sent (or tried to send) a
// request, and the end of its chain when it was the chain's last: a 2xx, a
// non-retried answer, or a failure of the final attempt. occurredAtMs is
// the event's time, for the event-to-2xx latency.
func (a *Activities) observeAttempt(in DeliverInput, attempt int, took time.Duration, err error, occurredAtMs int64) {
	m := a.Metrics
	var appErr *temporal.ApplicationError
	switch {
	case err == nil:
		m.DeliveryAttempt(telemetry.ResultDelivered, took)
		m.DeliveryChain(telemetry.ResultDelivered)
		m.Delivered(a.Clock.Now().Sub(time.UnixMilli(occurredAtMs)))
	case errors.As(err, &appErr) && !appErr.NonRetryable() && attempt <= len(in.Schedule):
		m.DeliveryAttempt(telemetry.ResultRetry, took)
	default:
		m.DeliveryAttempt(telemetry.ResultFailed, took)
		m.DeliveryChain(telemetry.ResultFailed)
	}
}

// observeSkip records an attempt that found nothing to send.
func (a *Activities) observeSkip() {
	a.Metrics.DeliveryAttempt(telemetry.ResultSkipped, 0)
	a.Metrics.DeliveryChain(telemetry.ResultSkipped)
}
