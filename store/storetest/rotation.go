package storetest

import (
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/furrowhq/furrow"
)

// rotated checks a webhook's secrets: the current one and its version, and
// the previous one with the end of its overlap ("" and 0 for none).
func (e *env) rotated(w furrow.Webhook, what, secret string, version int, previous string, untilMs int64) {
	e.t.Helper()
	if w.Secret != secret || w.SecretVersion != version || w.PreviousSecret != previous || w.PreviousSecretUntilMs != untilMs {
		e.t.Fatalf("%s: secret %q v%d, previous %q until %d; want %q v%d, previous %q until %d", what,
			w.Secret, w.SecretVersion, w.PreviousSecret, w.PreviousSecretUntilMs, secret, version, previous, untilMs)
	}
}

// readBack checks that every read of w sees the secrets rotated checks.
func (e *env) readBack(w furrow.Webhook, secret string, version int, previous string, untilMs int64) {
	e.t.Helper()
	got, err := e.Webhooks.Webhook(e.ctx, w.FarmID, w.ID)
	e.must(err)
	e.rotated(got, "Webhook", secret, version, previous, untilMs)
	got, err = e.Webhooks.WebhookByID(e.ctx, w.ID)
	e.must(err)
	e.rotated(got, "WebhookByID", secret, version, previous, untilMs)
	list, err := e.Webhooks.Webhooks(e.ctx, w.FarmID)
	e.must(err)
	i := slices.IndexFunc(list, func(o furrow.Webhook) bool { return o.ID == w.ID })
	if i < 0 {
		e.t.Fatalf("Webhooks does not list %s", w.ID)
	}
	e.rotated(list[i], "Webhooks", secret, version, previous, untilMs)
}

// SecretRotation checks RotateWebhookSecret: versions, the overlap ended
// by the store's clock, a rotation during an overlap, none, and attempts'
// SignedWith kept as given.
func SecretRotation(t *testing.T, newSubject New) {
	run(t, newSubject, map[string]func(*env){
		"OverlapEndsByTheStoreClock": func(e *env) {
			f, _ := e.farm()
			w := e.webhook(f.ID)
			e.rotated(w, "created", w.Secret, 1, "", 0)
			first, second := w.Secret, furrow.NewWebhookSecret()
			until := furrow.Millis(e.clock.Now().Add(time.Hour))
			got, err := e.Webhooks.RotateWebhookSecret(e.ctx, f.ID, w.ID, second, time.Hour)
			e.must(err)
			e.rotated(got, "rotated", second, 2, first, until)
			e.readBack(w, second, 2, first, until)
			signers := got.SigningSecrets(e.clock.Now())
			if !slices.Equal(furrow.Versions(signers), []int{1, 2}) || signers[0].Secret != first {
				e.t.Fatalf("signers during the overlap: %v", furrow.Versions(signers))
			}

			e.clock.Advance(time.Hour - time.Millisecond)
			e.readBack(w, second, 2, first, until)
			e.clock.Advance(time.Millisecond)
			e.readBack(w, second, 2, "", 0)
			e.clock.Advance(-time.Minute) // a clock set back does not revive it
			e.readBack(w, second, 2, "", 0)
		},
		"RotateDuringOverlap": func(e *env) {
			f, _ := e.farm()
			w := e.webhook(f.ID)
			second, third := furrow.NewWebhookSecret(), furrow.NewWebhookSecret()
			_, err := e.Webhooks.RotateWebhookSecret(e.ctx, f.ID, w.ID, second, time.Hour)
			e.must(err)
			e.clock.Advance(10 * time.Minute)
			until := furrow.Millis(e.clock.Now().Add(30 * time.Minute))
			got, err := e.Webhooks.RotateWebhookSecret(e.ctx, f.ID, w.ID, third, 30*time.Minute)
			e.must(err)
			e.rotated(got, "second rotation", third, 3, second, until)
			e.readBack(w, third, 3, second, until)
		},
		"NoOverlap": func(e *env) {
			f, _ := e.farm()
			w := e.webhook(f.ID)
			_, err := e.Webhooks.RotateWebhookSecret(e.ctx, f.ID, w.ID, furrow.NewWebhookSecret(), time.Hour)
			e.must(err)
			next := furrow.NewWebhookSecret()
			got, err := e.Webhooks.RotateWebhookSecret(e.ctx, f.ID, w.ID, next, 0)
			e.must(err)
			e.rotated(got, "rotated without overlap", next, 3, "", 0)
			e.readBack(w, next, 3, "", 0)
			if v := furrow.Versions(got.SigningSecrets(e.clock.Now())); !slices.Equal(v, []int{3}) {
				e.t.Fatalf("signers: %v, want [3]", v)
			}
		},
		"OtherFarmAndUnknownAreNotFound": func(e *env) {
			f, _ := e.farm()
			other, _ := e.farm()
			w := e.webhook(f.ID)
			_, err := e.Webhooks.RotateWebhookSecret(e.ctx, other.ID, w.ID, furrow.NewWebhookSecret(), time.Hour)
			e.wantCode(err, furrow.ENOTFOUND, "RotateWebhookSecret(other farm)")
			_, err = e.Webhooks.RotateWebhookSecret(e.ctx, f.ID, uuid.New(), furrow.NewWebhookSecret(), time.Hour)
			e.wantCode(err, furrow.ENOTFOUND, "RotateWebhookSecret(unknown)")
			e.readBack(w, w.Secret, 1, "", 0)
		},
		"AttemptsKeepSignedWith": func(e *env) {
			f, _ := e.farm()
			w := e.webhook(f.ID)
			event := furrow.NewEventID()
			for i, signed := range [][]int{nil, {2}, {1, 2}} {
				e.must(e.Webhooks.AddAttempt(e.ctx, furrow.Attempt{
					DeliveryID: uuid.New(), WebhookID: w.ID, EventID: event, Attempt: i + 1,
					StatusCode: 200, AtMs: furrow.Millis(e.clock.Now()), SignedWith: signed,
				}))
				e.clock.Advance(time.Second)
			}
			as, _, err := e.Webhooks.Attempts(e.ctx, furrow.AttemptFilter{WebhookID: w.ID, Limit: 10})
			e.must(err)
			if len(as) != 3 || !slices.Equal(as[0].SignedWith, []int{1, 2}) || !slices.Equal(as[1].SignedWith, []int{2}) ||
				as[2].SignedWith == nil || len(as[2].SignedWith) != 0 {
				e.t.Fatalf("signed_with read back: %v, %v, %v; want [1 2], [2], []", as[0].SignedWith, as[1].SignedWith, as[2].SignedWith)
			}
		},
	})
}
