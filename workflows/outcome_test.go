package workflows_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/furrowhq/furrow"
	"github.com/furrowhq/furrow/activities"
	ftemporal "github.com/furrowhq/furrow/temporal"
	"github.com/furrowhq/furrow/workflows"
)

// ended is how a delivery workflow ended, as the Temporal UI and its
// visibility queries see it.
type ended struct {
	res      workflows.DeliveryResult
	failure  string // the message of the error that failed it; "" if it completed
	upserted []temporal.SearchAttributes
}

// runEnded runs f's delivery against client with time skipping; version,
// unless nil, stands for the version of the chain-end change the
// workflow's history holds.
func runEnded(t *testing.T, f *fixture, client *http.Client, schedule []time.Duration, version *workflow.Version) ended {
	t.Helper()
	env := newEnv()
	rec := &upserts{}
	env.SetWorkerOptions(worker.Options{Interceptors: []interceptor.WorkerInterceptor{rec}, DeadlockDetectionTimeout: deadlockBound})
	ftemporal.Register(env, &activities.Activities{Webhooks: f.store, HTTP: client,
		Clock: furrow.ClockFunc(env.Now), Reporter: f.reporter})
	if version != nil {
		env.OnGetVersion("outcome-search-attributes", workflow.DefaultVersion, 1).Return(*version)
	}
	_, in := workflows.DeliveryStart("id", f.webhook, f.event, schedule)
	if version != nil {
		in.Rev = 0 // a start from before revisions, which asks for versions
	}
	env.ExecuteWorkflow(workflows.DeliveryWorkflowName, in)
	if !env.IsWorkflowCompleted() {
		t.Fatal("workflow did not end")
	}
	e := ended{res: deliveryResult(t, env), upserted: rec.all()}
	var appErr *temporal.ApplicationError
	if errors.As(env.GetWorkflowError(), &appErr) {
		e.failure = appErr.Message()
	}
	return e
}

func TestChainEndSetsOutcomeAndFailsFailedChains(t *testing.T) {
	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close()
	for _, tc := range []struct {
		name     string
		statuses []int // nil: nothing listens
		schedule []time.Duration
		deleted  bool
		outcome  string
		status   int64
		failure  string // prefix
	}{
		{name: "delivered", statuses: []int{503, 204}, outcome: furrow.OutcomeDelivered, status: 204},
		{name: "retried to the end", statuses: []int{503}, schedule: []time.Duration{time.Minute, time.Hour},
			outcome: furrow.OutcomeFailed, status: 503, failure: "attempt 3 of 3 answered 503"},
		{name: "not retried", statuses: []int{404}, outcome: furrow.OutcomeFailed, status: 404,
			failure: "attempt 1 of 8 answered 404, not retried"},
		{name: "no answer", schedule: []time.Duration{time.Minute}, outcome: furrow.OutcomeFailed,
			failure: "attempt 2 of 2 failed (connection failed: "},
		{name: "skipped", statuses: []int{200}, deleted: true, outcome: furrow.OutcomeSkipped},
	} {
		t.Run(tc.name, func(t *testing.T) {
			url, client := closed.URL, http.DefaultClient
			if tc.statuses != nil {
				srv, _ := endpoint(t, tc.statuses...)
				url, client = srv.URL, srv.Client()
			}
			f := newFixture(url, 0)
			if tc.deleted {
				f.store.remove(f.webhook)
			}
			e := runEnded(t, f, client, tc.schedule, nil)
			if e.res.Outcome != tc.outcome || !strings.HasPrefix(e.failure, tc.failure) || (tc.failure == "") != (e.failure == "") {
				t.Errorf("ended %+v with failure %q, want %s with %q", e.res, e.failure, tc.outcome, tc.failure)
			}
			if len(e.upserted) != 1 {
				t.Fatalf("%d upserts, want 1", len(e.upserted))
			}
			outcome, _ := e.upserted[0].GetKeyword(workflows.SearchOutcome)
			status, ok := e.upserted[0].GetInt64(workflows.SearchLastStatus)
			if outcome != tc.outcome || status != tc.status || !ok || e.upserted[0].Size() != 2 {
				t.Errorf("upserted %s=%q %s=%d (set: %v), want %q and %d", workflows.SearchOutcome.GetName(), outcome,
					workflows.SearchLastStatus.GetName(), status, ok, tc.outcome, tc.status)
			}
			if tc.status == 503 || tc.status == 404 {
				assertReports(t, f, true, int(tc.status)) // before failing, exactly once
			}
		})
	}
}

// TestChainEndBeforeOutcomeChange: a workflow whose history was recorded
// before the change ends as it did then, Completed with its outcome in the
// result and no search attribute set.
func TestChainEndBeforeOutcomeChange(t *testing.T) {
	srv, _ := endpoint(t, 503)
	f := newFixture(srv.URL, 0)
	before := workflow.DefaultVersion
	e := runEnded(t, f, srv.Client(), []time.Duration{time.Minute}, &before)
	if e.res.Outcome != furrow.OutcomeFailed || e.res.Attempts != 2 || e.failure != "" || len(e.upserted) != 0 {
		t.Errorf("ended %+v, failure %q, %d upserts; want a completed failed chain without upserts", e.res, e.failure, len(e.upserted))
	}
	assertReports(t, f, true, 503)
}

// upserts records the search attributes that workflows upsert.
type upserts struct {
	interceptor.WorkerInterceptorBase
	mu  sync.Mutex
	got []temporal.SearchAttributes
}

func (u *upserts) all() []temporal.SearchAttributes {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]temporal.SearchAttributes(nil), u.got...)
}

func (u *upserts) InterceptWorkflow(_ workflow.Context, next interceptor.WorkflowInboundInterceptor) interceptor.WorkflowInboundInterceptor {
	i := &upsertInbound{rec: u}
	i.Next = next
	return i
}

type upsertInbound struct {
	interceptor.WorkflowInboundInterceptorBase
	rec *upserts
}

func (i *upsertInbound) Init(out interceptor.WorkflowOutboundInterceptor) error {
	o := &upsertOutbound{rec: i.rec}
	o.Next = out
	return i.Next.Init(o)
}

type upsertOutbound struct {
	interceptor.WorkflowOutboundInterceptorBase
	rec *upserts
}

func (o *upsertOutbound) UpsertTypedSearchAttributes(ctx workflow.Context, updates ...temporal.SearchAttributeUpdate) error {
	o.rec.mu.Lock()
	o.rec.got = append(o.rec.got, temporal.NewSearchAttributes(updates...))
	o.rec.mu.Unlock()
	return o.Next.UpsertTypedSearchAttributes(ctx, updates...)
}
