package workflows

import (
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/furrowhq/furrow"
	"github.com/furrowhq/furrow/activities"
)

// redeliverChunk bounds the deliveries one activity of a redelivery starts.
const redeliverChunk = 100

// RedeliverInput is the input of a redelivery: the events to deliver once
// more to a webhook, without their data, and the redelivery's name, which
// names their delivery workflows. Each part the workflow starts is the same
// input with its chunk of the events.
type RedeliverInput = activities.StartRedeliveriesInput

// RedeliverResult says how many deliveries a redelivery started, and
// whether it stopped because the webhook was deleted: its parts' results
// added up.
type RedeliverResult = activities.StartRedeliveriesResult

// Redeliver starts a new delivery of each of in's events, a chunk at a
// time. The API starts it, so that asking for a thousand deliveries costs
// the request one start; the starts are then durable and survive a
// restart, and a retried chunk starts none twice.
func Redeliver(ctx workflow.Context, in RedeliverInput) (RedeliverResult, error) {
	ctx = workflow.WithActivityOptions(ctx, redeliverOptions)
	var a *activities.Activities
	var out RedeliverResult
	for chunk := range slices.Chunk(in.Events, redeliverChunk) {
		part := in
		part.Events = chunk
		var r RedeliverResult
		if err := workflow.ExecuteActivity(ctx, a.StartRedeliveries, part).Get(ctx, &r); err != nil {
			return out, err
		}
		out.Started += r.Started
		if r.Gone {
			out.Gone = true
			break
		}
	}
	return out, nil
}

// redeliverOptions retry a chunk until it is started: the redelivery was
// accepted, and a Temporal or database outage must not drop it.
var redeliverOptions = workflow.ActivityOptions{
	StartToCloseTimeout: 2 * time.Minute,
	RetryPolicy:         &temporal.RetryPolicy{InitialInterval: time.Second, MaximumInterval: time.Minute},
}

// RedeliverWorkflowID is the ID of the redelivery batch to a webhook.
func RedeliverWorkflowID(webhookID uuid.UUID, batch string) string {
	return fmt.Sprintf("redeliver/%s/%s", webhookID, batch)
}

// RedeliverStart returns the start options and input of the redelivery of
// events to w under the name batch. The input holds the events without
// their data, and the options carry the webhook's and farm's search
// attributes and a summary with w's host, never its secret or path.
func RedeliverStart(w furrow.Webhook, events []furrow.Event, batch string, schedule []time.Duration) (client.StartWorkflowOptions, RedeliverInput) {
	bare := make([]furrow.Event, len(events))
	for i, e := range events {
		e.Data = nil
		bare[i] = e
	}
	opts := client.StartWorkflowOptions{
		ID:        RedeliverWorkflowID(w.ID, batch),
		TaskQueue: TaskQueue,
		TypedSearchAttributes: temporal.NewSearchAttributes(
			SearchWebhookID.ValueSet(w.ID.String()),
			SearchFarmID.ValueSet(w.FarmID.String()),
		),
		StaticSummary: fmt.Sprintf("redeliver %d events to %s, farm %s", len(events), webhookHost(w.URL), w.FarmID),
	}
	in := RedeliverInput{WebhookID: w.ID, Batch: batch, Events: bare, Schedule: furrow.Durations(schedule)}
	return opts, in
}
