package activities_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"go.temporal.io/sdk/testsuite"

	"github.com/furrowhq/furrow"
	"github.com/furrowhq/furrow/activities"
	"github.com/furrowhq/furrow/internal/testenv"
	"github.com/furrowhq/furrow/keyring"
	pgstore "github.com/furrowhq/furrow/store"
	"github.com/furrowhq/furrow/webhook"
)

// testRing parses "id:<32 bytes of b>" entries given as id, b pairs.
func testRing(t *testing.T, idsAndBytes ...any) *keyring.Ring {
	t.Helper()
	var entries []string
	for i := 0; i < len(idsAndBytes); i += 2 {
		key := bytes.Repeat([]byte{byte(idsAndBytes[i+1].(int))}, keyring.KeySize)
		entries = append(entries, idsAndBytes[i].(string)+":"+base64.StdEncoding.EncodeToString(key))
	}
	r, err := keyring.Parse(strings.Join(entries, ","))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestDeliverySignsWithTheSealedSecret: the receiver verifies every
// delivery with the plaintext secret it was given, before the secret is
// sealed, after it is sealed, after a reseal under a new key, and once the
// old key is dropped.
func TestDeliverySignsWithTheSealedSecret(t *testing.T) {
	ctx := context.Background()
	url := testenv.NewDatabase(t, testenv.Migrator{Digest: pgstore.MigrationsDigest(), Migrate: pgstore.Migrate})
	open := func(keys *keyring.Ring) *pgstore.DB {
		db, err := pgstore.Open(ctx, url, pgstore.Options{Keys: keys})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(db.Close)
		return db
	}
	var mu sync.Mutex
	var got []received
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		got = append(got, received{r.Header.Clone(), b})
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(srv.Close)

	plain := open(nil)
	user, _, err := plain.CreateUser(ctx, uuid.NewString()+"@example.com")
	if err != nil {
		t.Fatal(err)
	}
	farm, err := plain.CreateFarm(ctx, user.ID, "Sealed farm")
	if err != nil {
		t.Fatal(err)
	}
	hook, err := plain.CreateWebhook(ctx, furrow.Webhook{FarmID: farm.ID, URL: srv.URL + "/hook", Secret: furrow.NewWebhookSecret(), Enabled: true})
	if err != nil {
		t.Fatal(err)
	}
	event := furrow.Event{ID: furrow.NewEventID(), Type: furrow.EventMetricValue, FarmID: farm.ID,
		OccurredAtMs: 1714564800000, Data: []byte(`{"device_id":"x","value":"21.50"}`)}
	if _, err := plain.CreateEvent(ctx, event); err != nil {
		t.Fatal(err)
	}
	now := time.UnixMilli(1714564800123)

	deliverWith := func(step string, db *pgstore.DB) {
		t.Helper()
		acts := &activities.Activities{Webhooks: db, HTTP: srv.Client(), Clock: furrow.ClockFunc(func() time.Time { return now })}
		var suite testsuite.WorkflowTestSuite
		env := suite.NewTestActivityEnvironment()
		env.RegisterActivity(acts)
		in := activities.DeliverInput{WebhookID: hook.ID, EventID: event.ID, FirstAttempt: 1,
			Schedule: furrow.Durations([]time.Duration{time.Minute})}
		if _, err := env.ExecuteActivity(acts.Deliver, in); err != nil {
			t.Fatalf("%s: deliver: %v", step, err)
		}
		mu.Lock()
		r := got[len(got)-1]
		mu.Unlock()
		if err := webhook.Verify(hook.Secret, r.header.Get(webhook.SignatureHeader), r.body, now); err != nil {
			t.Errorf("%s: %s does not verify with the plaintext secret: %v", step, webhook.SignatureHeader, err)
		}
		if err := webhook.VerifyStandard(hook.Secret, r.header, r.body, now); err != nil {
			t.Errorf("%s: webhook-signature does not verify with the plaintext secret: %v", step, err)
		}
	}

	deliverWith("unsealed", plain)
	k1 := open(testRing(t, "k1", 1))
	if rep, err := k1.SealSecrets(ctx, pgstore.SealOptions{}); err != nil || rep.Sealed != 1 {
		t.Fatalf("seal: %+v, %v", rep, err)
	}
	deliverWith("sealed with k1", k1)
	rotating := open(testRing(t, "k2", 2, "k1", 1))
	deliverWith("k2 added in front, before the reseal", rotating)
	if rep, err := rotating.SealSecrets(ctx, pgstore.SealOptions{Reseal: true}); err != nil || rep.Resealed != 1 {
		t.Fatalf("reseal: %+v, %v", rep, err)
	}
	deliverWith("resealed with k2", rotating)
	deliverWith("k1 dropped", open(testRing(t, "k2", 2)))
	if len(got) != 5 {
		t.Fatalf("%d deliveries received, want 5", len(got))
	}
}
