package store_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/furrowhq/furrow"
	"github.com/furrowhq/furrow/internal/testclock"
	"github.com/furrowhq/furrow/keyring"
	"github.com/furrowhq/furrow/store"
)

// openClocked opens another store on url with ring keys and clock.
func openClocked(t *testing.T, url string, keys *keyring.Ring, clock furrow.Clock) *store.DB {
	t.Helper()
	db, err := store.Open(context.Background(), url, store.Options{Keys: keys, Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	return db
}

// rotate rotates w's secret through db and returns the new secret.
func rotate(t *testing.T, db *store.DB, w furrow.Webhook, overlap time.Duration) string {
	t.Helper()
	secret := furrow.NewWebhookSecret()
	if _, err := db.RotateWebhookSecret(context.Background(), w.FarmID, w.ID, secret, overlap); err != nil {
		t.Fatal(err)
	}
	return secret
}

// noPlaintext fails when the webhooks table holds any of secrets, or the
// base64 key of one, in clear.
func noPlaintext(t *testing.T, url string, secrets ...string) {
	t.Helper()
	dump := dumpWebhooks(t, url)
	for _, s := range secrets {
		if strings.Contains(dump, s) || strings.Contains(dump, strings.TrimPrefix(s, furrow.WebhookSecretPrefix)) {
			t.Fatalf("the webhooks table holds a secret in clear:\n%s", dump)
		}
	}
}

// TestSealCoversPreviousSecrets: seal-secrets and reseal seal the previous
// secret of a rotation like the current one, and clear the expired ones.
func TestSealCoversPreviousSecrets(t *testing.T) {
	ctx := context.Background()
	clock := testclock.New(time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC))
	plain, url := newDB(t, clock)
	f := newFixture(t, plain)
	a, b, c := sealableWebhook(t, plain, f.farm.ID), sealableWebhook(t, plain, f.farm.ID), sealableWebhook(t, plain, f.farm.ID)
	a2 := rotate(t, plain, a, time.Hour)
	b2 := rotate(t, plain, b, time.Minute)
	clock.Advance(2 * time.Minute) // b's previous secret has expired, unread

	k1 := openClocked(t, url, ringOf(t, "k1", 1), clock)
	rep, err := k1.SealSecrets(ctx, store.SealOptions{})
	if err != nil || rep.Sealed != 4 || rep.Cleared != 1 || rep.Resealed != 0 {
		t.Fatalf("seal: %+v, %v; want 4 sealed (3 current, a's previous), b's previous cleared", rep, err)
	}
	noPlaintext(t, url, a.Secret, a2, b.Secret, b2, c.Secret)
	dump := dumpWebhooks(t, url)
	if strings.Count(dump, `"previous_secret_key_id":"k1"`) != 1 || strings.Count(dump, `"previous_secret":null`) != 2 {
		t.Fatalf("want a's previous secret sealed with k1, and none for b and c:\n%s", dump)
	}
	got, err := k1.WebhookByID(ctx, a.ID)
	if err != nil || got.Secret != a2 || got.PreviousSecret != a.Secret || got.SecretVersion != 2 {
		t.Fatalf("a after sealing: %q/%q v%d (%v)", got.Secret, got.PreviousSecret, got.SecretVersion, err)
	}

	k2 := openClocked(t, url, ringOf(t, "k2", 2, "k1", 1), clock)
	if rep, err = k2.SealSecrets(ctx, store.SealOptions{Reseal: true}); err != nil || rep.Resealed != 4 || rep.Sealed != 0 {
		t.Fatalf("reseal: %+v, %v; want 4 resealed", rep, err)
	}
	k2only := openClocked(t, url, ringOf(t, "k2", 2), clock)
	if got, err = k2only.WebhookByID(ctx, a.ID); err != nil || got.PreviousSecret != a.Secret {
		t.Fatalf("a's previous secret under k2 alone: %q (%v)", got.PreviousSecret, err)
	}
	if byKey, err := k2only.SecretsByKey(ctx); err != nil || len(byKey) != 1 || byKey["k2"] != 4 {
		t.Fatalf("secrets by key %v (%v), want 4 under k2", byKey, err)
	}

	// A rotation moves the sealed secret to previous_secret as it is, and
	// a read after the overlap clears it.
	c2 := rotate(t, k2only, c, time.Minute)
	if got, err = k2only.WebhookByID(ctx, c.ID); err != nil || got.Secret != c2 || got.PreviousSecret != c.Secret {
		t.Fatalf("c rotated under k2: %q/%q (%v)", got.Secret, got.PreviousSecret, err)
	}
	noPlaintext(t, url, c.Secret, c2)
	clock.Advance(time.Minute)
	if got, err = k2only.WebhookByID(ctx, c.ID); err != nil || got.PreviousSecret != "" || got.PreviousSecretUntilMs != 0 {
		t.Fatalf("c after its overlap: %q until %d (%v)", got.PreviousSecret, got.PreviousSecretUntilMs, err)
	}
	if n := strings.Count(dumpWebhooks(t, url), `"previous_secret":null`); n != 2 {
		t.Fatalf("%d rows without a previous secret after the expired one was read, want 2 (b and c)", n)
	}
	if _, err := k2only.RotateWebhookSecret(ctx, uuid.New(), a.ID, furrow.NewWebhookSecret(), 0); furrow.ErrorCode(err) != furrow.ENOTFOUND {
		t.Fatalf("rotating under another farm: %v", err)
	}
}
