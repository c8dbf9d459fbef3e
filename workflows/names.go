// Package workflows defines the Temporal workflows of the delivery engine and
// every name the API, the dispatcher and the worker share: the task queue,
// workflow IDs, signal names and search attributes.
package workflows

import (
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/furrowhq/furrow"
)

// TaskQueue is the task queue of every Furrow workflow and activity.
const TaskQueue = "furrow"

// Registered workflow type names. They are part of the history, so renaming
// one breaks running workflows.
const (
	DeliveryWorkflowName  = "Delivery"
	WebhookWorkflowName   = "Webhook"
	RedeliverWorkflowName = "Redeliver"
)

// Signals of the per-webhook workflow.
const (
	// SignalReenable re-enables a webhook and resets its failure counter.
	// Support sends it with no payload, from the Temporal UI or CLI; the
	// API sends ReenableByAPI, so that the webhook.enabled event says who.
	SignalReenable = "reenable"
	// SignalChain reports the end of a delivery chain (a
	// furrow.ChainReport).
	// Only delivery workflows send it, through the ReportChain activity.
	SignalChain = "chain"
	// SignalDeleted, with no payload, makes the workflow read its webhook
	// and end when the webhook is gone. The API sends it once a delete
	// has committed (support may too); sent for a webhook that still
	// exists, it changes nothing.
	SignalDeleted = "deleted"
)

// ReenableByAPI is the payload of SignalReenable sent by the API.
const ReenableByAPI = furrow.EnabledByAPI

// QueryState is the query the per-webhook workflow answers with its
// WebhookState, for the Temporal UI's Queries tab and
// `temporal workflow query --type state`.
const QueryState = "state"

// WebhookState is the part of a webhook the per-webhook workflow owns,
// carried over by continue-as-new and answered to QueryState. Failures
// counts consecutive failed chains. Gone is true when the webhook no longer
// exists. LastChange says what last changed Enabled or Failures, and
// ChangedAt when; both are empty until the workflow changes them. Seq is
// the number of the last change of Enabled (the webhook's StateSeq), so
// that the next is written once whatever runs, retries and restarts come
// between.
type WebhookState struct {
	WebhookID  uuid.UUID
	Enabled    bool
	Failures   int
	Seq        int64 `json:",omitempty"`
	Gone       bool
	LastChange string     `json:",omitempty"`
	ChangedAt  *time.Time `json:",omitempty"`
	// ReenabledAtMs is when the webhook was last re-enabled (0: never, in
	// this workflow's memory): failures that ended before it do not count.
	ReenabledAtMs int64 `json:",omitempty"`
}

// Search attribute keys of delivery workflows, set when they start, all of
// type keyword.
var (
	SearchWebhookID = temporal.NewSearchAttributeKeyKeyword("FurrowWebhookId")
	SearchEventID   = temporal.NewSearchAttributeKeyKeyword("FurrowEventId")
	SearchFarmID    = temporal.NewSearchAttributeKeyKeyword("FurrowFarmId")
	SearchEventType = temporal.NewSearchAttributeKeyKeyword("FurrowEventType")
)

// Search attribute keys a delivery workflow sets when its chain ends: the
// outcome (Delivered, Failed or Skipped) and the last attempt's status code
// (0 when there was no answer).
var (
	SearchOutcome    = temporal.NewSearchAttributeKeyKeyword("FurrowOutcome")
	SearchLastStatus = temporal.NewSearchAttributeKeyInt64("FurrowLastStatus")
)

// searchKeys are every custom search attribute of Furrow's workflows.
var searchKeys = []temporal.SearchAttributeKey{
	SearchWebhookID, SearchEventID, SearchFarmID, SearchEventType, SearchOutcome, SearchLastStatus,
}

// SearchAttributes returns the custom search attributes a Temporal
// namespace must have registered, by name, with their types.
func SearchAttributes() map[string]enumspb.IndexedValueType {
	m := make(map[string]enumspb.IndexedValueType, len(searchKeys))
	for _, k := range searchKeys {
		m[k.GetName()] = k.GetValueType()
	}
	return m
}

// DeliveryWorkflowID is the deterministic ID of the delivery of an event to
// a webhook, so that starting it twice is harmless.
func DeliveryWorkflowID(webhookID uuid.UUID, eventID string) string {
	return fmt.Sprintf("delivery/%s/%s", webhookID, eventID)
}

// RedeliveryWorkflowID is the ID of a redelivery; suffix makes it unique.
func RedeliveryWorkflowID(webhookID uuid.UUID, eventID, suffix string) string {
	return DeliveryWorkflowID(webhookID, eventID) + "/redeliver/" + suffix
}

// WebhookWorkflowID is the ID of the per-webhook workflow.
func WebhookWorkflowID(webhookID uuid.UUID) string {
	return fmt.Sprintf("webhook/%s", webhookID)
}

// DeliverySearchAttributes returns the search attributes of the delivery of
// e to a webhook.
func DeliverySearchAttributes(webhookID uuid.UUID, e furrow.Event) temporal.SearchAttributes {
	return temporal.NewSearchAttributes(
		SearchWebhookID.ValueSet(webhookID.String()),
		SearchEventID.ValueSet(e.ID),
		SearchFarmID.ValueSet(e.FarmID.String()),
		SearchEventType.ValueSet(e.Type),
	)
}

// DeliveryStart returns the start options and input of the delivery of e
// to webhook w under workflow ID id. The options carry the summary and
// details the Temporal UI shows, with w's host but never its secret, path
// or query. A closed or running workflow with the same ID makes the start
// fail with WorkflowExecutionAlreadyStarted, which callers treat as
// success. An empty schedule means furrow.DefaultSchedule.
func DeliveryStart(id string, w furrow.Webhook, e furrow.Event, schedule []time.Duration) (client.StartWorkflowOptions, DeliveryInput) {
	host := webhookHost(w.URL)
	opts := client.StartWorkflowOptions{
		ID:                                       id,
		TaskQueue:                                TaskQueue,
		WorkflowIDReusePolicy:                    enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
		WorkflowIDConflictPolicy:                 enumspb.WORKFLOW_ID_CONFLICT_POLICY_FAIL,
		TypedSearchAttributes:                    DeliverySearchAttributes(w.ID, e),
		EnableEagerStart:                         true,
		WorkflowExecutionErrorWhenAlreadyStarted: true,
		StaticSummary:                            deliverySummary(host, e),
		StaticDetails:                            deliveryDetails(w.ID, host, e, schedule),
	}
	in := DeliveryInput{WebhookID: w.ID, EventID: e.ID, FarmID: e.FarmID, EventType: e.Type, Schedule: furrow.Durations(schedule), Rev: Revision}
	return opts, in
}

// WebhookStart returns the start options of the per-webhook workflow, for
// signal-with-start.
func WebhookStart(webhookID uuid.UUID) client.StartWorkflowOptions {
	return client.StartWorkflowOptions{ID: WebhookWorkflowID(webhookID), TaskQueue: TaskQueue}
}

// AlreadyStarted reports whether err says the workflow ID is taken, which
// for a deterministic delivery ID means the start already happened.
func AlreadyStarted(err error) bool {
	var started *serviceerror.WorkflowExecutionAlreadyStarted
	return errors.As(err, &started)
}
