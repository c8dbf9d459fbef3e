package storetest

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/furrowhq/furrow"
)

// disabling is the transition that disables w, the webhook's first.
func disabling(w furrow.Webhook, atMs int64) furrow.WebhookTransition {
	return furrow.WebhookTransition{WebhookID: w.ID, Seq: w.StateSeq + 1, AtMs: atMs, Enabled: false,
		Failures: furrow.MaxFailedChains, LastStatusCode: 503, LastError: ""}
}

// WebhookTransitions checks WebhookService.TransitionWebhook and the rule
// of which webhooks the lifecycle events it stores wait for.
func WebhookTransitions(t *testing.T, newSubject New) {
	run(t, newSubject, map[string]func(*env){
		"WritesStateAndEventOnce": func(e *env) {
			f, _ := e.farm()
			w := e.webhook(f.ID)
			at := furrow.Millis(e.clock.Now().Add(-time.Minute)) // the workflow's time, not the store's
			tr := disabling(w, at)
			ev, written, _, err := e.Webhooks.TransitionWebhook(e.ctx, tr, 0)
			e.must(err)
			if !written || ev.ID != tr.Event(f.ID).ID || ev.Type != furrow.EventWebhookDisabled || ev.FarmID != f.ID || ev.OccurredAtMs != at {
				e.t.Fatalf("TransitionWebhook = %+v written %v, want the webhook.disabled event of %+v", ev, written, tr)
			}
			got, err := e.Webhooks.WebhookByID(e.ctx, w.ID)
			e.must(err)
			if got.Enabled || got.ConsecutiveFailures != furrow.MaxFailedChains || got.StateSeq != 1 ||
				got.StateChangedAtMs != at || got.StateCause != furrow.CauseFailedChains {
				e.t.Fatalf("webhook after the transition: %+v", got)
			}
			e.clock.Advance(time.Second)
			// A retried write, and a stale one, store nothing.
			for _, again := range []furrow.WebhookTransition{tr, {WebhookID: w.ID, Seq: 0, Enabled: true, By: furrow.EnabledByAPI}} {
				_, written, _, err = e.Webhooks.TransitionWebhook(e.ctx, again, 0)
				e.must(err)
				if written {
					e.t.Fatalf("transition %+v written again", again)
				}
			}
			es, _, err := e.Events.Events(e.ctx, furrow.EventFilter{FarmID: f.ID})
			e.must(err)
			if len(es) != 1 || es[0].ID != ev.ID || es[0].OccurredAtMs != at {
				e.t.Fatalf("events = %+v, want the one webhook.disabled", es)
			}
			// The worker publishes the returned event live: its data is the
			// stored one, byte for byte, as webhooks and the events API see it.
			if string(ev.Data) != string(es[0].Data) {
				e.t.Fatalf("TransitionWebhook returned data %s, stored %s", ev.Data, es[0].Data)
			}
			var data furrow.WebhookDisabledData
			if json.Unmarshal(es[0].Data, &data) != nil || data != (furrow.WebhookDisabledData{WebhookID: w.ID, FailedChains: furrow.MaxFailedChains, LastStatusCode: 503}) {
				e.t.Fatalf("data = %s", es[0].Data)
			}
			if got, _ := e.Webhooks.WebhookByID(e.ctx, w.ID); got.Enabled || got.StateSeq != 1 {
				e.t.Fatalf("a write that was not made changed the webhook: %+v", got)
			}
		},
		"NextTransitionEnables": func(e *env) {
			f, _ := e.farm()
			w := e.webhook(f.ID)
			first, _, _, err := e.Webhooks.TransitionWebhook(e.ctx, disabling(w, 1000), 0)
			e.must(err)
			en := furrow.WebhookTransition{WebhookID: w.ID, Seq: 2, AtMs: 2000, Enabled: true, By: furrow.EnabledBySignal}
			ev, written, _, err := e.Webhooks.TransitionWebhook(e.ctx, en, 0)
			e.must(err)
			if !written || ev.Type != furrow.EventWebhookEnabled || ev.ID == first.ID || !sameJSON(ev.Data, []byte(`{"webhook_id":"`+w.ID.String()+`","by":"signal"}`)) {
				e.t.Fatalf("enabling stored %+v written %v", ev, written)
			}
			got, err := e.Webhooks.WebhookByID(e.ctx, w.ID)
			e.must(err)
			if !got.Enabled || got.ConsecutiveFailures != 0 || got.StateSeq != 2 || got.StateCause != furrow.EnabledBySignal {
				e.t.Fatalf("webhook after enabling: %+v", got)
			}
		},
		"GoneIsNotFound": func(e *env) {
			_, _, _, err := e.Webhooks.TransitionWebhook(e.ctx, furrow.WebhookTransition{WebhookID: uuid.New(), Seq: 1, AtMs: 1}, 0)
			e.wantCode(err, furrow.ENOTFOUND, "TransitionWebhook(unknown)")
		},
		"LifecycleEventsWaitOnlyForWebhooksListingThem": func(e *env) {
			f, _ := e.farm()
			w := e.webhook(f.ID) // no list: the four default types only
			ev, _, _, err := e.Webhooks.TransitionWebhook(e.ctx, disabling(w, 1000), 0)
			e.must(err)
			if ev.Pending {
				e.t.Fatal("a lifecycle event waits for a webhook that does not list its type")
			}
			e.webhook(f.ID, furrow.EventWebhookEnabled)
			ev, _, _, err = e.Webhooks.TransitionWebhook(e.ctx, furrow.WebhookTransition{WebhookID: w.ID, Seq: 2, AtMs: 2000, Enabled: true, By: furrow.EnabledByAPI}, 0)
			e.must(err)
			if !ev.Pending {
				e.t.Fatal("a webhook.enabled event does not wait for the webhook that lists it")
			}
			created, err := e.Events.CreateEvent(e.ctx, furrow.Event{Type: furrow.EventWebhookDisabled, FarmID: f.ID, Data: json.RawMessage(`{}`)})
			e.must(err)
			if created.Pending {
				e.t.Fatal("a webhook.disabled event waits although only webhook.enabled is listed")
			}
		},
		"WebhookTestIsNoFarmEvent": func(e *env) {
			f, _ := e.farm()
			_, err := e.Events.CreateEvent(e.ctx, furrow.Event{Type: furrow.EventWebhookTest, FarmID: f.ID, Data: json.RawMessage(`{}`)})
			e.wantCode(err, furrow.EINVALID, "CreateEvent(webhook.test)")
		},
	})
}
