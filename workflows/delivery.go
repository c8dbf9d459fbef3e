package workflows

import (
	"errors"
	"time"

	"github.com/google/uuid"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/furrowhq/furrow/activities"
)

// attemptTimeout bounds one attempt: comfortably above the HTTP timeout,
// so that the store calls around the POST fit too.
const attemptTimeout = 3 * activities.HTTPTimeout

// Delivery outcomes.
const (
	Delivered = "delivered"
	Failed    = "failed"
	Skipped   = "skipped"
)

// DeliveryInput is the input of the delivery workflow: ids and the event
// type only, never the secret or the body.
type DeliveryInput struct {
	WebhookID uuid.UUID
	EventID   string
	FarmID    uuid.UUID
	EventType string
	// Schedule is the delay after each failed attempt but the last; empty
	// means DefaultSchedule.
	Schedule []time.Duration
}

// DeliveryResult is the result of the delivery workflow.
type DeliveryResult struct {
	Outcome    string
	Attempts   int
	StatusCode int
}

// Delivery delivers one event to one webhook with up to len(schedule)+1
// attempts. The first attempt runs as a local activity, since most
// deliveries succeed at once; the rest run as one regular activity whose
// retry policy and errors follow the schedule. A failed chain, and a
// success after failures, are reported to the webhook's workflow.
func Delivery(ctx workflow.Context, in DeliveryInput) (DeliveryResult, error) {
	schedule := in.Schedule
	if len(schedule) == 0 {
		schedule = DefaultSchedule
	}
	res, err := deliver(ctx, in, schedule)
	out := DeliveryResult{Outcome: Delivered, Attempts: res.Attempt, StatusCode: res.StatusCode}
	var appErr *temporal.ApplicationError
	switch {
	case err != nil && !errors.As(err, &appErr):
		// Not an answer of the endpoint (e.g. cancellation): fail the
		// workflow rather than count a chain.
		return out, err
	case err != nil:
		out.Outcome = Failed
	case res.Skipped:
		out.Outcome = Skipped
	}
	if out.Outcome == Failed || (out.Outcome == Delivered && res.Failures > 0) {
		if err := report(ctx, in, out.Outcome == Failed); err != nil {
			return out, err
		}
	}
	return out, nil
}

// deliver runs the attempts. On a chain failure the result's Attempt is the
// number of the last attempt.
func deliver(ctx workflow.Context, in DeliveryInput, schedule []time.Duration) (activities.DeliverResult, error) {
	var a *activities.Activities
	var res activities.DeliverResult
	din := activities.DeliverInput{WebhookID: in.WebhookID, EventID: in.EventID, FirstAttempt: 1, Schedule: schedule}
	lctx := workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{
		StartToCloseTimeout: attemptTimeout,
		RetryPolicy:         &temporal.RetryPolicy{MaximumAttempts: 1},
	})
	err := workflow.ExecuteLocalActivity(lctx, a.Deliver, din).Get(ctx, &res)
	res.Attempt = 1
	if err == nil || !retried(err) || len(schedule) == 0 {
		return res, err
	}
	if err := workflow.Sleep(ctx, schedule[0]); err != nil {
		return res, err
	}
	din.FirstAttempt = 2
	actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: attemptTimeout,
		RetryPolicy: &temporal.RetryPolicy{
			// Errors set NextRetryDelay; these apply only to failures
			// that carry none (timeouts of the activity itself).
			InitialInterval:    schedule[0],
			BackoffCoefficient: 2,
			MaximumAttempts:    int32(len(schedule)),
		},
	})
	err = workflow.ExecuteActivity(actx, a.Deliver, din).Get(ctx, &res)
	if err != nil {
		res.Attempt = failedAttempt(err, len(schedule)+1)
	}
	return res, asChainFailure(err)
}

// failedAttempt returns the attempt number an activity error carries in its
// details, or fallback (retries exhausted by timeouts).
func failedAttempt(err error, fallback int) int {
	var appErr *temporal.ApplicationError
	var n int
	if errors.As(err, &appErr) && appErr.HasDetails() && appErr.Details(&n) == nil {
		return n
	}
	return fallback
}

// retried reports whether a failed first attempt leads to another one.
func retried(err error) bool {
	var appErr *temporal.ApplicationError
	if errors.As(err, &appErr) {
		return !appErr.NonRetryable()
	}
	var timeout *temporal.TimeoutError
	return errors.As(err, &timeout)
}

// asChainFailure turns an activity timeout into an application error so
// that it counts as a failed chain like any other endpoint failure.
func asChainFailure(err error) error {
	var timeout *temporal.TimeoutError
	if err != nil && errors.As(err, &timeout) {
		return temporal.NewApplicationError("attempt timed out", activities.ErrorTypeRetryable)
	}
	return err
}

// report tells the webhook's workflow how the chain ended.
func report(ctx workflow.Context, in DeliveryInput, failed bool) error {
	var a *activities.Activities
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 30 * time.Second,
		RetryPolicy:         &temporal.RetryPolicy{InitialInterval: time.Second, MaximumInterval: time.Minute},
	})
	r := activities.ReportChainInput{WebhookID: in.WebhookID, EventID: in.EventID, Failed: failed}
	return workflow.ExecuteActivity(ctx, a.ReportChain, r).Get(ctx, nil)
}
