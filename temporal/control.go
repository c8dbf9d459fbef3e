package temporal

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"go.temporal.io/sdk/client"

	"github.com/furrowhq/furrow"
	"github.com/furrowhq/furrow/activities"
	"github.com/furrowhq/furrow/workflows"
)

// Control is the furrow.DeliveryControl backed by Temporal. It also reports
// chain results for the activities (activities.ChainReporter).
type Control struct {
	c client.Client
	// Schedule is the retry schedule of redeliveries; nil means
	// furrow.DefaultSchedule.
	Schedule []time.Duration
}

var (
	_ furrow.DeliveryControl   = (*Control)(nil)
	_ activities.ChainReporter = (*Control)(nil)
)

// NewControl returns a Control using c.
func NewControl(c client.Client) *Control { return &Control{c: c} }

// Reenable sends SignalReenable to the webhook's workflow, starting it when
// it does not run. It returns the Temporal error when the signal cannot be
// sent.
func (ctl *Control) Reenable(ctx context.Context, webhookID uuid.UUID) error {
	_, err := ctl.c.SignalWithStartWorkflow(ctx, workflows.WebhookWorkflowID(webhookID), workflows.SignalReenable, nil,
		workflows.WebhookStart(webhookID), workflows.WebhookWorkflowName, workflows.WebhookInput{WebhookID: webhookID})
	if err != nil {
		return fmt.Errorf("signal reenable to webhook %s: %w", webhookID, err)
	}
	return nil
}

// ReportChain sends r to the webhook's workflow, starting it when it does
// not run.
func (ctl *Control) ReportChain(ctx context.Context, r furrow.ChainReport) error {
	_, err := ctl.c.SignalWithStartWorkflow(ctx, workflows.WebhookWorkflowID(r.WebhookID), workflows.SignalChain, r,
		workflows.WebhookStart(r.WebhookID), workflows.WebhookWorkflowName, workflows.WebhookInput{WebhookID: r.WebhookID})
	return err
}

// Redeliver starts a new delivery workflow of each event to w and returns
// how many were started. It stops at the first failed start and returns
// the count so far with the error.
func (ctl *Control) Redeliver(ctx context.Context, w furrow.Webhook, events []furrow.Event) (int, error) {
	n := 0
	for _, e := range events {
		id := workflows.RedeliveryWorkflowID(w.ID, e.ID, uuid.NewString())
		opts, in := workflows.DeliveryStart(id, w, e, ctl.Schedule)
		if _, err := ctl.c.ExecuteWorkflow(ctx, opts, workflows.DeliveryWorkflowName, in); err != nil && !workflows.AlreadyStarted(err) {
			return n, fmt.Errorf("start redelivery of %s to webhook %s: %w", e.ID, w.ID, err)
		}
		n++
	}
	return n, nil
}
