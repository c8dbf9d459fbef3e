package e2e

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"
	batchpb "go.temporal.io/api/batch/v1"
	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/furrowhq/furrow/internal/testenv"
	"github.com/furrowhq/furrow/workflows"
)

// TestBatchResetReplaysFailedDeliveries: after a receiver's outage, the
// failed deliveries of its webhook are found with one visibility query and
// delivered again with one batch reset, as the Temporal UI's batch reset
// and `temporal workflow reset --query` do, on `furrow dev`.
func TestBatchResetReplaysFailedDeliveries(t *testing.T) {
	testenv.SkipShort(t, "the furrow binary (furrow dev, embedded Temporal server) and a webhook receiver")
	e := newDevEnv(t, "FURROW_RETRY_SCHEDULE", "1s,1s")
	hook := e.createWebhook(t, map[string]any{"url": e.rc.URL()})
	e.rc.setSecret(hook.Secret)
	tc, err := client.Dial(client.Options{HostPort: e.temporal, Namespace: "default"})
	if err != nil {
		t.Fatal(err)
	}
	defer tc.Close()
	checkBatchReset(t, e, tc, hook.ID)
}

// failedChains is how many chains checkBatchReset fails: fewer than the
// five that disable a webhook.
const failedChains = 4

// checkBatchReset fails failedChains chains of a webhook that has had none
// (the last one rejected with 404, the others answered 503 to the end),
// finds them by visibility queries, makes the receiver healthy and resets
// them all by query to their first workflow task: every event must then be
// delivered exactly once more, as one new chain each, and the webhook's
// failure counter go back to 0. Metrics are checked when e.f has them.
func checkBatchReset(t *testing.T, e *devEnv, tc client.Client, hookID string) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var before metrics
	if e.f.MetricsURL != "" {
		before = scrape(t, e.f.MetricsURL)
	}
	plan := map[string]int{} // event -> status, guarded by e.rc.mu
	e.rc.setAnswer(func(event string, _ int) int {
		if _, ok := plan[event]; !ok {
			plan[event] = 503
			if len(plan) == failedChains {
				plan[event] = 404
			}
		}
		return plan[event]
	})
	since := time.Now().UTC().Add(-time.Second)
	for i := range failedChains {
		e.postReading(t, 500+i)
	}
	byHook := func(clause string) string { return fmt.Sprintf("FurrowWebhookId = '%s' AND %s", hookID, clause) }
	failed := byHook("ExecutionStatus = 'Failed'")
	waitListed(ctx, t, tc, failed, failedChains)
	for query, want := range map[string]int{
		byHook("FurrowOutcome = 'failed'"):    failedChains,
		byHook("FurrowLastStatus = 503"):      failedChains - 1,
		byHook("FurrowLastStatus = 404"):      1,
		byHook("ExecutionStatus != 'Failed'"): 0,
		fmt.Sprintf("FurrowFarmId = '%s' AND ExecutionStatus = 'Failed' AND CloseTime > '%s'", e.fx.FarmID, since.Format(time.RFC3339)): failedChains,
	} {
		if got := listed(ctx, t, tc, query); got != want {
			t.Errorf("%s lists %d workflows, want %d", query, got, want)
		}
	}
	e.checkChainFailures(ctx, t, tc, hookID, plan)
	waitFor(t, time.Minute, func() bool {
		w := e.webhook(t, hookID)
		return w.Enabled && w.ConsecutiveFailures == failedChains
	})
	if before != nil {
		eventually(t, e.f.MetricsURL, func(m metrics) bool {
			return m.diff(before, `furrow_delivery_chains_total{outcome="failed"}`) >= failedChains
		}).expectDiff(t, before, map[string]float64{
			`furrow_delivery_chains_total{outcome="failed"}`:    failedChains,
			`furrow_delivery_chains_total{outcome="delivered"}`: 0,
		})
		before = scrape(t, e.f.MetricsURL)
	}

	e.rc.setAnswer(func(string, int) int { return 204 })
	e.rc.drain()
	batchReset(ctx, t, tc, failed)
	redelivered := map[string]bool{}
	for range failedChains {
		d := e.rc.next(t, time.Minute)
		e.rc.mu.Lock()
		_, planned := plan[d.EventID]
		e.rc.mu.Unlock()
		if !planned || redelivered[d.EventID] || d.Status != 204 || !d.Verified {
			t.Fatalf("after the batch reset got %+v; already had %v", d, redelivered)
		}
		redelivered[d.EventID] = true
	}
	e.rc.quiet(t, 3*time.Second)
	waitFor(t, time.Minute, func() bool {
		w := e.webhook(t, hookID)
		return w.Enabled && w.ConsecutiveFailures == 0
	})
	waitListed(ctx, t, tc, byHook("FurrowOutcome = 'delivered' AND ExecutionStatus = 'Completed'"), failedChains)
	delivered := map[string]int{}
	for _, a := range e.attempts(t, hookID) {
		if a.StatusCode == 204 {
			delivered[a.EventID]++
			if a.Attempt != 1 {
				t.Errorf("redelivery of %s logged as attempt %d, want 1 of a new chain", a.EventID, a.Attempt)
			}
		}
	}
	for event := range redelivered {
		if delivered[event] != 1 {
			t.Errorf("attempt log has %d deliveries of %s, want 1", delivered[event], event)
		}
	}
	if before != nil {
		eventually(t, e.f.MetricsURL, func(m metrics) bool {
			return m.diff(before, `furrow_delivery_chains_total{outcome="delivered"}`) >= failedChains
		}).expectDiff(t, before, map[string]float64{
			`furrow_delivery_chains_total{outcome="delivered"}`:  failedChains,
			`furrow_delivery_chains_total{outcome="failed"}`:     0,
			`furrow_delivery_attempts_total{result="delivered"}`: failedChains,
		})
	}
}

// checkChainFailures checks that each failed delivery workflow failed with
// a non-retryable error saying its last attempt's answer, and that its
// chain used the whole schedule only when answered 503.
func (e *devEnv) checkChainFailures(ctx context.Context, t *testing.T, tc client.Client, hookID string, plan map[string]int) {
	t.Helper()
	e.rc.mu.Lock()
	hits := map[string]int{}
	for _, d := range e.rc.got {
		hits[d.EventID]++
	}
	statuses := map[string]int{}
	for event, status := range plan {
		statuses[event] = status
	}
	e.rc.mu.Unlock()
	total := 0 // attempts of a chain answered 503 to the end
	for event, status := range statuses {
		if status == 503 {
			total = hits[event]
		}
	}
	for event, status := range statuses {
		want := fmt.Sprintf("attempt %d of %d answered 503", total, total)
		if status == 404 {
			want = fmt.Sprintf("attempt 1 of %d answered 404, not retried", total)
		}
		err := tc.GetWorkflow(ctx, workflows.DeliveryWorkflowID(uuid.MustParse(hookID), event), "").Get(ctx, nil)
		var appErr *temporal.ApplicationError
		if !errors.As(err, &appErr) || appErr.Message() != want || !appErr.NonRetryable() || appErr.Type() != workflows.ErrorTypeChainFailed {
			t.Errorf("delivery of %s ended with %v, want the non-retryable %q", event, err, want)
		}
	}
}

// batchReset resets every workflow that query lists to its first workflow
// task, with one batch operation, as `temporal workflow reset --query …
// --type FirstWorkflowTask` and the UI's batch reset do, and waits until
// the operation has reset them all.
func batchReset(ctx context.Context, t *testing.T, tc client.Client, query string) {
	t.Helper()
	job := uuid.NewString()
	_, err := tc.WorkflowService().StartBatchOperation(ctx, &workflowservice.StartBatchOperationRequest{
		Namespace:       "default",
		VisibilityQuery: query,
		JobId:           job,
		Reason:          "receiver fixed",
		Operation: &workflowservice.StartBatchOperationRequest_ResetOperation{ResetOperation: &batchpb.BatchOperationReset{
			Identity: "e2e",
			Options:  &commonpb.ResetOptions{Target: &commonpb.ResetOptions_FirstWorkflowTask{FirstWorkflowTask: &emptypb.Empty{}}},
		}},
	})
	if err != nil {
		t.Fatalf("start the batch reset: %v", err)
	}
	var d *workflowservice.DescribeBatchOperationResponse
	waitFor(t, time.Minute, func() bool {
		d, err = tc.WorkflowService().DescribeBatchOperation(ctx, &workflowservice.DescribeBatchOperationRequest{Namespace: "default", JobId: job})
		return err == nil && d.GetState() != enumspb.BATCH_OPERATION_STATE_RUNNING
	})
	if d.GetState() != enumspb.BATCH_OPERATION_STATE_COMPLETED || d.GetTotalOperationCount() != failedChains ||
		d.GetCompleteOperationCount() != failedChains || d.GetFailureOperationCount() != 0 {
		t.Fatalf("batch reset %s", d)
	}
}

// listed counts the workflows query lists.
func listed(ctx context.Context, t *testing.T, tc client.Client, query string) int {
	t.Helper()
	resp, err := tc.CountWorkflow(ctx, &workflowservice.CountWorkflowExecutionsRequest{Namespace: "default", Query: query})
	if err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return int(resp.GetCount())
}

// waitListed waits until query lists want workflows.
func waitListed(ctx context.Context, t *testing.T, tc client.Client, query string, want int) {
	t.Helper()
	var got int
	deadline := time.Now().Add(2 * time.Minute)
	for got = listed(ctx, t, tc, query); got != want; got = listed(ctx, t, tc, query) {
		if time.Now().After(deadline) {
			t.Fatalf("%s lists %d workflows, want %d", query, got, want)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// drain forgets the requests nobody read.
func (rc *receiver) drain() {
	for {
		select {
		case <-rc.arrivals:
		default:
			return
		}
	}
}
