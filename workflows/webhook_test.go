package workflows_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/furrowhq/furrow"
	"github.com/furrowhq/furrow/activities"
	ftemporal "github.com/furrowhq/furrow/temporal"
	"github.com/furrowhq/furrow/workflows"
)

// signal is one signal sent to the webhook workflow: a chain report, or a
// reenable when reenable is set (with the API's payload when api is set,
// without one, as support sends it, otherwise). A failed chain's last
// attempt was answered status.
type signal struct {
	failed   bool
	reenable bool
	api      bool
	status   int
}

// runWebhook runs the webhook workflow of f, sends signals one minute
// apart, and returns the environment once the workflow ends (the test
// environment ends it when nothing is left to do).
func runWebhook(t *testing.T, f *fixture, in workflows.WebhookInput, signals []signal) *testsuite.TestWorkflowEnvironment {
	t.Helper()
	env := newEnv()
	return runWebhookWith(env, &activities.Activities{Webhooks: f.store, Clock: furrow.ClockFunc(env.Now)}, f, in, signals)
}

// runWebhookWith is runWebhook in env with the activities acts.
func runWebhookWith(env *testsuite.TestWorkflowEnvironment, acts *activities.Activities, f *fixture, in workflows.WebhookInput, signals []signal) *testsuite.TestWorkflowEnvironment {
	ftemporal.Register(env, acts)
	return signalWebhook(env, f, in, signals)
}

// signalWebhook runs the webhook workflow, registered in env, as runWebhook
// does.
func signalWebhook(env *testsuite.TestWorkflowEnvironment, f *fixture, in workflows.WebhookInput, signals []signal) *testsuite.TestWorkflowEnvironment {
	for i, sig := range signals {
		env.RegisterDelayedCallback(func() {
			switch {
			case sig.reenable && sig.api:
				env.SignalWorkflow(workflows.SignalReenable, workflows.ReenableByAPI)
			case sig.reenable:
				env.SignalWorkflow(workflows.SignalReenable, nil)
			default:
				env.SignalWorkflow(workflows.SignalChain, furrow.ChainReport{WebhookID: f.webhook.ID, Failed: sig.failed, StatusCode: sig.status})
			}
		}, time.Duration(i+1)*time.Minute)
	}
	env.ExecuteWorkflow(workflows.WebhookWorkflowName, in)
	return env
}

func failed(n int) []signal {
	s := make([]signal, n)
	for i := range s {
		s[i].failed = true
	}
	return s
}

func TestWebhookDisablesAfterFiveFailedChains(t *testing.T) {
	f := newFixture("https://example.com", 0)
	runWebhook(t, f, workflows.WebhookInput{WebhookID: f.webhook.ID}, failed(5))
	w := f.store.webhook(f.webhook.ID)
	if w.Enabled || w.ConsecutiveFailures != 5 {
		t.Fatalf("webhook = enabled %v failures %d, want disabled at 5", w.Enabled, w.ConsecutiveFailures)
	}
	writes := f.store.Writes()
	if len(writes) != 5 || !writes[3].Enabled || writes[4].Enabled {
		t.Fatalf("writes = %+v, want 4 enabled then one disabling", writes)
	}
}

func TestWebhookSuccessRestartsCount(t *testing.T) {
	f := newFixture("https://example.com", 0)
	sigs := append(failed(4), signal{failed: false})
	sigs = append(sigs, failed(4)...)
	runWebhook(t, f, workflows.WebhookInput{WebhookID: f.webhook.ID}, sigs)
	if w := f.store.webhook(f.webhook.ID); !w.Enabled || w.ConsecutiveFailures != 4 {
		t.Fatalf("webhook = enabled %v failures %d, want enabled at 4", w.Enabled, w.ConsecutiveFailures)
	}
}

func TestWebhookReenableResets(t *testing.T) {
	f := newFixture("https://example.com", 0)
	sigs := append(failed(5), signal{reenable: true}, signal{failed: true})
	runWebhook(t, f, workflows.WebhookInput{WebhookID: f.webhook.ID}, sigs)
	writes := f.store.Writes()
	if len(writes) != 7 {
		t.Fatalf("writes = %+v, want 7", writes)
	}
	if w := writes[5]; !w.Enabled || w.Failures != 0 {
		t.Errorf("reenable wrote %+v, want enabled with 0 failures", w)
	}
	if w := writes[6]; !w.Enabled || w.Failures != 1 {
		t.Errorf("next failure wrote %+v, want enabled with 1 failure", w)
	}
}

func TestWebhookStartsFromStoredState(t *testing.T) {
	f := newFixture("https://example.com", 4)
	runWebhook(t, f, workflows.WebhookInput{WebhookID: f.webhook.ID}, failed(1))
	if w := f.store.webhook(f.webhook.ID); w.Enabled || w.ConsecutiveFailures != 5 {
		t.Fatalf("webhook = enabled %v failures %d, want disabled at 5", w.Enabled, w.ConsecutiveFailures)
	}
}

func TestWebhookEndsWhenDeleted(t *testing.T) {
	f := newFixture("https://example.com", 0)
	f.store.remove(f.webhook)
	env := runWebhook(t, f, workflows.WebhookInput{WebhookID: f.webhook.ID}, nil)
	if !env.IsWorkflowCompleted() || env.GetWorkflowError() != nil {
		t.Fatalf("completed %v err %v, want a clean end", env.IsWorkflowCompleted(), env.GetWorkflowError())
	}
}

func TestWebhookContinuesAsNewKeepingTheCounter(t *testing.T) {
	f := newFixture("https://example.com", 0)
	env := newEnv()
	ftemporal.Register(env, &activities.Activities{Webhooks: f.store, Clock: furrow.ClockFunc(env.Now)})
	// All signals arrive together, so the run must drain what is pending
	// after its bound before continuing as new. The delivered chains end
	// when counted, the failed ones after.
	var ends []int64
	env.RegisterDelayedCallback(func() {
		for range 498 {
			env.SignalWorkflow(workflows.SignalChain, furrow.ChainReport{WebhookID: f.webhook.ID})
		}
		for i := range 3 {
			ends = append(ends, furrow.Millis(env.Now())+int64(i+1))
			env.SignalWorkflow(workflows.SignalChain, furrow.ChainReport{WebhookID: f.webhook.ID, Failed: true, Chain: fmt.Sprint("chain-", i),
				EndedAtMs: ends[i]})
		}
	}, time.Minute)
	env.ExecuteWorkflow(workflows.WebhookWorkflowName, workflows.WebhookInput{WebhookID: f.webhook.ID})
	var can *workflow.ContinueAsNewError
	if err := env.GetWorkflowError(); !errors.As(err, &can) {
		t.Fatalf("err = %v, want continue-as-new", err)
	}
	var next workflows.WebhookInput
	if err := converter.GetDefaultDataConverter().FromPayloads(can.Input, &next); err != nil {
		t.Fatal(err)
	}
	if next.State == nil || next.State.Failures != 3 || !next.State.Enabled || next.WebhookID != f.webhook.ID {
		t.Fatalf("continued with %+v (state %+v), want 3 failures carried", next, next.State)
	}
	if !slices.Equal(next.Counted, []string{"chain-0", "chain-1", "chain-2"}) {
		t.Fatalf("continued with the chains %v counted, want the three failed ones", next.Counted)
	}
	if !slices.Equal(next.FailedMs, ends) {
		t.Fatalf("continued with the failures' ends %v, want %v", next.FailedMs, ends)
	}
	if len(next.DeliveredMs) != workflows.RememberedEnds {
		t.Fatalf("continued with %d deliveries' ends, want the newest %d", len(next.DeliveredMs), workflows.RememberedEnds)
	}
}

// chainReport sends the chain report r to the workflow at minute m.
type chainReport struct {
	m int
	r furrow.ChainReport
}

// runChainReports runs the webhook workflow of f and sends reports, and
// reenables at the minutes given.
func runChainReports(t *testing.T, f *fixture, reports []chainReport, reenableAt ...int) {
	t.Helper()
	env := newEnv()
	ftemporal.Register(env, &activities.Activities{Webhooks: f.store, Clock: furrow.ClockFunc(env.Now)})
	sendChainReports(env, f, reports, reenableAt...)
}

// sendChainReports is runChainReports in env, where the workflows and
// activities are registered.
func sendChainReports(env *testsuite.TestWorkflowEnvironment, f *fixture, reports []chainReport, reenableAt ...int) {
	sendChainReportsFrom(env, workflows.WebhookInput{WebhookID: f.webhook.ID}, reports, reenableAt...)
}

// sendChainReportsFrom is sendChainReports for a run started with in.
func sendChainReportsFrom(env *testsuite.TestWorkflowEnvironment, in workflows.WebhookInput, reports []chainReport, reenableAt ...int) {
	for _, c := range reports {
		env.RegisterDelayedCallback(func() { env.SignalWorkflow(workflows.SignalChain, c.r) }, time.Duration(c.m)*time.Minute)
	}
	for _, m := range reenableAt {
		env.RegisterDelayedCallback(func() { env.SignalWorkflow(workflows.SignalReenable, workflows.ReenableByAPI) }, time.Duration(m)*time.Minute)
	}
	// The workflow waits for signals for ever; the environment's timeout
	// ends it once nothing is left to do.
	env.ExecuteWorkflow(workflows.WebhookWorkflowName, in)
}

// A report sent twice, its activity retried after its signal went, counts
// once: five reports of one failed chain do not disable the webhook.
func TestWebhookCountsAChainOnce(t *testing.T) {
	f := newFixture("https://example.com", 0)
	once := furrow.ChainReport{WebhookID: f.webhook.ID, Failed: true, StatusCode: 500, Chain: "delivery/w/e/run-1"}
	var reports []chainReport
	for m := 1; m <= 5; m++ {
		reports = append(reports, chainReport{m, once})
	}
	runChainReports(t, f, reports)
	if w := f.store.webhook(f.webhook.ID); !w.Enabled || w.ConsecutiveFailures != 1 {
		t.Fatalf("webhook = enabled %v failures %d, want enabled at 1", w.Enabled, w.ConsecutiveFailures)
	}
	// Other chains, and the same chain's next run (a reset), count.
	reports = nil
	for m, chain := range []string{"delivery/w/e/run-2", "delivery/w/e2/run-1", "delivery/w/e3/run-1", "delivery/w/e4/run-1", "delivery/w/e/run-1"} {
		r := once
		r.Chain = chain
		reports = append(reports, chainReport{m + 1, r})
	}
	f = newFixture("https://example.com", 0)
	for i := range reports {
		reports[i].r.WebhookID = f.webhook.ID
	}
	runChainReports(t, f, reports)
	if w := f.store.webhook(f.webhook.ID); w.Enabled || w.ConsecutiveFailures != 5 {
		t.Fatalf("webhook = enabled %v failures %d, want disabled at 5", w.Enabled, w.ConsecutiveFailures)
	}
}

// A failed chain that ended before the webhook was re-enabled, reported
// after, does not count against the re-enabled webhook; one that ended
// after does.
func TestWebhookLateFailureBeforeReenableDoesNotCount(t *testing.T) {
	f := newFixture("https://example.com", furrow.MaxFailedChains)
	at := minutes()
	fail := f.failedChain
	runChainReports(t, f, []chainReport{
		{3, fail("late", at(1))},   // ended before the re-enable at minute 2
		{4, fail("after", at(3))},  // ended after it
		{5, fail("old-report", 0)}, // from a delivery workflow of before: counts
	}, 2)
	w := f.store.webhook(f.webhook.ID)
	if !w.Enabled || w.ConsecutiveFailures != 2 {
		t.Fatalf("webhook = enabled %v failures %d, want enabled at 2 (the late failure not counted)", w.Enabled, w.ConsecutiveFailures)
	}
}

// A failed chain whose report comes after a delivery that began once it
// had ended is not counted: the delivery restarted the count, though its
// own chain, having read a count of 0 at its first attempt, reported
// nothing. One that ended after the delivery counts.
func TestWebhookFailureBeforeAnUnreportedDeliveryDoesNotCount(t *testing.T) {
	f := newFixture("https://example.com", 0)
	at := minutes()
	err := f.store.AddAttempt(context.Background(), furrow.Attempt{DeliveryID: uuid.New(), WebhookID: f.webhook.ID,
		EventID: furrow.NewEventID(), Attempt: 1, StatusCode: 200, AtMs: at(2)})
	if err != nil {
		t.Fatal(err)
	}
	fail := f.failedChain
	runChainReports(t, f, []chainReport{
		{3, fail("before", at(1))}, // ended before the delivery at minute 2
		{4, fail("after", at(3))},  // ended after it
	})
	w := f.store.webhook(f.webhook.ID)
	if !w.Enabled || w.ConsecutiveFailures != 1 {
		t.Fatalf("webhook = enabled %v failures %d, want enabled at 1 (the failure before the delivery not counted)", w.Enabled, w.ConsecutiveFailures)
	}
	if writes := f.store.Writes(); len(writes) != 1 || writes[0].Failures != 1 {
		t.Fatalf("writes = %+v, want one, of 1 failure", writes)
	}
}

// At the fifth failure too: a superseded failure does not disable.
func TestWebhookSupersededFifthFailureDoesNotDisable(t *testing.T) {
	f := newFixture("https://example.com", furrow.MaxFailedChains-1)
	start := envStart
	err := f.store.AddAttempt(context.Background(), furrow.Attempt{DeliveryID: uuid.New(), WebhookID: f.webhook.ID,
		EventID: furrow.NewEventID(), Attempt: 1, StatusCode: 204, AtMs: furrow.Millis(start.Add(2 * time.Minute))})
	if err != nil {
		t.Fatal(err)
	}
	runChainReports(t, f, []chainReport{{3, furrow.ChainReport{WebhookID: f.webhook.ID, Failed: true, StatusCode: 500,
		Chain: "c", EndedAtMs: furrow.Millis(start.Add(time.Minute))}}})
	if w := f.store.webhook(f.webhook.ID); !w.Enabled || w.ConsecutiveFailures != furrow.MaxFailedChains-1 {
		t.Fatalf("webhook = enabled %v failures %d, want enabled and unchanged", w.Enabled, w.ConsecutiveFailures)
	}
}

// A delivered chain reported after a failure that ended later, and was
// counted first, does not restart the count: that failure came after it.
// Histories recorded before the late-success change still restart it.
func TestWebhookLateSuccessBeforeACountedFailureKeepsTheCount(t *testing.T) {
	for _, c := range []struct {
		name    string
		version workflow.Version // of the late-success change
		want    int
	}{{"current", workflows.LateSuccessRecount, 1}, {"recorded at version 1", 1, 1}, {"recorded before", workflow.DefaultVersion, 0}} {
		t.Run(c.name, func(t *testing.T) {
			f, env := lateSuccessEnv(c.version)
			at := func(m int) int64 { return furrow.Millis(env.Now().Add(time.Duration(m) * time.Minute)) }
			sendChainReports(env, f, []chainReport{
				{4, furrow.ChainReport{WebhookID: f.webhook.ID, Failed: true, StatusCode: 503, Chain: "failed", EndedAtMs: at(3)}},
				{5, furrow.ChainReport{WebhookID: f.webhook.ID, Chain: "delivered", EndedAtMs: at(1)}},
			})
			if w := f.store.webhook(f.webhook.ID); !w.Enabled || w.ConsecutiveFailures != c.want {
				t.Fatalf("webhook = enabled %v failures %d, want enabled at %d", w.Enabled, w.ConsecutiveFailures, c.want)
			}
		})
	}
}

// A delivered chain that ended after the latest counted failure restarts
// the count, whatever order the reports came in.
func TestWebhookSuccessAfterTheLatestFailureRestartsTheCount(t *testing.T) {
	f := newFixture("https://example.com", 0)
	at := minutes()
	fail := f.failedChain
	runChainReports(t, f, []chainReport{
		{4, fail("later", at(3))},
		{5, fail("earlier", at(2))}, // reported late: still the latest is at minute 3
		{6, furrow.ChainReport{WebhookID: f.webhook.ID, Chain: "delivered", EndedAtMs: at(4)}},
	})
	if w := f.store.webhook(f.webhook.ID); !w.Enabled || w.ConsecutiveFailures != 0 {
		t.Fatalf("webhook = enabled %v failures %d, want enabled at 0", w.Enabled, w.ConsecutiveFailures)
	}
}

// A delivered chain reported after a failure that ended later restarts the
// count from the failures that ended after it: ended F F F S F, reported
// F F F F S, the count is 1, and one more failure makes 2, not a disable.
// Recorded at version 1 of the late-success change, the count was kept.
func TestWebhookLateSuccessRestartsFromTheFailuresAfterIt(t *testing.T) {
	for _, c := range []struct {
		name    string
		version workflow.Version
		want    int
		enabled bool
	}{{"current", workflows.LateSuccessRecount, 2, true}, {"recorded at version 1", 1, 5, false}} {
		t.Run(c.name, func(t *testing.T) {
			f, env := lateSuccessEnv(c.version)
			at := func(m int) int64 { return furrow.Millis(env.Now().Add(time.Duration(m) * time.Minute)) }
			fail := f.failedChain
			sendChainReports(env, f, []chainReport{
				{2, fail("f1", at(1))},
				{3, fail("f2", at(2))},
				{4, fail("f3", at(3))},
				{11, fail("f4", at(10))},
				{12, furrow.ChainReport{WebhookID: f.webhook.ID, Chain: "delivered", EndedAtMs: at(9)}},
				{20, fail("f5", at(19))},
			})
			if w := f.store.webhook(f.webhook.ID); w.Enabled != c.enabled || w.ConsecutiveFailures != c.want {
				t.Fatalf("webhook = enabled %v failures %d, want enabled %v at %d", w.Enabled, w.ConsecutiveFailures, c.enabled, c.want)
			}
		})
	}
}

// The ends of the counted failures go over continue-as-new with the count,
// so a late success in the next run counts again from them.
func TestWebhookContinuesAsNewKeepingTheFailuresEnds(t *testing.T) {
	f := newFixture("https://example.com", 2)
	env := newEnv()
	ftemporal.Register(env, &activities.Activities{Webhooks: f.store, Clock: furrow.ClockFunc(env.Now)})
	at := func(m int) int64 { return furrow.Millis(env.Now().Add(time.Duration(m) * time.Minute)) }
	state := workflows.WebhookState{WebhookID: f.webhook.ID, Enabled: true, Failures: 2}
	sendChainReportsFrom(env, workflows.WebhookInput{WebhookID: f.webhook.ID, State: &state, LastFailedAtMs: at(5),
		FailedEndsMs: []int64{at(1), at(5)}}, []chainReport{
		{6, furrow.ChainReport{WebhookID: f.webhook.ID, Chain: "delivered", EndedAtMs: at(3)}},
	})
	if w := f.store.webhook(f.webhook.ID); !w.Enabled || w.ConsecutiveFailures != 1 {
		t.Fatalf("webhook = enabled %v failures %d, want enabled at 1", w.Enabled, w.ConsecutiveFailures)
	}
}

// A re-enable of a webhook enabled at 0 failures writes nothing, but a
// failure that ended before it and is reported after does not count.
func TestWebhookReenableAtZeroIsRemembered(t *testing.T) {
	f := newFixture("https://example.com", 0)
	at := minutes()
	runChainReports(t, f, []chainReport{
		{3, f.failedChain("late", at(1))},
		{4, f.failedChain("after", at(3))},
	}, 2)
	if w := f.store.webhook(f.webhook.ID); !w.Enabled || w.ConsecutiveFailures != 1 {
		t.Fatalf("webhook = enabled %v failures %d, want enabled at 1 (the failure before the re-enable not counted)", w.Enabled, w.ConsecutiveFailures)
	}
}

// A run started afresh (an operator ended the last) reads when the webhook
// was re-enabled from the store: a failure that ended before does not
// count, one that ended after does.
func TestWebhookFreshStartKnowsTheLastReenable(t *testing.T) {
	f := newFixture("https://example.com", 0)
	at := minutes()
	ctx := context.Background()
	for seq, enabled := range []bool{false, true} {
		tr := furrow.WebhookTransition{WebhookID: f.webhook.ID, Seq: int64(seq + 1), AtMs: at(seq + 1), Enabled: enabled}
		if enabled {
			tr.By = furrow.EnabledByAPI
		} else {
			tr.Failures = furrow.MaxFailedChains
		}
		if _, written, _, err := f.store.TransitionWebhook(ctx, tr, 0); err != nil || !written {
			t.Fatalf("transition %+v: written %v, %v", tr, written, err)
		}
	}
	fail := f.failedChain
	runChainReports(t, f, []chainReport{
		{3, fail("before", at(1))}, // ended before the re-enable at minute 2
		{4, fail("after", at(3))},
	})
	if w := f.store.webhook(f.webhook.ID); !w.Enabled || w.ConsecutiveFailures != 1 {
		t.Fatalf("webhook = enabled %v failures %d, want enabled at 1 (the failure before the re-enable not counted)", w.Enabled, w.ConsecutiveFailures)
	}
}

// lateSuccessEnv is a fixture and an environment whose webhook workflow
// takes version of the late-success change.
func lateSuccessEnv(version workflow.Version) (*fixture, *testsuite.TestWorkflowEnvironment) {
	f := newFixture("https://example.com", 0)
	env := newEnv()
	ftemporal.Register(env, &activities.Activities{Webhooks: f.store, Clock: furrow.ClockFunc(env.Now)})
	if version != workflows.LateSuccessRecount {
		env.OnGetVersion(workflows.ChangeLateSuccess, workflow.DefaultVersion, workflows.LateSuccessRecount).Return(version)
		countTheOldWay(env, 10)
	}
	return f, env
}

// countTheOldWay makes the webhook workflow in env count its first n
// reports as before the chain-streaks change.
func countTheOldWay(env *testsuite.TestWorkflowEnvironment, n int) {
	env.OnGetVersion(workflows.ChangeChainStreaks, workflow.DefaultVersion, 1).Return(workflow.DefaultVersion)
	for i := 1; i <= n; i++ {
		env.OnGetVersion(workflows.ChainStreaksAfter(i), workflow.DefaultVersion, 1).Return(workflow.DefaultVersion)
	}
}

// failedChain is the report of chain, failed with a 503, ended at endedAt.
func (f *fixture) failedChain(chain string, endedAt int64) furrow.ChainReport {
	return furrow.ChainReport{WebhookID: f.webhook.ID, Failed: true, StatusCode: 503, Chain: chain, EndedAtMs: endedAt}
}
