package workflows

import (
	"time"

	"github.com/google/uuid"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/furrowhq/furrow"
	"github.com/furrowhq/furrow/activities"
)

// maxSignalsPerRun bounds the history of one run of the webhook workflow;
// each signal adds at most an activity to it.
const maxSignalsPerRun = 500

// WebhookInput is the input of the per-webhook workflow. State is nil on a
// first start (the workflow then reads it from the store) and carried over
// by continue-as-new.
type WebhookInput struct {
	WebhookID uuid.UUID
	State     *WebhookState
}

// Webhook is the per-webhook workflow, the single writer of the webhook's
// failure counter and enabled flag. It counts consecutive failed chains,
// disables the webhook at furrow.MaxFailedChains, restarts the count after
// a successful chain, and re-enables and resets on SignalReenable. It ends
// when the webhook is deleted.
func Webhook(ctx workflow.Context, in WebhookInput) error {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 30 * time.Second,
		RetryPolicy:         &temporal.RetryPolicy{InitialInterval: time.Second, MaximumInterval: time.Minute},
	})
	state, err := initialState(ctx, in)
	if err != nil || state.Gone {
		return err
	}
	w := &webhookRun{state: state}
	chain := workflow.GetSignalChannel(ctx, SignalChain)
	reenable := workflow.GetSignalChannel(ctx, SignalReenable)
	sel := workflow.NewSelector(ctx)
	sel.AddReceive(chain, func(c workflow.ReceiveChannel, _ bool) {
		var r ChainReport
		c.Receive(ctx, &r)
		w.next = w.afterChain(r)
	})
	sel.AddReceive(reenable, func(c workflow.ReceiveChannel, _ bool) {
		c.Receive(ctx, nil)
		w.next = w.afterReenable()
	})
	for handled := 1; ; handled++ {
		sel.Select(ctx)
		if err := w.write(ctx); err != nil || w.state.Gone {
			return err
		}
		if handled >= maxSignalsPerRun || workflow.GetInfo(ctx).GetContinueAsNewSuggested() {
			break
		}
	}
	// Drain what arrived meanwhile so no signal is lost across runs.
	for sel.HasPending() {
		sel.Select(ctx)
		if err := w.write(ctx); err != nil || w.state.Gone {
			return err
		}
	}
	return workflow.NewContinueAsNewError(ctx, Webhook, WebhookInput{WebhookID: in.WebhookID, State: &w.state})
}

// webhookRun is the state of one run: state as written, next as wanted.
type webhookRun struct {
	state WebhookState
	next  WebhookState
}

func (w *webhookRun) afterChain(r ChainReport) WebhookState {
	s := w.state
	if !r.Failed {
		s.Failures = 0
		return s
	}
	s.Failures++
	if s.Failures >= furrow.MaxFailedChains {
		s.Enabled = false
	}
	return s
}

func (w *webhookRun) afterReenable() WebhookState {
	s := w.state
	s.Enabled, s.Failures = true, 0
	return s
}

// write stores w.next when it differs from what is stored.
func (w *webhookRun) write(ctx workflow.Context) error {
	if w.next == w.state {
		return nil
	}
	var a *activities.Activities
	var got activities.SetWebhookStateResult
	set := activities.SetWebhookStateInput{WebhookID: w.next.WebhookID, Enabled: w.next.Enabled, Failures: w.next.Failures}
	if err := workflow.ExecuteActivity(ctx, a.SetWebhookState, set).Get(ctx, &got); err != nil {
		return err
	}
	w.state = w.next
	if got.Gone {
		w.state.Gone = true
		workflow.GetLogger(ctx).Info("webhook deleted; workflow ends", "webhook_id", w.state.WebhookID)
	}
	return nil
}

func initialState(ctx workflow.Context, in WebhookInput) (WebhookState, error) {
	if in.State != nil {
		return *in.State, nil
	}
	var a *activities.Activities
	var got activities.LoadWebhookStateResult
	err := workflow.ExecuteActivity(ctx, a.LoadWebhookState, in.WebhookID).Get(ctx, &got)
	return WebhookState{WebhookID: in.WebhookID, Enabled: got.Enabled, Failures: got.Failures, Gone: got.Gone}, err
}
