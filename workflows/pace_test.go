package workflows_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/furrowhq/furrow"
	"github.com/furrowhq/furrow/activities"
	ftemporal "github.com/furrowhq/furrow/temporal"
	"github.com/furrowhq/furrow/workflows"
)

// pacer hands out the waits in turn, then none, counts its calls, and
// keeps the sends it admitted and those told to have gone.
type pacer struct {
	mu             sync.Mutex
	waits          []time.Duration
	calls          int
	admitted, went []uuid.UUID
}

func (p *pacer) Admit(_ context.Context, _ uuid.UUID, _ float64, sendID uuid.UUID) (time.Duration, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.admitted = append(p.admitted, sendID)
	return 0, nil
}

func (p *pacer) Sent(_ context.Context, _, sendID uuid.UUID) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.went = append(p.went, sendID)
	return nil
}

func (p *pacer) Reserve(context.Context, uuid.UUID, float64) (time.Duration, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.calls++
	if len(p.waits) == 0 {
		return 0, nil
	}
	w := p.waits[0]
	p.waits = p.waits[1:]
	return w, nil
}

func TestDeliveryWaitsForTheRateWithoutUsingAnAttempt(t *testing.T) {
	srv, hits := endpoint(t, 503, 200)
	f := newFixture(srv.URL, 0)
	rate := 5.0
	if _, err := f.store.UpdateWebhook(t.Context(), f.webhook.FarmID, f.webhook.ID, furrow.WebhookPatch{SetMaxPerSecond: true, MaxPerSecond: &rate}); err != nil {
		t.Fatal(err)
	}
	// The first attempt waits 30 s for its slot, the second 2 min.
	p := &pacer{waits: []time.Duration{30 * time.Second, 2 * time.Minute}}
	env := newEnv()
	acts := &activities.Activities{Webhooks: f.store, HTTP: srv.Client(),
		Clock: furrow.ClockFunc(env.Now), Reporter: f.reporter, Pacer: p}
	ftemporal.Register(env, acts)
	var waiting string
	env.RegisterDelayedCallback(func() { waiting = currentDetails(t, env) }, 10*time.Second)
	_, in := workflows.DeliveryStart("id", f.webhook, f.event, []time.Duration{time.Second})
	start := env.Now()
	env.ExecuteWorkflow(workflows.DeliveryWorkflowName, in)
	res := deliveryResult(t, env)
	if res.Outcome != furrow.OutcomeDelivered || res.Attempts != 2 || hits.Load() != 2 {
		t.Fatalf("result %+v after %d hits, want delivered at attempt 2", res, hits.Load())
	}
	if took := env.Now().Sub(start); took < 30*time.Second+2*time.Minute {
		t.Fatalf("the chain took %s: it did not wait for its slots", took)
	}
	if p.calls != 2 {
		t.Fatalf("%d slots taken, want 2 (a reserved slot is not taken again)", p.calls)
	}
	rows := f.store.rows()
	if len(rows) != 2 || rows[0].Attempt != 1 || rows[1].Attempt != 2 {
		t.Fatalf("attempt rows %+v: waiting wrote a row or used an attempt", rows)
	}
	// Each send is admitted under its attempt's delivery id and told to
	// have gone once, so that the rate counts it from when it went.
	if want := []uuid.UUID{rows[0].DeliveryID, rows[1].DeliveryID}; !slices.Equal(p.admitted, want) || !slices.Equal(p.went, want) {
		t.Fatalf("admitted %v, told gone %v; want each of %v once", p.admitted, p.went, want)
	}
	if want := "waiting for the webhook's rate of 5/s: attempt 1 of 2 in 30s"; waiting != want {
		t.Fatalf("current details while waiting %q, want %q", waiting, want)
	}
}

func TestDeliveryOfAnUnlimitedWebhookTakesNoSlot(t *testing.T) {
	srv, _ := endpoint(t, 200)
	f := newFixture(srv.URL, 0)
	p := &pacer{waits: []time.Duration{time.Hour}}
	env := newEnv()
	acts := &activities.Activities{Webhooks: f.store, HTTP: srv.Client(),
		Clock: furrow.ClockFunc(env.Now), Reporter: f.reporter, Pacer: p}
	ftemporal.Register(env, acts)
	_, in := workflows.DeliveryStart("id", f.webhook, f.event, nil)
	env.ExecuteWorkflow(workflows.DeliveryWorkflowName, in)
	if res := deliveryResult(t, env); res.Outcome != furrow.OutcomeDelivered || p.calls != 0 {
		t.Fatalf("result %+v, %d slots taken", res, p.calls)
	}
}
