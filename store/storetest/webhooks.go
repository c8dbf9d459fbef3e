package storetest

import (
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/furrowhq/furrow"
)

// webhook stores an enabled webhook on the farm.
func (e *env) webhook(farm uuid.UUID, types ...string) furrow.Webhook {
	e.t.Helper()
	w, err := e.Webhooks.CreateWebhook(e.ctx, furrow.Webhook{
		ID: uuid.New(), FarmID: farm, URL: "https://hooks.example.com/" + uuid.NewString(),
		Secret: furrow.WebhookSecretPrefix + "c2VjcmV0", Enabled: true, EventTypes: types,
	})
	e.must(err)
	return w
}

// sameWebhook compares two webhooks; nil and empty EventTypes both mean
// every type.
func sameWebhook(a, b furrow.Webhook) bool {
	for _, w := range []*furrow.Webhook{&a, &b} {
		if len(w.EventTypes) == 0 {
			w.EventTypes = nil
		}
	}
	return reflect.DeepEqual(a, b)
}

// WebhookService checks the furrow.WebhookService contract. What
// PruneAttempts does to test events is WebhookOwnerTools's.
func WebhookService(t *testing.T, newSubject New) {
	run(t, newSubject, map[string]func(*env){
		"PruneAttemptsMidDay": func(e *env) {
			e.pruneAttempts(e.clock.Now().Add(-furrow.AttemptRetention))
		},
		"PruneAttemptsAtMidnight": func(e *env) {
			e.pruneAttempts(e.clock.Now().UTC().Truncate(24 * time.Hour).Add(-furrow.AttemptRetention))
		},
		"CreateThenRead": func(e *env) {
			f, _ := e.farm()
			w := e.webhook(f.ID, furrow.EventTriggerFired)
			for _, read := range []func() (furrow.Webhook, error){
				func() (furrow.Webhook, error) { return e.Webhooks.Webhook(e.ctx, f.ID, w.ID) },
				func() (furrow.Webhook, error) { return e.Webhooks.WebhookByID(e.ctx, w.ID) },
			} {
				got, err := read()
				e.must(err)
				if !sameWebhook(got, w) {
					e.t.Fatalf("read %+v, want %+v", got, w)
				}
			}
		},
		"OtherFarmAndUnknownAreNotFound": func(e *env) {
			f, _ := e.farm()
			other, _ := e.farm()
			w := e.webhook(f.ID)
			_, err := e.Webhooks.Webhook(e.ctx, other.ID, w.ID)
			e.wantCode(err, furrow.ENOTFOUND, "Webhook(other farm)")
			_, err = e.Webhooks.WebhookByID(e.ctx, uuid.New())
			e.wantCode(err, furrow.ENOTFOUND, "WebhookByID(unknown)")
			e.wantCode(e.Webhooks.DeleteWebhook(e.ctx, other.ID, w.ID), furrow.ENOTFOUND, "DeleteWebhook(other farm)")
			_, err = e.Webhooks.WebhookByID(e.ctx, w.ID)
			e.must(err)
		},
		"ListOldestFirst": func(e *env) {
			f, _ := e.farm()
			var want []uuid.UUID
			for range 5 {
				want = append(want, e.webhook(f.ID).ID)
			}
			other, _ := e.farm()
			e.webhook(other.ID)
			ws, err := e.Webhooks.Webhooks(e.ctx, f.ID)
			e.must(err)
			var got []uuid.UUID
			for _, w := range ws {
				got = append(got, w.ID)
			}
			if !slices.Equal(got, want) {
				e.t.Fatalf("Webhooks = %v, want %v (oldest first)", got, want)
			}
		},
		"Delete": func(e *env) {
			f, _ := e.farm()
			w := e.webhook(f.ID)
			e.must(e.Webhooks.DeleteWebhook(e.ctx, f.ID, w.ID))
			_, err := e.Webhooks.Webhook(e.ctx, f.ID, w.ID)
			e.wantCode(err, furrow.ENOTFOUND, "Webhook after delete")
			e.wantCode(e.Webhooks.DeleteWebhook(e.ctx, f.ID, w.ID), furrow.ENOTFOUND, "second delete")
		},
		"AtMostPerFarm": func(e *env) {
			f, _ := e.farm()
			for range furrow.MaxWebhooksPerFarm - 8 {
				e.webhook(f.ID)
			}
			// Sixteen at once for the last eight places: exactly eight get one.
			errs := make(chan error, 16)
			for range 16 {
				go func() {
					_, err := e.Webhooks.CreateWebhook(e.ctx, furrow.Webhook{FarmID: f.ID, URL: "https://hooks.example.com/", Secret: "whsec_c2VjcmV0", Enabled: true})
					errs <- err
				}()
			}
			refused := 0
			for range 16 {
				if err := <-errs; err != nil {
					e.wantCode(err, furrow.ECONFLICT, "CreateWebhook past the bound")
					refused++
				}
			}
			ws, err := e.Webhooks.Webhooks(e.ctx, f.ID)
			e.must(err)
			if refused != 8 || len(ws) != furrow.MaxWebhooksPerFarm {
				e.t.Fatalf("%d of 16 refused, %d webhooks stored; want 8 and %d", refused, len(ws), furrow.MaxWebhooksPerFarm)
			}
			other, _ := e.farm()
			e.webhook(other.ID) // the bound is the farm's own
			e.must(e.Webhooks.DeleteWebhook(e.ctx, f.ID, ws[0].ID))
			e.webhook(f.ID) // a deleted webhook frees its place
			_, err = e.Webhooks.CreateWebhook(e.ctx, furrow.Webhook{FarmID: uuid.New(), URL: "https://hooks.example.com/", Secret: "whsec_c2VjcmV0"})
			e.wantCode(err, furrow.ENOTFOUND, "CreateWebhook(unknown farm)")
		},
		"SetState": func(e *env) {
			f, _ := e.farm()
			w := e.webhook(f.ID)
			_, err := e.Webhooks.SetWebhookState(e.ctx, w.ID, false, furrow.MaxFailedChains, 0)
			e.must(err)
			got, err := e.Webhooks.WebhookByID(e.ctx, w.ID)
			e.must(err)
			if got.Enabled || got.ConsecutiveFailures != furrow.MaxFailedChains {
				e.t.Fatalf("state %v/%d, want disabled/%d", got.Enabled, got.ConsecutiveFailures, furrow.MaxFailedChains)
			}
			_, err = e.Webhooks.SetWebhookState(e.ctx, uuid.New(), true, 0, 0)
			e.wantCode(err, furrow.ENOTFOUND, "SetWebhookState(unknown)")
		},
		"AttemptsNewestFirst": func(e *env) {
			f, _ := e.farm()
			w, other := e.webhook(f.ID), e.webhook(f.ID)
			event := furrow.NewEventID()
			for i := 1; i <= 3; i++ {
				e.must(e.Webhooks.AddAttempt(e.ctx, furrow.Attempt{
					DeliveryID: uuid.New(), WebhookID: w.ID, EventID: event, Attempt: i,
					StatusCode: 500, AtMs: furrow.Millis(e.clock.Now()),
				}))
				e.clock.Advance(time.Second)
			}
			e.must(e.Webhooks.AddAttempt(e.ctx, furrow.Attempt{
				DeliveryID: uuid.New(), WebhookID: other.ID, EventID: event, Attempt: 1, AtMs: furrow.Millis(e.clock.Now()),
			}))
			as, _, err := e.Webhooks.Attempts(e.ctx, furrow.AttemptFilter{WebhookID: w.ID, Limit: 2})
			e.must(err)
			if len(as) != 2 || as[0].Attempt != 3 || as[1].Attempt != 2 || as[0].EventID != event || as[0].StatusCode != 500 {
				e.t.Fatalf("Attempts(limit 2) = %+v, want attempts 3 and 2", as)
			}
		},
		"AttemptsPageAcrossDays": func(e *env) {
			f, _ := e.farm()
			w := e.webhook(f.ID)
			// Attempts on both sides of a UTC midnight, where a store
			// partitioned by day changes partition, two at one millisecond.
			midnight := time.Date(2031, 3, 12, 0, 0, 0, 0, time.UTC).UnixMilli()
			var want []int // attempt numbers, newest first
			for i, at := range []int64{midnight - 86400000, midnight - 1, midnight - 1, midnight, midnight + 5} {
				e.must(e.Webhooks.AddAttempt(e.ctx, furrow.Attempt{
					DeliveryID: uuid.New(), WebhookID: w.ID, EventID: furrow.NewEventID(), Attempt: i + 1, AtMs: at,
				}))
				want = append([]int{i + 1}, want...)
			}
			var got []int
			filter := furrow.AttemptFilter{WebhookID: w.ID, Limit: 2}
			for n := 0; ; n++ {
				as, next, err := e.Webhooks.Attempts(e.ctx, filter)
				e.must(err)
				for _, a := range as {
					got = append(got, a.Attempt)
				}
				if next == nil || n > 5 {
					break
				}
				filter.Before = next
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				e.t.Fatalf("paged attempts %v, want %v (newest first, without gaps)", got, want)
			}
		},
	})
}

// pruneAttempts checks PruneAttempts(before) on attempts of two webhooks
// around before. A store may drop whole days, so attempts up to a day
// older than before may stay; what both must do is remove every attempt
// more than a day older than before, keep every one at or after before,
// and return how many it removed. Pruning again removes nothing.
func (e *env) pruneAttempts(before time.Time) {
	e.t.Helper()
	f, _ := e.farm()
	ws := []furrow.Webhook{e.webhook(f.ID), e.webhook(f.ID)}
	cut := furrow.Millis(before)
	const day, hour = int64(24 * time.Hour / time.Millisecond), int64(time.Hour / time.Millisecond)
	at := map[uuid.UUID]int64{} // attempt's delivery id -> its time
	for i, offset := range []int64{-40 * day, -day - 1, -day, -12 * hour, -1, 0, 1, hour, 2 * day} {
		a := furrow.Attempt{DeliveryID: uuid.New(), WebhookID: ws[i%2].ID, EventID: furrow.NewEventID(), Attempt: 1, StatusCode: 200, AtMs: cut + offset}
		e.must(e.Webhooks.AddAttempt(e.ctx, a))
		at[a.DeliveryID] = a.AtMs
	}
	left := func() map[uuid.UUID]bool {
		kept := map[uuid.UUID]bool{}
		for _, w := range ws {
			as, next, err := e.Webhooks.Attempts(e.ctx, furrow.AttemptFilter{WebhookID: w.ID, Limit: 100})
			e.must(err)
			if next != nil {
				e.t.Fatalf("attempts of %s take more than a page", w.ID)
			}
			for _, a := range as {
				kept[a.DeliveryID] = true
			}
		}
		return kept
	}
	n, err := e.Webhooks.PruneAttempts(e.ctx, before)
	e.must(err)
	kept := left()
	for id, ms := range at {
		switch {
		case ms < cut-day && kept[id]:
			e.t.Errorf("PruneAttempts(%s) kept an attempt %d ms before it, more than a day", before, cut-ms)
		case ms >= cut && !kept[id]:
			e.t.Errorf("PruneAttempts(%s) removed an attempt %d ms after it", before, ms-cut)
		}
	}
	if gone := int64(len(at) - len(kept)); n != gone {
		e.t.Errorf("PruneAttempts(%s) = %d, but %d attempts went", before, n, gone)
	}
	if n, err := e.Webhooks.PruneAttempts(e.ctx, before); err != nil || n != 0 || len(left()) != len(kept) {
		e.t.Errorf("PruneAttempts(%s) again = %d, %v, %d attempts left; want 0 and %d left", before, n, err, len(left()), len(kept))
	}
}
