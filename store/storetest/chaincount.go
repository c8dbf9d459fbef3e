package storetest

import (
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/furrowhq/furrow"
)

// ChainCounts checks what the count of failed chains relies on: which rows
// DeliveredBetween sees, the state writes guarded by it, and the counter
// AddDeliveredAttempt reads. (Their ordering under concurrency is the
// PostgreSQL store's own test; the in-memory store serializes them.)
func ChainCounts(t *testing.T, newSubject New) {
	run(t, newSubject, map[string]func(*env){
		"DeliveredBetweenIgnoresTestDeliveries": func(e *env) {
			f, _ := e.farm()
			w := e.webhook(f.ID)
			now := e.clock.Now()
			test := furrow.NewWebhookTestEvent(w, furrow.Millis(now))
			e.must(e.Webhooks.AddTestEvent(e.ctx, w.ID, test))
			e.attempt(w.ID, test.ID, 200, now.Add(time.Minute))
			if got, err := e.Webhooks.DeliveredBetween(e.ctx, w.ID, []int64{furrow.Millis(now)}); err != nil || !slices.Equal(got, []bool{false}) {
				e.t.Fatalf("DeliveredBetween = %v (%v), want [false]: only a test delivery came after", got, err)
			}
			e.attempt(w.ID, furrow.NewEventID(), 204, now.Add(2*time.Minute))
			if got, err := e.Webhooks.DeliveredBetween(e.ctx, w.ID, []int64{furrow.Millis(now)}); err != nil || !slices.Equal(got, []bool{true}) {
				e.t.Fatalf("DeliveredBetween = %v (%v), want [true] after a delivery of a farm event", got, err)
			}
		},
		"StateWriteIsSupersededByALaterDelivery": func(e *env) {
			f, _ := e.farm()
			w := e.webhook(f.ID)
			now := e.clock.Now()
			e.attempt(w.ID, furrow.NewEventID(), 200, now)
			later, err := e.Webhooks.SetWebhookState(e.ctx, w.ID, true, 1, furrow.Millis(now.Add(-time.Second)))
			e.must(err)
			e.wantState(w.ID, later, true, true, 0, "a failed chain that ended before the delivery")
			later, err = e.Webhooks.SetWebhookState(e.ctx, w.ID, true, 1, furrow.Millis(now))
			e.must(err)
			e.wantState(w.ID, later, false, true, 1, "a failed chain that ended when the delivery began")
			later, err = e.Webhooks.SetWebhookState(e.ctx, w.ID, true, 0, 0)
			e.must(err)
			e.wantState(w.ID, later, false, true, 0, "a change made by no failed chain")
			_, err = e.Webhooks.SetWebhookState(e.ctx, uuid.New(), true, 1, 1)
			e.wantCode(err, furrow.ENOTFOUND, "SetWebhookState(unknown)")
		},
		"StateWriteIsNotSupersededByATestDelivery": func(e *env) {
			f, _ := e.farm()
			w := e.webhook(f.ID)
			now := e.clock.Now()
			test := furrow.NewWebhookTestEvent(w, furrow.Millis(now))
			e.must(e.Webhooks.AddTestEvent(e.ctx, w.ID, test))
			e.attempt(w.ID, test.ID, 200, now)
			later, err := e.Webhooks.SetWebhookState(e.ctx, w.ID, true, 1, furrow.Millis(now.Add(-time.Second)))
			e.must(err)
			e.wantState(w.ID, later, false, true, 1, "a failed chain followed by a test delivery only")
		},
		"TransitionIsSupersededUnlessWritten": func(e *env) {
			f, _ := e.farm()
			w := e.webhook(f.ID)
			now := e.clock.Now()
			e.attempt(w.ID, furrow.NewEventID(), 200, now)
			before := furrow.Millis(now.Add(-time.Second))
			tr := disabling(w, furrow.Millis(now))
			ev, written, later, err := e.Webhooks.TransitionWebhook(e.ctx, tr, before)
			e.must(err)
			if written || !later || ev.ID != "" {
				e.t.Fatalf("TransitionWebhook = %+v written %v superseded %v, want superseded", ev, written, later)
			}
			e.wantState(w.ID, false, false, true, 0, "a superseded transition")
			if es, _, err := e.Events.Events(e.ctx, furrow.EventFilter{FarmID: f.ID}); err != nil || len(es) != 0 {
				e.t.Fatalf("a superseded transition stored events %+v (%v)", es, err)
			}
			_, written, later, err = e.Webhooks.TransitionWebhook(e.ctx, tr, furrow.Millis(now))
			e.must(err)
			if !written || later {
				e.t.Fatalf("a transition after the delivery: written %v superseded %v, want written", written, later)
			}
			// Its retry, its answer lost, is not superseded: it was written.
			_, written, later, err = e.Webhooks.TransitionWebhook(e.ctx, tr, before)
			e.must(err)
			if written || later {
				e.t.Fatalf("a retried transition: written %v superseded %v, want neither", written, later)
			}
			e.wantState(w.ID, false, false, false, furrow.MaxFailedChains, "the transition")
			_, _, _, err = e.Webhooks.TransitionWebhook(e.ctx, disabling(furrow.Webhook{ID: uuid.New()}, 1), 1)
			e.wantCode(err, furrow.ENOTFOUND, "TransitionWebhook(unknown)")
		},
		"DeliveredAttemptReadsTheCounter": func(e *env) {
			f, _ := e.farm()
			w := e.webhook(f.ID)
			_, err := e.Webhooks.SetWebhookState(e.ctx, w.ID, true, 3, 0)
			e.must(err)
			now := e.clock.Now()
			add := func(id uuid.UUID, status int, at time.Time) furrow.Attempt {
				a := furrow.Attempt{DeliveryID: uuid.New(), WebhookID: id, EventID: furrow.NewEventID(), Attempt: 1,
					StatusCode: status, AtMs: furrow.Millis(at), SignedWith: []int{}}
				got, err := e.Webhooks.AddDeliveredAttempt(e.ctx, a)
				e.must(err)
				want := 0
				if status == 200 && id == w.ID {
					want = 3
				}
				if got != want {
					e.t.Fatalf("AddDeliveredAttempt(%d to %s) = %d, want %d", status, id, got, want)
				}
				return a
			}
			ok := add(w.ID, 200, now)
			add(w.ID, 503, now.Add(time.Second))
			add(uuid.New(), 200, now) // a deleted webhook's
			_, err = e.Webhooks.AddDeliveredAttempt(e.ctx, ok)
			e.wantCode(err, furrow.ECONFLICT, "AddDeliveredAttempt(the same row again)")
			as, _, err := e.Webhooks.Attempts(e.ctx, furrow.AttemptFilter{WebhookID: w.ID})
			e.must(err)
			if len(as) != 2 || as[1].DeliveryID != ok.DeliveryID || as[1].StatusCode != 200 {
				e.t.Fatalf("attempts %+v, want the 503 and the 200", as)
			}
		},
	})
}

// attempt adds an attempt of event to the webhook answered status at at.
func (e *env) attempt(webhook uuid.UUID, event string, status int, at time.Time) {
	e.t.Helper()
	e.must(e.Webhooks.AddAttempt(e.ctx, furrow.Attempt{DeliveryID: uuid.New(), WebhookID: webhook, EventID: event,
		Attempt: 1, StatusCode: status, AtMs: furrow.Millis(at)}))
}

// wantState fails unless superseded is as wanted and the webhook is stored
// enabled or not with failures, after what.
func (e *env) wantState(id uuid.UUID, superseded, wantSuperseded, enabled bool, failures int, what string) {
	e.t.Helper()
	w, err := e.Webhooks.WebhookByID(e.ctx, id)
	e.must(err)
	if superseded != wantSuperseded || w.Enabled != enabled || w.ConsecutiveFailures != failures {
		e.t.Fatalf("after %s: superseded %v, webhook enabled %v with %d failures; want superseded %v, enabled %v with %d",
			what, superseded, w.Enabled, w.ConsecutiveFailures, wantSuperseded, enabled, failures)
	}
}
