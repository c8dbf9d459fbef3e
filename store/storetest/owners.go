package storetest

import (
	"slices"
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
			parts, err := e.Webhooks.AttemptParts(e.ctx, w.ID, ev.ID, true)
			e.must(err)
			got := parts.Event
			if !parts.EventFound || got.ID != ev.ID || got.Type != furrow.EventWebhookTest || got.FarmID != f.ID ||
				got.OccurredAtMs != ev.OccurredAtMs || !sameJSON(got.Data, ev.Data) {
				e.t.Fatalf("AttemptParts(test event) = %+v, want %+v", parts, ev)
			}
			listed, _, err := e.Events.Events(e.ctx, furrow.EventFilter{FarmID: f.ID})
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
			e.wantTestEvent(w.ID, ev.ID, false, "never stored")
			_, err := e.Webhooks.AttemptParts(e.ctx, w.ID, "nope", true)
			e.wantCode(err, furrow.EINVALID, "AttemptParts(malformed test event id)")
		},
		"TestEventGoesWithRetention": func(e *env) {
			f, _ := e.farm()
			w := e.webhook(f.ID)
			ev := furrow.NewWebhookTestEvent(w, furrow.Millis(e.clock.Now()))
			e.must(e.Webhooks.AddTestEvent(e.ctx, w.ID, ev))
			_, err := e.Webhooks.PruneAttempts(e.ctx, e.clock.Now().Add(-time.Hour))
			e.must(err)
			e.wantTestEvent(w.ID, ev.ID, true, "before retention")
			_, err = e.Webhooks.PruneAttempts(e.ctx, e.clock.Now().Add(time.Hour))
			e.must(err)
			e.wantTestEvent(w.ID, ev.ID, false, "after retention")
		},
		"HealthSummarizesTheWindowAndTheWholeLog": func(e *env) {
			f, _ := e.farm()
			w, quiet := e.webhook(f.ID), e.webhook(f.ID)
			ev := furrow.NewEventID()
			add := func(status int, errText string, durMs int64, at time.Time) {
				e.must(e.Webhooks.AddAttempt(e.ctx, furrow.Attempt{DeliveryID: uuid.New(), WebhookID: w.ID, EventID: ev,
					Attempt: 1, StatusCode: status, Error: errText, DurationMs: durMs, AtMs: furrow.Millis(at)}))
			}
			now := e.clock.Now()
			old := now.Add(-furrow.HealthWindow - time.Hour)
			add(200, "", 5, old.Add(-time.Minute))
			add(503, "", 900, old)                                                // the last failure, outside the window
			for i, d := range []int64{10, 20, 30, 40, 50, 60, 70, 80, 90, 1000} { // in the window
				add(200, "", d, now.Add(-time.Duration(20-i)*time.Minute))
			}
			add(0, furrow.SkipWebhookDisabled, 0, now) // skipped: left out
			hs, err := e.Webhooks.AttemptHealth(e.ctx, []uuid.UUID{quiet.ID, w.ID})
			e.must(err)
			if len(hs) != 2 || hs[0].WebhookID != quiet.ID || hs[1].WebhookID != w.ID {
				e.t.Fatalf("AttemptHealth = %+v, want one per webhook in order", hs)
			}
			if q := hs[0]; q.Attempts != 0 || q.LastDeliveredAtMs != nil || q.LastFailure != nil || q.P50DurationMs != nil {
				e.t.Fatalf("a webhook without attempts: %+v", q)
			}
			h := hs[1]
			lastOK := furrow.Millis(now.Add(-11 * time.Minute))
			if h.Attempts != 10 || h.Delivered != 10 || h.LastDeliveredAtMs == nil || *h.LastDeliveredAtMs != lastOK {
				e.t.Fatalf("health %+v, want 10 delivered attempts, the last at %d", h, lastOK)
			}
			if h.P50DurationMs == nil || *h.P50DurationMs != 50 || h.P95DurationMs == nil || *h.P95DurationMs != 1000 {
				e.t.Fatalf("durations p50 %v p95 %v, want 50 and 1000", h.P50DurationMs, h.P95DurationMs)
			}
			if h.LastFailure == nil || h.LastFailure.StatusCode != 503 || h.LastFailure.AtMs != furrow.Millis(old) {
				e.t.Fatalf("last failure %+v, want the 503", h.LastFailure)
			}
			add(0, "timeout after 10s", 10000, now.Add(time.Second))
			hs, err = e.Webhooks.AttemptHealth(e.ctx, []uuid.UUID{w.ID})
			e.must(err)
			if f := hs[0].LastFailure; f == nil || f.StatusCode != 0 || f.Error != "timeout after 10s" || hs[0].Attempts != 11 {
				e.t.Fatalf("after a timeout: %+v", hs[0])
			}
		},
		"DeliveredBetweenSeesOnlyDeliveriesInEachGap": func(e *env) {
			f, _ := e.farm()
			w, other := e.webhook(f.ID), e.webhook(f.ID)
			now := e.clock.Now()
			add := func(id uuid.UUID, status int, errText string, at time.Time) {
				e.must(e.Webhooks.AddAttempt(e.ctx, furrow.Attempt{DeliveryID: uuid.New(), WebhookID: id, EventID: furrow.NewEventID(),
					Attempt: 1, StatusCode: status, Error: errText, AtMs: furrow.Millis(at)}))
			}
			add(w.ID, 204, "", now.Add(-time.Hour))
			add(w.ID, 500, "", now)
			add(w.ID, 0, furrow.SkipWebhookDisabled, now.Add(time.Minute))
			add(other.ID, 200, "", now.Add(time.Minute))
			ms := func(d time.Duration) int64 { return furrow.Millis(now.Add(d)) }
			for _, c := range []struct {
				ends []int64
				want []bool
			}{
				{nil, nil},
				{[]int64{ms(-2 * time.Hour)}, []bool{true}},
				{[]int64{ms(-time.Hour)}, []bool{false}}, // began at the end: not after it
				{[]int64{ms(-3 * time.Hour), ms(-90 * time.Minute), ms(-30 * time.Minute), ms(-time.Minute)}, []bool{false, true, false, false}},
				{[]int64{ms(-2 * time.Hour), ms(-time.Hour) + 1}, []bool{true, false}},
				{[]int64{ms(-2 * time.Hour), ms(-time.Hour)}, []bool{false, false}}, // began at the next end: not before it
			} {
				got, err := e.Webhooks.DeliveredBetween(e.ctx, w.ID, c.ends)
				e.must(err)
				if !slices.Equal(got, c.want) {
					e.t.Fatalf("DeliveredBetween(%v) = %v, want %v: only the 204 an hour ago was delivered", c.ends, got, c.want)
				}
			}
		},
		"UpdateWebhookKeepsWhatIsLeftOut": func(e *env) {
			f, _ := e.farm()
			other, _ := e.farm()
			w := e.webhook(f.ID, furrow.EventTriggerFired)
			rate, url := 2.5, "https://hooks.example.com/moved"
			got, err := e.Webhooks.UpdateWebhook(e.ctx, f.ID, w.ID, furrow.WebhookPatch{SetMaxPerSecond: true, MaxPerSecond: &rate})
			e.must(err)
			if got.MaxPerSecond == nil || *got.MaxPerSecond != rate || got.URL != w.URL || !slices.Equal(got.EventTypes, w.EventTypes) {
				e.t.Fatalf("after setting the rate: %+v", got)
			}
			got, err = e.Webhooks.UpdateWebhook(e.ctx, f.ID, w.ID, furrow.WebhookPatch{URL: &url, EventTypes: []string{}})
			e.must(err)
			if got.MaxPerSecond == nil || *got.MaxPerSecond != rate || got.URL != url || len(got.EventTypes) != 0 {
				e.t.Fatalf("after moving: %+v", got)
			}
			read, err := e.Webhooks.WebhookByID(e.ctx, w.ID)
			e.must(err)
			if !sameWebhook(read, got) {
				e.t.Fatalf("read %+v, want %+v", read, got)
			}
			got, err = e.Webhooks.UpdateWebhook(e.ctx, f.ID, w.ID, furrow.WebhookPatch{SetMaxPerSecond: true})
			e.must(err)
			if got.MaxPerSecond != nil {
				e.t.Fatalf("unlimited again: %+v", got)
			}
			_, err = e.Webhooks.UpdateWebhook(e.ctx, other.ID, w.ID, furrow.WebhookPatch{URL: &url})
			e.wantCode(err, furrow.ENOTFOUND, "UpdateWebhook(other farm)")
		},
		"RateIsStoredOnCreate": func(e *env) {
			f, _ := e.farm()
			rate := 10.0
			w, err := e.Webhooks.CreateWebhook(e.ctx, furrow.Webhook{FarmID: f.ID, URL: "https://hooks.example.com/r",
				Secret: furrow.WebhookSecretPrefix + "c2VjcmV0", Enabled: true, MaxPerSecond: &rate})
			e.must(err)
			rate = 99 // the store keeps its own copy
			got, err := e.Webhooks.WebhookByID(e.ctx, w.ID)
			e.must(err)
			if got.MaxPerSecond == nil || *got.MaxPerSecond != 10 {
				e.t.Fatalf("stored rate %v", got.MaxPerSecond)
			}
		},
	})
}

// wantTestEvent fails unless the test event id is stored (found) or not,
// as an attempt of webhook reads it.
func (e *env) wantTestEvent(webhook uuid.UUID, id string, found bool, when string) {
	e.t.Helper()
	p, err := e.Webhooks.AttemptParts(e.ctx, webhook, id, true)
	e.must(err)
	if p.EventFound != found || (found && p.Event.ID != id) {
		e.t.Fatalf("test event %s: found %v (%+v), want found %v", when, p.EventFound, p.Event, found)
	}
}
