package workflows_test

import (
	"strings"
	"sync"
	"testing"
	"time"

	sdkpb "go.temporal.io/api/sdk/v1"
	"go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/furrowhq/furrow"
	"github.com/furrowhq/furrow/activities"
	ftemporal "github.com/furrowhq/furrow/temporal"
	"github.com/furrowhq/furrow/workflows"
)

func TestDeliveryStartTellsWhatGoesWhere(t *testing.T) {
	f := newFixture("https://hooks.example.com:8443/in/"+f0Secret+"?token=sekrit", 0)
	opts, in := workflows.DeliveryStart("id", f.webhook, f.event, []time.Duration{30 * time.Second, 10 * time.Minute})
	for _, want := range []string{furrow.EventTriggerFired, "hooks.example.com:8443", f.event.FarmID.String(), "2025-05-01T12:00:00Z"} {
		if !strings.Contains(opts.StaticSummary, want) {
			t.Errorf("summary %q lacks %q", opts.StaticSummary, want)
		}
	}
	for _, want := range []string{f.event.ID, f.webhook.ID.String(), "30s, 10m", "3 attempts", "webhook/" + f.webhook.ID.String()} {
		if !strings.Contains(opts.StaticDetails, want) {
			t.Errorf("details %q lack %q", opts.StaticDetails, want)
		}
	}
	for _, leak := range []string{f0Secret, "sekrit", "/in/", f.webhook.Secret} {
		if strings.Contains(opts.StaticSummary+opts.StaticDetails, leak) {
			t.Errorf("metadata shows %q:\n%s\n%s", leak, opts.StaticSummary, opts.StaticDetails)
		}
	}
	if strings.Contains(opts.StaticSummary, "\n") {
		t.Errorf("summary is not one line: %q", opts.StaticSummary)
	}
	if len(in.Schedule) != 2 || in.Schedule[1].String() != "10m" {
		t.Errorf("input schedule %v", in.Schedule)
	}
}

// f0Secret stands for a secret someone put in a webhook's path.
const f0Secret = "whsec_in-the-path"

func TestDeliveryTellsItsStory(t *testing.T) {
	srv, _ := endpoint(t, 503)
	f := newFixture(srv.URL, 0)
	env := newEnv()
	rec := &summaries{}
	env.SetWorkerOptions(worker.Options{Interceptors: []interceptor.WorkerInterceptor{rec}, DeadlockDetectionTimeout: deadlockBound})
	ftemporal.Register(env, &activities.Activities{Webhooks: f.store, HTTP: srv.Client(),
		Clock: furrow.ClockFunc(env.Now), Reporter: f.reporter})
	var waiting string
	// Attempts 1, 2, 3 come at 0, 30s and 2m30s; then the chain waits 10m.
	env.RegisterDelayedCallback(func() { waiting = currentDetails(t, env) }, 3*time.Minute+30*time.Second)
	_, in := workflows.DeliveryStart("id", f.webhook, f.event, nil)
	env.ExecuteWorkflow(workflows.DeliveryWorkflowName, in)
	res := deliveryResult(t, env)
	if res.Outcome != furrow.OutcomeFailed || res.Attempts != 8 || res.StatusCode != 503 || res.Error != "endpoint answered 503" {
		t.Errorf("result %+v, want failed after 8 attempts answered 503", res)
	}
	if want := "attempt 3 of 8 answered 503; next in 10m"; waiting != want {
		t.Errorf("details while waiting %q, want %q", waiting, want)
	}
	if got, want := currentDetails(t, env), "failed: attempt 8 of 8 answered 503; no attempt left"; got != want {
		t.Errorf("details at the end %q, want %q", got, want)
	}
	got := rec.all()
	want := []string{"attempt 1 of 8", "wait 30s before attempt 2 of 8", "attempt 2 of 8", "wait 2m before attempt 3 of 8", "attempt 3 of 8"}
	if len(got) != 16 || strings.Join(got[:5], "|") != strings.Join(want, "|") ||
		got[14] != "attempt 8 of 8" || got[15] != "report the chain to webhook/"+f.webhook.ID.String() {
		t.Errorf("summaries %q", got)
	}
}

func TestWebhookAnswersItsState(t *testing.T) {
	f := newFixture("https://example.com", 0)
	env := newEnv()
	ftemporal.Register(env, &activities.Activities{Webhooks: f.store, Clock: furrow.ClockFunc(env.Now)})
	start := env.Now()
	type seen struct {
		state   workflows.WebhookState
		details string
	}
	var views []seen
	look := func() {
		v, err := env.QueryWorkflow(workflows.QueryState)
		if err != nil {
			t.Fatalf("query %s: %v", workflows.QueryState, err)
		}
		var st workflows.WebhookState
		if err := v.Get(&st); err != nil {
			t.Fatal(err)
		}
		views = append(views, seen{st, currentDetails(t, env)})
	}
	report := furrow.ChainReport{WebhookID: f.webhook.ID, EventID: "evt_1", Failed: true, StatusCode: 503, Error: "endpoint answered 503"}
	for i := 1; i <= 5; i++ {
		env.RegisterDelayedCallback(func() { env.SignalWorkflow(workflows.SignalChain, report) }, time.Duration(i)*time.Minute)
	}
	env.RegisterDelayedCallback(look, 30*time.Second)
	env.RegisterDelayedCallback(look, 2*time.Minute+30*time.Second)
	env.RegisterDelayedCallback(look, 5*time.Minute+30*time.Second)
	env.RegisterDelayedCallback(func() { env.SignalWorkflow(workflows.SignalReenable, nil) }, 6*time.Minute)
	env.RegisterDelayedCallback(look, 6*time.Minute+30*time.Second)
	env.ExecuteWorkflow(workflows.WebhookWorkflowName, workflows.WebhookInput{WebhookID: f.webhook.ID})
	if len(views) != 4 {
		t.Fatalf("%d views, want 4", len(views))
	}
	if v := views[0]; !v.state.Enabled || v.state.Failures != 0 || v.state.ChangedAt != nil || v.details != "enabled; 0 consecutive failed chains (disabled at 5)" {
		t.Errorf("before any chain: %+v", v)
	}
	v := views[1]
	if !v.state.Enabled || v.state.Failures != 2 || v.state.ChangedAt == nil || !v.state.ChangedAt.Equal(start.Add(2*time.Minute)) ||
		v.state.LastChange != "chain of evt_1 failed: its last attempt answered 503" {
		t.Errorf("after two failed chains: %+v", v.state)
	}
	if want := "enabled; 2 consecutive failed chains (disabled at 5). Last change"; !strings.HasPrefix(v.details, want) || !strings.HasSuffix(v.details, v.state.LastChange) {
		t.Errorf("details %q, want %q...", v.details, want)
	}
	if v := views[2]; v.state.Enabled || v.state.Failures != 5 || !strings.HasSuffix(v.state.LastChange, "disabled after 5 consecutive failed chains") ||
		!strings.HasPrefix(v.details, "**disabled** after 5 consecutive failed chains; re-enable with the `reenable` signal") {
		t.Errorf("after five failed chains: %+v", v)
	}
	if v := views[3]; !v.state.Enabled || v.state.Failures != 0 || !strings.HasPrefix(v.state.LastChange, "re-enabled") ||
		!strings.HasPrefix(v.details, "enabled; 0 consecutive") {
		t.Errorf("after reenable: %+v", v)
	}
}

// metadataQuery is the SDK's built-in query that the Temporal UI reads
// current details with (the SDK exports no name for it).
const metadataQuery = "__temporal_workflow_metadata"

// currentDetails reads the workflow's current details as the Temporal UI
// does, through the SDK's metadata query.
func currentDetails(t *testing.T, env *testsuite.TestWorkflowEnvironment) string {
	t.Helper()
	v, err := env.QueryWorkflow(metadataQuery)
	if err != nil {
		t.Fatalf("metadata query: %v", err)
	}
	var md sdkpb.WorkflowMetadata
	if err := v.Get(&md); err != nil {
		t.Fatal(err)
	}
	return md.GetCurrentDetails()
}

// summaries records the summaries of the activities and timers that
// workflows schedule, as the Temporal UI's timeline shows them.
type summaries struct {
	interceptor.WorkerInterceptorBase
	mu  sync.Mutex
	got []string
}

func (s *summaries) add(summary string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.got = append(s.got, summary)
}

func (s *summaries) all() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.got...)
}

func (s *summaries) InterceptWorkflow(_ workflow.Context, next interceptor.WorkflowInboundInterceptor) interceptor.WorkflowInboundInterceptor {
	i := &summaryInbound{rec: s}
	i.Next = next
	return i
}

type summaryInbound struct {
	interceptor.WorkflowInboundInterceptorBase
	rec *summaries
}

func (i *summaryInbound) Init(out interceptor.WorkflowOutboundInterceptor) error {
	o := &summaryOutbound{rec: i.rec}
	o.Next = out
	return i.Next.Init(o)
}

type summaryOutbound struct {
	interceptor.WorkflowOutboundInterceptorBase
	rec *summaries
}

func (o *summaryOutbound) ExecuteActivity(ctx workflow.Context, activityType string, args ...any) workflow.Future {
	o.rec.add(workflow.GetActivityOptions(ctx).Summary)
	return o.Next.ExecuteActivity(ctx, activityType, args...)
}

func (o *summaryOutbound) ExecuteLocalActivity(ctx workflow.Context, activityType string, args ...any) workflow.Future {
	o.rec.add(workflow.GetLocalActivityOptions(ctx).Summary)
	return o.Next.ExecuteLocalActivity(ctx, activityType, args...)
}

func (o *summaryOutbound) NewTimerWithOptions(ctx workflow.Context, d time.Duration, opts workflow.TimerOptions) workflow.Future {
	o.rec.add(opts.Summary)
	return o.Next.NewTimerWithOptions(ctx, d, opts)
}
