package workflows_test

import (
	"cmp"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/furrowhq/furrow"
	"github.com/furrowhq/furrow/activities"
	ftemporal "github.com/furrowhq/furrow/temporal"
	"github.com/furrowhq/furrow/workflows"
)

// An attempt whose worker stopped during it (its activity timed out) still
// has its row in the delivery log, and the chain goes on to the next
// attempt: 503, lost, 204 leave three rows and a delivery at attempt 3.
// Recorded before the change, the lost attempt left no row.
func TestDeliveryLostAttemptHasItsRow(t *testing.T) {
	for _, c := range []struct {
		name    string
		version workflow.Version
		rows    []string
	}{
		{"current", 1, []string{"503", furrow.AttemptLost, "204"}},
		{"recorded before", workflow.DefaultVersion, []string{"503", "204"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv, hits := endpoint(t, 503, 204)
			f := newFixture(srv.URL, 0)
			env := newEnv()
			acts := &activities.Activities{Webhooks: f.store, HTTP: srv.Client(), Clock: furrow.ClockFunc(env.Now), Reporter: f.reporter}
			ftemporal.Register(env, acts)
			env.OnActivity(acts.Deliver, mock.Anything, mock.Anything).Return(func(ctx context.Context, in activities.DeliverInput) (activities.DeliverResult, error) {
				if in.FirstAttempt == 2 {
					return activities.DeliverResult{}, temporal.NewTimeoutError(enumspb.TIMEOUT_TYPE_START_TO_CLOSE, nil)
				}
				return acts.Deliver(ctx, in)
			})
			if c.version != 1 {
				env.OnGetVersion(workflows.ChangeLostAttemptRow, workflow.DefaultVersion, 1).Return(c.version)
			}
			_, in := workflows.DeliveryStart("id", f.webhook, f.event, []time.Duration{time.Minute, time.Minute})
			env.ExecuteWorkflow(workflows.DeliveryWorkflowName, in)
			res := deliveryResult(t, env)
			if res.Outcome != furrow.OutcomeDelivered || res.Attempts != 3 || hits.Load() != 2 {
				t.Fatalf("got %+v after %d requests, want delivered at attempt 3 after 2", res, hits.Load())
			}
			var got []string
			for _, r := range f.store.rows() {
				got = append(got, cmp.Or(r.Error, fmt.Sprint(r.StatusCode)))
			}
			if fmt.Sprint(got) != fmt.Sprint(c.rows) {
				t.Fatalf("rows = %q, want %q", got, c.rows)
			}
		})
	}
}
