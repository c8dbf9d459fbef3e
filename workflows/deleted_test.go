package workflows_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"go.temporal.io/sdk/temporal"

	"github.com/furrowhq/furrow"
	"github.com/furrowhq/furrow/activities"
	ftemporal "github.com/furrowhq/furrow/temporal"
	"github.com/furrowhq/furrow/workflows"
)

// The webhook's workflow ends on SignalDeleted once its webhook is gone.
func TestWebhookEndsOnTheDeletedSignal(t *testing.T) {
	f := newFixture("https://example.com", 0)
	env := newEnv()
	ftemporal.Register(env, &activities.Activities{Webhooks: f.store, Clock: furrow.ClockFunc(env.Now)})
	env.RegisterDelayedCallback(func() {
		env.SignalWorkflow(workflows.SignalChain, furrow.ChainReport{WebhookID: f.webhook.ID, Failed: true, StatusCode: 500})
	}, time.Minute)
	env.RegisterDelayedCallback(func() {
		f.store.remove(f.webhook)
		env.SignalWorkflow(workflows.SignalDeleted, nil)
	}, 2*time.Minute)
	start := env.Now()
	env.ExecuteWorkflow(workflows.WebhookWorkflowName, workflows.WebhookInput{WebhookID: f.webhook.ID})
	if !env.IsWorkflowCompleted() || env.GetWorkflowError() != nil {
		t.Fatalf("completed %v err %v, want a clean end", env.IsWorkflowCompleted(), env.GetWorkflowError())
	}
	if took := env.Now().Sub(start); took > time.Hour {
		t.Fatalf("ended %s after the start, want at the signal, 2 minutes in", took)
	}
	if w := f.store.Writes(); len(w) != 1 || w[0].Failures != 1 {
		t.Fatalf("writes %+v, want the one failure only", w)
	}
}

// SignalDeleted for a webhook that still exists changes nothing, even as
// the first signal of a run.
func TestWebhookDeletedSignalForALiveWebhook(t *testing.T) {
	f := newFixture("https://example.com", 2)
	env := newEnv()
	ftemporal.Register(env, &activities.Activities{Webhooks: f.store, Clock: furrow.ClockFunc(env.Now)})
	env.RegisterDelayedCallback(func() { env.SignalWorkflow(workflows.SignalDeleted, nil) }, time.Minute)
	env.RegisterDelayedCallback(func() {
		env.SignalWorkflow(workflows.SignalChain, furrow.ChainReport{WebhookID: f.webhook.ID, Failed: true, StatusCode: 500})
	}, 2*time.Minute)
	// The workflow would wait for ever; the run's timeout ends it.
	env.SetWorkflowRunTimeout(time.Hour)
	env.ExecuteWorkflow(workflows.WebhookWorkflowName, workflows.WebhookInput{WebhookID: f.webhook.ID})
	var timeout *temporal.TimeoutError
	if err := env.GetWorkflowError(); !errors.As(err, &timeout) {
		t.Fatalf("err %v, want the workflow still running at its timeout", err)
	}
	if w := f.store.Writes(); len(w) != 1 || !w[0].Enabled || w[0].Failures != 3 {
		t.Fatalf("writes %+v, want the failure counted from the 2 stored", w)
	}
}

// A delete whose signal never came (Temporal was down) still ends the
// workflow, at its next daily check.
func TestWebhookEndsADayAfterADeleteItMissed(t *testing.T) {
	f := newFixture("https://example.com", 0)
	env := newEnv()
	ftemporal.Register(env, &activities.Activities{Webhooks: f.store, Clock: furrow.ClockFunc(env.Now)})
	env.RegisterDelayedCallback(func() { f.store.remove(f.webhook) }, time.Hour)
	start := env.Now()
	env.ExecuteWorkflow(workflows.WebhookWorkflowName, workflows.WebhookInput{WebhookID: f.webhook.ID})
	if !env.IsWorkflowCompleted() || env.GetWorkflowError() != nil {
		t.Fatalf("completed %v err %v, want a clean end", env.IsWorkflowCompleted(), env.GetWorkflowError())
	}
	if took := env.Now().Sub(start); took != 24*time.Hour {
		t.Fatalf("ended %s after the start, want at the daily check", took)
	}
}

// On a real Temporal: a failed chain starts the webhook's workflow;
// deleting the webhook and telling the workflow (as the API does) ends it.
func TestDeletedWebhookWorkflowCompletes(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Temporal server")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := temporalServer(ctx, t)
	srv, _ := endpoint(t, 400)
	f := newFixture(srv.URL, 0)
	ctl := ftemporal.NewControl(c, nil)
	w := ftemporal.NewWorker(c, &activities.Activities{Webhooks: f.store, HTTP: srv.Client(), Clock: furrow.SystemClock{},
		Reporter: ftemporal.NewReporter(c), Redeliverer: ctl}, ftemporal.WorkerOptions{})
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	defer w.Stop()

	opts, in := workflows.DeliveryStart(workflows.DeliveryWorkflowID(f.webhook.ID, f.event.ID), f.webhook, f.event, nil)
	run, err := c.ExecuteWorkflow(ctx, opts, workflows.DeliveryWorkflowName, in)
	if err != nil {
		t.Fatal(err)
	}
	_ = run.Get(ctx, nil) // the chain fails: 400
	waitFor(t, func() bool { return f.store.webhook(f.webhook.ID).ConsecutiveFailures == 1 })

	f.store.remove(f.webhook)
	if err := ctl.WebhookDeleted(ctx, f.webhook.ID); err != nil {
		t.Fatal(err)
	}
	done, cancelWait := context.WithTimeout(ctx, 30*time.Second)
	defer cancelWait()
	if err := c.GetWorkflow(done, workflows.WebhookWorkflowID(f.webhook.ID), "").Get(done, nil); err != nil {
		t.Fatalf("webhook workflow after the delete: %v, want completed", err)
	}
	// Told again, with no workflow running: nothing to do, no error.
	if err := ctl.WebhookDeleted(ctx, f.webhook.ID); err != nil {
		t.Fatalf("WebhookDeleted with the workflow ended: %v", err)
	}
}
