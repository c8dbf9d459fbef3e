package temporal

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"

	"github.com/furrowhq/furrow"
	"github.com/furrowhq/furrow/activities"
	"github.com/furrowhq/furrow/workflows"
)

// Control is the furrow.DeliveryControl backed by Temporal: what the API
// asks of the delivery engine.
type Control struct {
	c        client.Client
	schedule []time.Duration
	metrics  StartCounter
}

// StartCounter counts the delivery workflows a Control starts: test
// deliveries and redeliveries. cmd/furrow wires *telemetry.Metrics, whose
// WorkflowStarted the dispatcher's dispatch.Metrics calls too, so that
// furrow_dispatch_workflows_started_total counts every delivery workflow.
type StartCounter interface {
	// WorkflowStarted counts a delivery workflow started; one that was
	// started already is not counted.
	WorkflowStarted()
}

type noStarts struct{}

func (noStarts) WorkflowStarted() {}

var (
	_ furrow.DeliveryControl = (*Control)(nil)
	_ furrow.WebhookControl  = (*Control)(nil)
	_ activities.Redeliverer = (*Control)(nil)
)

// NewControl returns a Control using c whose redeliveries follow schedule;
// an empty one means furrow.DefaultSchedule.
func NewControl(c client.Client, schedule []time.Duration) *Control {
	return &Control{c: c, schedule: schedule, metrics: noStarts{}}
}

// WithMetrics returns a copy of ctl that counts the delivery workflows it
// starts in m; a nil m counts nothing.
func (ctl *Control) WithMetrics(m StartCounter) *Control {
	c := *ctl
	c.metrics = m
	if m == nil {
		c.metrics = noStarts{}
	}
	return &c
}

// Reenable sends SignalReenable to the webhook's workflow, starting it when
// it does not run, with workflows.ReenableByAPI as its payload so that the
// webhook.enabled event says the API enabled it. It returns the Temporal
// error when the signal cannot be sent.
func (ctl *Control) Reenable(ctx context.Context, webhookID uuid.UUID) error {
	if err := signalWebhook(ctx, ctl.c, webhookID, workflows.SignalReenable, workflows.ReenableByAPI); err != nil {
		return fmt.Errorf("signal reenable to webhook %s: %w", webhookID, err)
	}
	return nil
}

// Redeliver starts the redelivery of events to w, a workflow that starts
// their deliveries (workflows.Redeliver), and returns how many it will
// start. One start, whatever the count, keeps the request short.
func (ctl *Control) Redeliver(ctx context.Context, w furrow.Webhook, events []furrow.Event) (int, error) {
	return len(events), ctl.RedeliverOnce(ctx, w, events, "")
}

// RedeliverOnce is Redeliver under the idempotency key key: the
// redelivery's name derives from the webhook and the key
// (workflows.RedeliverBatch), so asked again it starts nothing more; the
// key reused for other events is ECONFLICT.
func (ctl *Control) RedeliverOnce(ctx context.Context, w furrow.Webhook, events []furrow.Event, key string) error {
	opts, in := workflows.RedeliverStart(w, events, workflows.RedeliverBatch(w.ID, key), ctl.schedule)
	if err := ctl.startRedelivery(ctx, opts, in); err != nil {
		return fmt.Errorf("start redelivery of %d events to webhook %s: %w", len(events), w.ID, err)
	}
	return nil
}

// RedeliverSince starts the redelivery of the events of set to w, a
// workflow that reads them a page at a time and starts their deliveries
// (workflows.Redeliver); a non-empty key names it as in RedeliverOnce.
func (ctl *Control) RedeliverSince(ctx context.Context, w furrow.Webhook, set furrow.RedeliverySet, key string) error {
	opts, in := workflows.RedeliverSinceStart(w, set, workflows.RedeliverBatch(w.ID, key), ctl.schedule)
	if err := ctl.startRedelivery(ctx, opts, in); err != nil {
		return fmt.Errorf("start redelivery of %d events since %d to webhook %s: %w", set.Count, set.SinceMs, w.ID, err)
	}
	return nil
}

// startRedelivery starts a redelivery's workflow. One started already
// under its name is the request sent again with its key, success, when it
// asked for the same (its memo's digest, see
// workflows.SameRedeliverRequest); asking for another under the key is
// ECONFLICT, and starts nothing: answering success would lose it.
func (ctl *Control) startRedelivery(ctx context.Context, opts client.StartWorkflowOptions, in workflows.RedeliverInput) error {
	_, err := ctl.c.ExecuteWorkflow(ctx, opts, workflows.RedeliverWorkflowName, in)
	if !workflows.AlreadyStarted(err) {
		return err
	}
	d, err := ctl.c.DescribeWorkflowExecution(ctx, opts.ID, "")
	if err != nil {
		return fmt.Errorf("describe the redelivery started under its key: %w", err)
	}
	same, err := workflows.SameRedeliverRequest(opts, d.GetWorkflowExecutionInfo().GetMemo())
	if err != nil {
		return err
	} else if !same {
		return errKeyReused
	}
	return nil
}

// errKeyReused answers a redelivery whose Idempotency-Key named another
// redelivery of the webhook, as a reused key does for readings.
var errKeyReused = furrow.Errorf(furrow.ECONFLICT,
	"The Idempotency-Key was already used for a different redelivery of this webhook; use a new key.")

// WebhookDeleted sends SignalDeleted to the webhook's workflow, so that it
// finds its webhook gone and ends. It starts no workflow: a webhook whose
// workflow does not run has nothing to end.
func (ctl *Control) WebhookDeleted(ctx context.Context, webhookID uuid.UUID) error {
	err := ctl.c.SignalWorkflow(ctx, workflows.WebhookWorkflowID(webhookID), "", workflows.SignalDeleted, nil)
	var notFound *serviceerror.NotFound
	if err != nil && !errors.As(err, &notFound) {
		return fmt.Errorf("signal deleted to webhook %s: %w", webhookID, err)
	}
	return nil
}

// StartRedeliveries starts a new delivery workflow of each of in.Events to
// w, named by in.Batch, and returns how many were started (one already
// started counts, so a retry starts none twice). It stops at the first
// failed start and returns the count so far with the error.
func (ctl *Control) StartRedeliveries(ctx context.Context, w furrow.Webhook, in activities.StartRedeliveriesInput) (int, error) {
	schedule := furrow.TimeDurations(in.Schedule)
	n := 0
	for _, e := range in.Events {
		opts, din := workflows.DeliveryStart(workflows.RedeliveryWorkflowID(w.ID, e.ID, in.Batch), w, e, schedule)
		if err := ctl.startDelivery(ctx, opts, din); err != nil && !workflows.AlreadyStarted(err) {
			return n, fmt.Errorf("start redelivery of %s to webhook %s: %w", e.ID, w.ID, err)
		}
		n++
	}
	return n, nil
}

// TestDelivery starts the delivery workflow of e, a stored webhook.test
// event, to w: the workflow's input marks it a test delivery by its event
// type, and its ID is the event's own, which is fresh.
func (ctl *Control) TestDelivery(ctx context.Context, w furrow.Webhook, e furrow.Event) error {
	opts, in := workflows.DeliveryStart(workflows.DeliveryWorkflowID(w.ID, e.ID), w, e, ctl.schedule)
	if err := ctl.startDelivery(ctx, opts, in); err != nil {
		return fmt.Errorf("start test delivery %s to webhook %s: %w", e.ID, w.ID, err)
	}
	return nil
}

// startDelivery starts a delivery workflow and counts it when this call
// started it; Temporal's error, workflow already started included, is
// returned for the caller to judge.
func (ctl *Control) startDelivery(ctx context.Context, opts client.StartWorkflowOptions, in workflows.DeliveryInput) error {
	_, err := ctl.c.ExecuteWorkflow(ctx, opts, workflows.DeliveryWorkflowName, in)
	if err == nil {
		ctl.metrics.WorkflowStarted()
	}
	return err
}

// signalWebhook sends signal with arg to the webhook's workflow, starting
// the workflow when it does not run.
func signalWebhook(ctx context.Context, c client.Client, webhookID uuid.UUID, signal string, arg any) error {
	_, err := c.SignalWithStartWorkflow(ctx, workflows.WebhookWorkflowID(webhookID), signal, arg,
		workflows.WebhookStart(webhookID), workflows.WebhookWorkflowName, workflows.WebhookInput{WebhookID: webhookID})
	return err
}
