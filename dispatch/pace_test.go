package dispatch

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/furrowhq/furrow"
	"github.com/furrowhq/furrow/workflows"
)

// pacedFarm adds a farm with a webhook of every type at perSecond and an
// unlimited one.
func (w *world) pacedFarm(t *testing.T, perSecond float64) (farm uuid.UUID, paced, free furrow.Webhook) {
	t.Helper()
	ctx := context.Background()
	f, err := w.store.CreateFarm(ctx, w.user, "South")
	if err != nil {
		t.Fatal(err)
	}
	paced, err = w.store.CreateWebhook(ctx, furrow.Webhook{FarmID: f.ID, Enabled: true, MaxPerSecond: &perSecond})
	if err != nil {
		t.Fatal(err)
	}
	free, err = w.store.CreateWebhook(ctx, furrow.Webhook{FarmID: f.ID, Enabled: true})
	if err != nil {
		t.Fatal(err)
	}
	return f.ID, paced, free
}

// startedFor counts the events whose workflow for webhook h was started.
func (w *world) startedFor(h furrow.Webhook, es []furrow.Event) int {
	n := 0
	for _, e := range es {
		if _, ok := w.starter.started[workflows.DeliveryWorkflowID(h.ID, e.ID)]; ok {
			n++
		}
	}
	return n
}

func TestDispatchStartsAPacedWebhooksBurstAheadOfItsRateOnly(t *testing.T) {
	w := newWorld(Config{Batch: 100})
	farm, paced, free := w.pacedFarm(t, 1) // a burst of 16 starts, then 1.25 a second
	es := w.addEventsOf(farm, 40)
	ctx := context.Background()
	p, err := w.d.DispatchOnce(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := w.startedFor(paced, es); got != minStartBurst {
		t.Fatalf("started %d of the burst for the paced webhook, want %d", got, minStartBurst)
	}
	if got := w.startedFor(free, es); got != len(es) {
		t.Fatalf("started %d for the unlimited webhook of the same farm, want all %d", got, len(es))
	}
	if p.Dispatched != minStartBurst || p.Held != len(es)-minStartBurst {
		t.Fatalf("pass %+v: want %d dispatched and the rest held", p, minStartBurst)
	}
	held := 0
	for _, e := range es {
		if w.held(e.ID) {
			held++
		}
	}
	if held != p.Held || w.metrics.held != p.Held {
		t.Fatalf("%d events held in the outbox, %d counted, want %d", held, w.metrics.held, p.Held)
	}
	// Held, they come back in line at the webhook's rate, one a second,
	// and each finds room when it does.
	if p, err := w.d.DispatchOnce(ctx); err != nil || p.Claimed != 0 {
		t.Fatalf("pass at once = %+v, %v; want nothing claimed", p, err)
	}
	calls := w.starter.calls
	w.clock.Advance(8 * time.Second)
	p, err = w.d.DispatchOnce(ctx)
	if err != nil || p.Claimed != 8 || p.Dispatched != 8 {
		t.Fatalf("pass 8 s on = %+v, %v; want 8 claimed and started", p, err)
	}
	// The unlimited webhook's workflows, started while the events were
	// held, are not started again.
	if got := w.starter.calls - calls; got != 8 {
		t.Fatalf("%d starts asked for 8 events back from their hold; want 8", got)
	}
	w.clock.Advance(time.Minute)
	if p, err := w.d.DispatchOnce(ctx); err != nil || p.Dispatched != len(es)-minStartBurst-8 {
		t.Fatalf("last pass = %+v, %v; want the rest started", p, err)
	}
	if got := w.startedFor(paced, es); got != len(es) {
		t.Fatalf("started %d for the paced webhook in the end, want %d", got, len(es))
	}
	for _, e := range es {
		if !w.isDispatched(e.ID) {
			t.Fatalf("event %s not dispatched in the end", e.ID)
		}
	}
	if len(w.d.paced.started) != 0 {
		t.Fatalf("%d held events still remembered once all are dispatched", len(w.d.paced.started))
	}
}

func TestDispatchPacingLeavesOtherFarmsAlone(t *testing.T) {
	w := newWorld(Config{Batch: 100})
	farm, _, _ := w.pacedFarm(t, 0.5)
	w.addEventsOf(farm, 30)
	others := w.addEvents(20)
	p, err := w.d.DispatchOnce(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range others {
		if !w.isDispatched(e.ID) {
			t.Fatalf("another farm's event was held: pass %+v", p)
		}
	}
	if p.Held != 30-minStartBurst {
		t.Fatalf("pass %+v: want %d held", p, 30-minStartBurst)
	}
}

// pastBurst returns a webhook of 1/s whose burst of starts p has given at
// now, none held.
func pastBurst(t *testing.T, p *startPacer, now time.Time) furrow.Webhook {
	t.Helper()
	rate := 1.0
	w := furrow.Webhook{ID: uuid.New(), MaxPerSecond: &rate}
	for range minStartBurst {
		if h := p.take(w, now, now); h != 0 {
			t.Fatalf("held within the burst: %s", h)
		}
	}
	return w
}

func TestStartPacerFollowsARateChange(t *testing.T) {
	var p startPacer
	now := time.Now()
	w := pastBurst(t, &p, now)
	for i := range 3 {
		if h, want := p.take(w, now, now), time.Duration(i+1)*time.Second; h != want {
			t.Fatalf("hold of the %d-th past the burst = %s, want %s", i+1, h, want)
		}
	}
	faster := 100.0
	w.MaxPerSecond = &faster
	// The new rate counts from when it is seen.
	if h := p.take(w, now, now.Add(100*time.Millisecond)); h <= 0 {
		t.Fatalf("not held when the change is seen, with no token come back")
	}
	if h := p.take(w, now, now.Add(200*time.Millisecond)); h != 0 {
		t.Fatalf("held at 100/s a tenth of a second after the change: %s", h)
	}
	// No turn is given further than maxHold ahead: the event then starts
	// at once.
	slow := 0.01
	w = furrow.Webhook{ID: uuid.New(), MaxPerSecond: &slow}
	for range minStartBurst {
		p.take(w, now, now)
	}
	if h := p.take(w, now, now); h != 100*time.Second {
		t.Fatalf("first hold at 0.01/s = %s, want 100s", h)
	}
	for range 2 {
		if h := p.take(w, now, now); h != 0 {
			t.Fatalf("held for %s at 0.01/s, past the longest hold of %s", h, maxHold)
		}
	}
	w.MaxPerSecond = nil
	for range 1000 {
		if h := p.take(w, now, now); h != 0 {
			t.Fatalf("an unlimited webhook was held: %s", h)
		}
	}
}

// An event older than maxHold is never held: it starts ahead of newer
// events, the bucket in debt, so the next new one is held.
func TestStartPacerNeverHoldsAnEventPastMaxHold(t *testing.T) {
	var p startPacer
	now := time.Now()
	w := pastBurst(t, &p, now)
	if h := p.take(w, now.Add(-maxHold), now); h != 0 {
		t.Fatalf("an event %s old held for %s", maxHold, h)
	}
	if h := p.take(w, now, now.Add(time.Second)); h <= 0 {
		t.Fatal("a new event was not held behind the old one's start")
	}
}

// A webhook paced at 1/s sent 1.3 events a second for twenty minutes, on the
// real dispatcher: each event is held at most once, so none waits in the
// outbox much past maxHold (before, one was held again each time it came
// back, behind newer events, for as long as the overload lasted).
func TestOverloadedPacedWebhookKeepsNoEventPastMaxHold(t *testing.T) {
	w := newWorld(Config{Batch: 100})
	farm, paced, _ := w.pacedFarm(t, 1)
	ctx := context.Background()
	var open []furrow.Event
	var worst time.Duration
	arrivals := 0.0
	for end := w.clock.Now().Add(20 * time.Minute); w.clock.Now().Before(end); {
		w.clock.Advance(100 * time.Millisecond)
		for arrivals += 0.13; arrivals >= 1; arrivals-- {
			open = append(open, w.addEventsOf(farm, 1)...)
		}
		for p, err := w.d.DispatchOnce(ctx); p.Full || err != nil; p, err = w.d.DispatchOnce(ctx) {
			if err != nil {
				t.Fatal(err)
			}
		}
		open = slices.DeleteFunc(open, func(e furrow.Event) bool {
			worst = max(worst, w.clock.Now().Sub(time.UnixMilli(e.OccurredAtMs)))
			return w.starter.hasStarted(workflows.DeliveryWorkflowID(paced.ID, e.ID))
		})
	}
	if limit := maxHold + 5*time.Second; worst > limit {
		t.Fatalf("an event waited %s in the outbox, more than %s", worst, limit)
	}
}
