package store_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/furrowhq/furrow"
)

// A process that lacks the key of a webhook's secret (one not yet given
// the new key of a rotation of the ring, say) cannot answer a rotation or
// an update of that webhook: it must then write nothing, or the manager
// never sees the new secret, and a retry makes that unseen secret the
// previous one, dropping the one receivers know. PostgreSQL only: the
// in-memory store seals nothing.
func TestSecretWriteThatCannotAnswerWritesNothing(t *testing.T) {
	ctx := context.Background()
	_, url := newDB(t, newClock())
	lacking, _ := openOn(t, url, ringOf(t, "k1", 1))
	holding, _ := openOn(t, url, ringOf(t, "k2", 2, "k1", 1))
	f := newFixture(t, holding)
	w := sealableWebhook(t, holding, f.farm.ID) // sealed with k2

	_, err := lacking.RotateWebhookSecret(ctx, f.farm.ID, w.ID, furrow.NewWebhookSecret(), furrow.DefaultSecretOverlap)
	wantCode(t, err, furrow.EINTERNAL)
	url2 := "https://hooks.example.com/other"
	_, err = lacking.UpdateWebhook(ctx, f.farm.ID, w.ID, furrow.WebhookPatch{URL: &url2})
	wantCode(t, err, furrow.EINTERNAL)
	got, err := holding.WebhookByID(ctx, w.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.SecretVersion != 1 || got.Secret != w.Secret || got.PreviousSecret != "" || got.URL != w.URL {
		t.Fatalf("after the failed rotation and update: version %d, secret kept %v, previous %q, url %q; want the webhook unchanged",
			got.SecretVersion, got.Secret == w.Secret, got.PreviousSecret, got.URL)
	}

	// The retry, on a process holding the key, keeps the secret receivers
	// know as the previous one.
	second := furrow.NewWebhookSecret()
	again, err := holding.RotateWebhookSecret(ctx, f.farm.ID, w.ID, second, furrow.DefaultSecretOverlap)
	if err != nil || again.SecretVersion != 2 || again.Secret != second || again.PreviousSecret != w.Secret {
		t.Fatalf("retried rotation: version %d, secret new %v, previous the original %v (%v)",
			again.SecretVersion, again.Secret == second, again.PreviousSecret == w.Secret, err)
	}
	if upd, err := holding.UpdateWebhook(ctx, f.farm.ID, w.ID, furrow.WebhookPatch{URL: &url2}); err != nil || upd.URL != url2 || upd.PreviousSecret != w.Secret {
		t.Fatalf("retried update: %+v, %v", upd, err)
	}
}

// An update that meets an expired previous secret leaves it out of its
// answer and clears it, once its own transaction has committed.
func TestUpdateClearsAnExpiredPreviousSecret(t *testing.T) {
	ctx := context.Background()
	clock := newClock()
	_, url := newDB(t, clock)
	k1 := openClocked(t, url, ringOf(t, "k1", 1), clock)
	f := newFixture(t, k1)
	w := sealableWebhook(t, k1, f.farm.ID)
	rotate(t, k1, w, time.Minute)
	clock.Advance(2 * time.Minute)
	rate := 3.0
	got, err := k1.UpdateWebhook(ctx, f.farm.ID, w.ID, furrow.WebhookPatch{SetMaxPerSecond: true, MaxPerSecond: &rate})
	if err != nil || got.PreviousSecret != "" || got.PreviousSecretUntilMs != 0 {
		t.Fatalf("update: previous %q until %d (%v); want it left out", got.PreviousSecret, got.PreviousSecretUntilMs, err)
	}
	if !strings.Contains(dumpWebhooks(t, url), `"previous_secret":null`) {
		t.Fatalf("the expired previous secret is still stored:\n%s", dumpWebhooks(t, url))
	}
}
