package e2e

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	sdkpb "go.temporal.io/api/sdk/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	domain "github.com/furrowhq/furrow"
	"github.com/furrowhq/furrow/workflows"
)

// checkOperatorView fails a chain against an endpoint answering 503 and
// reads its delivery workflow as an operator does in the Temporal UI:
// described (summary and details), its failure, its current details, and
// the webhook workflow's state query. The webhook must be enabled with no
// failed chain.
func (e *devEnv) checkOperatorView(t *testing.T, hookID string) {
	e.rc.setAnswer(func(string, int) int { return 503 })
	e.postReading(t, 503)
	first := e.rc.next(t, 10*time.Second)
	for i := 2; i <= 8; i++ { // the dev env's schedule is seven 1 s delays
		if d := e.rc.next(t, 20*time.Second); d.EventID != first.EventID || d.Status != 503 {
			t.Fatalf("attempt %d: %+v", i, d)
		}
	}
	tc, err := client.Dial(client.Options{HostPort: e.temporal, Namespace: "default"})
	if err != nil {
		t.Fatal(err)
	}
	defer tc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	id := "delivery/" + hookID + "/" + first.EventID
	// A failed chain fails its workflow; the error's details keep the
	// result.
	var res workflows.DeliveryResult
	err = tc.GetWorkflow(ctx, id, "").Get(ctx, &res)
	var appErr *temporal.ApplicationError
	if !errors.As(err, &appErr) || appErr.Message() != "attempt 8 of 8 answered 503" || appErr.Details(&res) != nil {
		t.Fatalf("delivery workflow ended with %v, want it failed by its chain", err)
	}
	if res.Outcome != domain.OutcomeFailed || res.Attempts != 8 || res.StatusCode != 503 || res.Error != "endpoint answered 503" {
		t.Fatalf("result %+v, want failed after 8 attempts answered 503", res)
	}
	desc, err := tc.DescribeWorkflow(ctx, id, "")
	if err != nil {
		t.Fatal(err)
	}
	summary, err := desc.GetStaticSummary()
	if err != nil {
		t.Fatal(err)
	}
	host := strings.TrimPrefix(strings.TrimSuffix(e.rc.URL(), "/hook"), "https://")
	for _, want := range []string{"metric.value to " + host, e.fx.FarmID} {
		if !strings.Contains(summary, want) {
			t.Errorf("summary %q lacks %q", summary, want)
		}
	}
	details, err := desc.GetStaticDetails()
	if err != nil || !strings.Contains(details, first.EventID) || strings.Contains(details, "/hook") {
		t.Errorf("details %q (%v)", details, err)
	}
	v, err := tc.QueryWorkflow(ctx, id, "", "__temporal_workflow_metadata")
	var md sdkpb.WorkflowMetadata
	if err == nil {
		err = v.Get(&md)
	}
	if want := "failed: attempt 8 of 8 answered 503; no attempt left"; err != nil || md.GetCurrentDetails() != want {
		t.Errorf("current details %q (%v), want %q", md.GetCurrentDetails(), err, want)
	}
	var state workflows.WebhookState
	waitFor(t, 10*time.Second, func() bool {
		v, err := tc.QueryWorkflow(ctx, "webhook/"+hookID, "", workflows.QueryState)
		return err == nil && v.Get(&state) == nil && state.Failures == 1
	})
	if !state.Enabled || !strings.Contains(state.LastChange, first.EventID) || !strings.Contains(state.LastChange, "answered 503") {
		t.Errorf("webhook state %+v", state)
	}
}
