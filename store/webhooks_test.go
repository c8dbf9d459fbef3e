package store_test

import (
	"context"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/furrowhq/furrow"
)

func newWebhook(fx fixture, types ...string) furrow.Webhook {
	return furrow.Webhook{FarmID: fx.farm.ID, URL: "https://hooks.example.com/in", Secret: "whsec_" + uuid.NewString(), Enabled: true, EventTypes: types}
}

func TestWebhooks(t *testing.T) {
	ctx := context.Background()
	db, _ := newDB(t, newClock())
	fx := newFixture(t, db)
	all, err := db.CreateWebhook(ctx, newWebhook(fx))
	if err != nil || all.ID == uuid.Nil || all.EventTypes == nil {
		t.Fatalf("CreateWebhook = %+v, %v", all, err)
	}
	some, err := db.CreateWebhook(ctx, newWebhook(fx, furrow.EventDeviceOffline))
	if err != nil {
		t.Fatal(err)
	}
	got, err := db.Webhook(ctx, fx.farm.ID, some.ID)
	if err != nil || got.Secret != some.Secret || !got.Enabled || len(got.EventTypes) != 1 || got.EventTypes[0] != furrow.EventDeviceOffline {
		t.Fatalf("Webhook = %+v, %v", got, err)
	}
	if got.Subscribes(furrow.EventMetricValue) {
		t.Fatal("filtered webhook subscribes to metric.value")
	}
	if got, _ := db.WebhookByID(ctx, all.ID); !got.Subscribes(furrow.EventMetricValue) {
		t.Fatal("webhook without types does not subscribe to everything")
	}
	_, err = db.Webhook(ctx, uuid.New(), some.ID)
	wantCode(t, err, furrow.ENOTFOUND)
	ws, err := db.Webhooks(ctx, fx.farm.ID)
	if err != nil || len(ws) != 2 || ws[0].ID != all.ID || ws[1].ID != some.ID {
		t.Fatalf("Webhooks = %+v, %v; want oldest first", ws, err)
	}
	if _, err := db.SetWebhookState(ctx, all.ID, false, 5, 0); err != nil {
		t.Fatal(err)
	}
	if got, _ := db.WebhookByID(ctx, all.ID); got.Enabled || got.ConsecutiveFailures != 5 {
		t.Fatalf("state not written: %+v", got)
	}
	_, err = db.SetWebhookState(ctx, uuid.New(), true, 0, 0)
	wantCode(t, err, furrow.ENOTFOUND)
	wantCode(t, db.DeleteWebhook(ctx, uuid.New(), all.ID), furrow.ENOTFOUND)
	if err := db.DeleteWebhook(ctx, fx.farm.ID, all.ID); err != nil {
		t.Fatal(err)
	}
	_, err = db.WebhookByID(ctx, all.ID)
	wantCode(t, err, furrow.ENOTFOUND)
	wantCode(t, db.DeleteWebhook(ctx, fx.farm.ID, all.ID), furrow.ENOTFOUND)
	_, err = db.CreateWebhook(ctx, furrow.Webhook{FarmID: uuid.New(), URL: "https://x.example", Secret: "whsec_x"})
	wantCode(t, err, furrow.ENOTFOUND)
	_, err = db.CreateWebhook(ctx, some)
	wantCode(t, err, furrow.ECONFLICT)
	if strings.Contains(err.Error(), some.Secret) {
		t.Fatal("error quotes the secret")
	}
}

func TestAttempts(t *testing.T) {
	ctx := context.Background()
	clock := newClock()
	db, _ := newDB(t, clock)
	fx := newFixture(t, db)
	w, err := db.CreateWebhook(ctx, newWebhook(fx))
	if err != nil {
		t.Fatal(err)
	}
	ev := furrow.NewEventID()
	body := strings.Repeat("é", furrow.MaxResponseBody) // 2 bytes each: the cut falls inside one
	for i := 1; i <= 3; i++ {
		a := furrow.Attempt{WebhookID: w.ID, EventID: ev, Attempt: i, StatusCode: 500, ResponseBody: body, Error: "bad\x00\xff" + body, DurationMs: 12}
		if err := db.AddAttempt(ctx, a); err != nil {
			t.Fatal(err)
		}
		clock.Advance(time.Minute)
	}
	as, _, err := db.Attempts(ctx, furrow.AttemptFilter{WebhookID: w.ID, Limit: 2})
	if err != nil || len(as) != 2 || as[0].Attempt != 3 || as[1].Attempt != 2 {
		t.Fatalf("Attempts = %+v, %v; want attempts 3, 2", as, err)
	}
	a := as[0]
	if a.EventID != ev || a.WebhookID != w.ID || a.DeliveryID == uuid.Nil || a.AtMs == 0 || a.DurationMs != 12 || a.StatusCode != 500 {
		t.Fatalf("attempt fields: %+v", a)
	}
	if len(a.ResponseBody) > furrow.MaxResponseBody || len(a.ResponseBody) < furrow.MaxResponseBody-1 || !utf8.ValidString(a.ResponseBody) {
		t.Fatalf("body of %d bytes, valid %v", len(a.ResponseBody), utf8.ValidString(a.ResponseBody))
	}
	if len(a.Error) > furrow.MaxAttemptError || !utf8.ValidString(a.Error) {
		t.Fatalf("error of %d bytes, valid %v", len(a.Error), utf8.ValidString(a.Error))
	}
	if strings.ContainsRune(a.Error, 0) || !strings.HasPrefix(a.Error, "bad") {
		t.Fatalf("error text %q", a.Error)
	}
	if as, _, _ := db.Attempts(ctx, furrow.AttemptFilter{WebhookID: w.ID, Limit: 0}); len(as) != 3 {
		t.Fatalf("default limit listed %d", len(as))
	}
	wantCode(t, db.AddAttempt(ctx, furrow.Attempt{WebhookID: w.ID, EventID: "x"}), furrow.EINVALID)
	// Attempts outlive their webhook until retention.
	if err := db.DeleteWebhook(ctx, fx.farm.ID, w.ID); err != nil {
		t.Fatal(err)
	}
	if as, _, _ := db.Attempts(ctx, furrow.AttemptFilter{WebhookID: w.ID, Limit: 10}); len(as) != 3 {
		t.Fatalf("attempts of a deleted webhook: %d, want 3", len(as))
	}
}

func TestPruneAttemptsDropsOldPartitions(t *testing.T) {
	ctx := context.Background()
	clock := newClock()
	db, url := newDB(t, clock)
	wh := uuid.New()
	now := clock.Now()
	old := now.AddDate(0, 0, -40)
	for _, at := range []time.Time{old, old.Add(time.Hour), now.AddDate(0, 0, -29), now} {
		a := furrow.Attempt{WebhookID: wh, EventID: furrow.NewEventID(), Attempt: 1, AtMs: at.UnixMilli()}
		if err := db.AddAttempt(ctx, a); err != nil {
			t.Fatal(err)
		}
	}
	n, err := db.PruneAttempts(ctx, now.AddDate(0, 0, -30))
	if err != nil || n != 2 {
		t.Fatalf("PruneAttempts = %d, %v; want 2", n, err)
	}
	as, _, err := db.Attempts(ctx, furrow.AttemptFilter{WebhookID: wh, Limit: 10})
	if err != nil || len(as) != 2 || as[0].AtMs != now.UnixMilli() {
		t.Fatalf("kept %+v, %v; want the 2 recent ones", as, err)
	}
	conn := connect(t, url)
	var oldParts, ahead int
	err = conn.QueryRow(ctx, `SELECT
		count(*) FILTER (WHERE c.relname = $1),
		count(*) FILTER (WHERE c.relname = $2)
		FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
		WHERE i.inhparent = 'delivery_attempts'::regclass`,
		"delivery_attempts_p"+old.Format("20060102"), "delivery_attempts_p"+now.AddDate(0, 0, 6).Format("20060102")).Scan(&oldParts, &ahead)
	if err != nil {
		t.Fatal(err)
	}
	if oldParts != 0 || ahead != 1 {
		t.Fatalf("old partition present %d, partition six days ahead %d; want 0 and 1", oldParts, ahead)
	}
	if n, err := db.PruneAttempts(ctx, now.AddDate(0, 0, -30)); err != nil || n != 0 {
		t.Fatalf("second prune = %d, %v", n, err)
	}
}
