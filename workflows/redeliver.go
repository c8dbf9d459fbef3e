package workflows

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/furrowhq/furrow"
	"github.com/furrowhq/furrow/activities"
)

// redeliverChunk bounds the deliveries one activity of a redelivery starts:
// a chunk of its events, or a page of a redelivery since a time.
const redeliverChunk = 100

// redeliverPagesPerRun bounds the pages one run of a redelivery since a
// time starts before it continues as new, so that its history stays small
// (each page adds about six events) whatever the count, up to
// furrow.MaxRedeliverSince.
const redeliverPagesPerRun = 200

// RedeliverInput is the input of a redelivery: the events to deliver once
// more to a webhook, without their data, and the redelivery's name, which
// names their delivery workflows. Each part the workflow starts is the
// embedded input with its chunk of the events.
//
// A redelivery since a time has Since instead of Events: the workflow
// reads the set's events a page at a time, so that neither the request nor
// the history holds them all. After is where the next page starts and
// Started how many the runs before started, carried by continue-as-new.
type RedeliverInput struct {
	activities.StartRedeliveriesInput
	Since   *furrow.RedeliverySet `json:",omitempty"`
	After   *furrow.Cursor        `json:",omitempty"`
	Started int                   `json:",omitempty"`
}

// RedeliverResult says how many deliveries a redelivery started, and
// whether it stopped because the webhook was deleted: its parts' results
// added up.
type RedeliverResult = activities.StartRedeliveriesResult

// Redeliver starts a new delivery of each of in's events, a chunk at a
// time. The API starts it, so that asking for a thousand deliveries costs
// the request one start; the starts are then durable and survive a
// restart, and a retried chunk starts none twice.
//
// A redelivery since a time (in.Since) takes its own way from its start,
// so the histories of those that name their events replay as recorded.
func Redeliver(ctx workflow.Context, in RedeliverInput) (RedeliverResult, error) {
	ctx = workflow.WithActivityOptions(ctx, redeliverOptions)
	if in.Since != nil {
		return redeliverSince(ctx, in)
	}
	var a *activities.Activities
	var out RedeliverResult
	for chunk := range slices.Chunk(in.Events, redeliverChunk) {
		part := in.StartRedeliveriesInput
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

// redeliverSince starts the deliveries of the events of in.Since a page at
// a time, from in.After, and continues as new after redeliverPagesPerRun
// pages (or when Temporal suggests it).
func redeliverSince(ctx workflow.Context, in RedeliverInput) (RedeliverResult, error) {
	var a *activities.Activities
	out := RedeliverResult{Started: in.Started}
	page := activities.StartRedeliveryPageInput{WebhookID: in.WebhookID, Batch: in.Batch, Set: *in.Since,
		After: in.After, Limit: redeliverChunk, Schedule: in.Schedule}
	for pages := 0; ; pages++ {
		if pages >= redeliverPagesPerRun || (pages > 0 && workflow.GetInfo(ctx).GetContinueAsNewSuggested()) {
			next := in
			next.After, next.Started = page.After, out.Started
			return out, workflow.NewContinueAsNewError(ctx, RedeliverWorkflowName, next)
		}
		var r activities.StartRedeliveryPageResult
		if err := workflow.ExecuteActivity(ctx, a.StartRedeliveryPage, page).Get(ctx, &r); err != nil {
			return out, err
		}
		out.Started += r.Started
		if r.Gone {
			out.Gone = true
			return out, nil
		}
		if r.Next == nil {
			return out, nil
		}
		page.After = r.Next
	}
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

// RedeliverBatch names a redelivery to a webhook: a fresh name, or, for a
// request that gave an idempotency key, one derived from the webhook and
// the key (a digest: the key is the client's text), so that the request
// sent again names the same redelivery and starts nothing twice.
func RedeliverBatch(webhookID uuid.UUID, key string) string {
	if key == "" {
		return uuid.NewString()
	}
	sum := sha256.Sum256([]byte(webhookID.String() + "\x00" + key))
	return "key-" + hex.EncodeToString(sum[:16])
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
	ids := make([]string, len(events))
	for i, e := range events {
		ids[i] = e.ID
	}
	request := "events:" + strings.Join(ids, ",")
	if len(ids) == 1 {
		request = "event:" + ids[0]
	}
	opts := redeliverOptionsOf(w, batch, request, fmt.Sprintf("redeliver %d events to %s, farm %s", len(events), webhookHost(w.URL), w.FarmID))
	in := RedeliverInput{StartRedeliveriesInput: activities.StartRedeliveriesInput{
		WebhookID: w.ID, Batch: batch, Events: bare, Schedule: furrow.Durations(schedule)}}
	return opts, in
}

// RedeliverSinceStart returns the start options and input of the
// redelivery of the events of set to w under the name batch, as
// RedeliverStart does. The input names no event.
func RedeliverSinceStart(w furrow.Webhook, set furrow.RedeliverySet, batch string, schedule []time.Duration) (client.StartWorkflowOptions, RedeliverInput) {
	since := time.UnixMilli(set.SinceMs).UTC().Format(time.RFC3339)
	opts := redeliverOptionsOf(w, batch, "since:"+strconv.FormatInt(set.SinceMs, 10), fmt.Sprintf("redeliver %d events since %s to %s, farm %s", set.Count, since, webhookHost(w.URL), w.FarmID))
	in := RedeliverInput{StartRedeliveriesInput: activities.StartRedeliveriesInput{
		WebhookID: w.ID, Batch: batch, Schedule: furrow.Durations(schedule)}, Since: &set}
	return opts, in
}

// redeliverOptionsOf are the start options of the redelivery batch to w:
// the webhook's and farm's search attributes, summary, and the digest of
// request, what the redelivery asks for, in its memo. A batch's ID is
// never started twice, even after its workflow closed (the start then
// fails with WorkflowExecutionAlreadyStarted, see AlreadyStarted), so that
// a request sent again under its idempotency key starts nothing.
func redeliverOptionsOf(w furrow.Webhook, batch, request, summary string) client.StartWorkflowOptions {
	return client.StartWorkflowOptions{
		ID:                                       RedeliverWorkflowID(w.ID, batch),
		Memo:                                     map[string]any{MemoRedeliverRequest: redeliverDigest(request)},
		TaskQueue:                                TaskQueue,
		WorkflowIDReusePolicy:                    enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
		WorkflowIDConflictPolicy:                 enumspb.WORKFLOW_ID_CONFLICT_POLICY_FAIL,
		WorkflowExecutionErrorWhenAlreadyStarted: true,
		TypedSearchAttributes: temporal.NewSearchAttributes(
			SearchWebhookID.ValueSet(w.ID.String()),
			SearchFarmID.ValueSet(w.FarmID.String()),
		),
		StaticSummary: summary,
	}
}

// MemoRedeliverRequest is the memo field of a redelivery's workflow that
// holds the digest of what its request asked for (an event, or a time
// since), set at its start and carried by continue-as-new. The same
// idempotency key names the same workflow whatever the body, so the
// digest is what tells the request sent again from another request under
// a reused key (SameRedeliverRequest).
const MemoRedeliverRequest = "FurrowRedeliverRequest"

// redeliverDigest is the digest of request ("event:<id>", "events:<ids>"
// or "since:<ms>"), hashed so that the memo, which the Temporal UI shows,
// holds no more than it needs to compare.
func redeliverDigest(request string) string {
	sum := sha256.Sum256([]byte(request))
	return hex.EncodeToString(sum[:16])
}

// SameRedeliverRequest reports whether the redelivery whose workflow has
// memo asks for what opts, from RedeliverStart or RedeliverSinceStart,
// would start. A memo without the digest is of a workflow started before
// redeliveries recorded it: it counts as the same request, as every
// request under a key did then, rather than refusing a client's retry.
func SameRedeliverRequest(opts client.StartWorkflowOptions, memo *commonpb.Memo) (bool, error) {
	p := memo.GetFields()[MemoRedeliverRequest]
	if p == nil {
		return true, nil
	}
	var got string
	if err := converter.GetDefaultDataConverter().FromPayload(p, &got); err != nil {
		return false, fmt.Errorf("read memo %s: %w", MemoRedeliverRequest, err)
	}
	return got == opts.Memo[MemoRedeliverRequest], nil
}
