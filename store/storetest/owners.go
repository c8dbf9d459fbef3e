package storetest

import (
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/furrowhq/furrow"
)

// WebhookOwnerTools checks what the owners' webhook tools ask of the
// furrow.WebhookService: test events addressed to one webhook.
func WebhookOwnerTools(t *testing.T, newSubject New) {
	run(t, newSubject, map[string]func(*env){
		"TestEventIsReadBackAndAddressedToItsWebhookOnly": func(e *env) {
			f, _ := e.farm()
			w := e.webhook(f.ID)
			ev := furrow.NewWebhookTestEvent(w, furrow.Millis(e.clock.Now()))
			e.must(e.Webhooks.AddTestEvent(e.ctx, w.ID, ev))
			got, err := e.Webhooks.TestEvent(e.ctx, ev.ID)
			e.must(err)
			if got.ID != ev.ID || got.Type != furrow.EventWebhookTest || got.FarmID != f.ID ||
				got.OccurredAtMs != ev.OccurredAtMs || string(got.Data) != string(ev.Data) {
				e.t.Fatalf("TestEvent = %+v, want %+v", got, ev)
			}
			listed, err := e.Events.Events(e.ctx, furrow.EventFilter{FarmID: f.ID})
			e.must(err)
			if len(listed) != 0 {
				e.t.Fatalf("the farm's events list the test event: %+v", listed)
			}
			_, err = e.Events.Event(e.ctx, ev.ID)
			e.wantCode(err, furrow.ENOTFOUND, "Event(test event)")
			if e.Outbox != nil {
				claimed, err := e.Outbox.ClaimEvents(e.ctx, furrow.Claim{Owner: uuid.New(), Limit: 10, Lease: time.Minute})
				e.must(err)
				if len(claimed) != 0 {
					e.t.Fatalf("the outbox hands out the test event: %+v", claimed)
				}
			}
		},
		"TestEventUnknown": func(e *env) {
			f, _ := e.farm()
			w := e.webhook(f.ID)
			ev := furrow.NewWebhookTestEvent(w, furrow.Millis(e.clock.Now()))
			e.wantCode(e.Webhooks.AddTestEvent(e.ctx, uuid.New(), ev), furrow.ENOTFOUND, "AddTestEvent(unknown webhook)")
			_, err := e.Webhooks.TestEvent(e.ctx, ev.ID)
			e.wantCode(err, furrow.ENOTFOUND, "TestEvent(never stored)")
			_, err = e.Webhooks.TestEvent(e.ctx, "nope")
			e.wantCode(err, furrow.EINVALID, "TestEvent(malformed id)")
		},
		"TestEventGoesWithRetention": func(e *env) {
			f, _ := e.farm()
			w := e.webhook(f.ID)
			ev := furrow.NewWebhookTestEvent(w, furrow.Millis(e.clock.Now()))
			e.must(e.Webhooks.AddTestEvent(e.ctx, w.ID, ev))
			_, err := e.Webhooks.PruneAttempts(e.ctx, e.clock.Now().Add(-time.Hour))
			e.must(err)
			_, err = e.Webhooks.TestEvent(e.ctx, ev.ID)
			e.must(err)
			_, err = e.Webhooks.PruneAttempts(e.ctx, e.clock.Now().Add(time.Hour))
			e.must(err)
			_, err = e.Webhooks.TestEvent(e.ctx, ev.ID)
			e.wantCode(err, furrow.ENOTFOUND, "TestEvent after retention")
		},
	})
}
