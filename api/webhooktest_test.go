package api

import (
	"net/http"
	"testing"
	"time"

	"github.com/furrowhq/furrow"
)

func TestTestDelivery(t *testing.T) {
	h := newHarness(t)
	w := h.createHook(`{"url":"https://hooks.example.com/in","event_types":["trigger.fired"]}`)
	if _, err := h.store.SetWebhookState(t.Context(), w.ID, false, furrow.MaxFailedChains, 0); err != nil {
		t.Fatal(err)
	}
	path := h.farmPath("/webhooks/" + w.ID.String() + "/test")
	r := h.user(h.manager, "POST", path, "")
	if r.Status != http.StatusAccepted {
		t.Fatalf("test delivery: %d %s", r.Status, r.Body)
	}
	var out struct {
		EventID string `json:"event_id"`
	}
	decode(t, r, &out)
	if len(h.engine.tested) != 1 || h.engine.tested[0].ID != out.EventID || h.engine.tested[0].Type != furrow.EventWebhookTest {
		t.Fatalf("started %+v, answered %q", h.engine.tested, out.EventID)
	}
	parts, err := h.store.AttemptParts(t.Context(), w.ID, out.EventID, true)
	stored := parts.Event
	if err != nil || !parts.EventFound || stored.FarmID != h.farm || stored.OccurredAtMs != furrow.Millis(h.clock.Now()) {
		t.Fatalf("stored test event %+v (%v)", parts, err)
	}
	if es, _, _ := h.store.Events(t.Context(), furrow.EventFilter{FarmID: h.farm}); len(es) != 0 || h.engine.wakes != 0 {
		t.Fatalf("the test event is a farm event: %+v, %d wakes", es, h.engine.wakes)
	}
	if got, _ := h.store.WebhookByID(t.Context(), w.ID); got.Enabled {
		t.Fatal("a test delivery enabled the webhook")
	}
}

func TestTestDeliveryRateLimitedPerWebhook(t *testing.T) {
	h := newHarness(t)
	w, other := h.createHook(`{"url":"https://hooks.example.com/a"}`), h.createHook(`{"url":"https://hooks.example.com/b"}`)
	path := func(id string) string { return h.farmPath("/webhooks/" + id + "/test") }
	for i := range furrow.TestDeliveryLimit {
		if r := h.user(h.manager, "POST", path(w.ID.String()), ""); r.Status != http.StatusAccepted {
			t.Fatalf("test %d: %d %s", i+1, r.Status, r.Body)
		}
	}
	r := h.user(h.manager, "POST", path(w.ID.String()), "")
	expectError(t, r, http.StatusTooManyRequests, furrow.ERATELIMITED, "test deliveries")
	if r.Header.Get("Retry-After") == "" {
		t.Fatal("429 without retry-after")
	}
	if r := h.user(h.manager, "POST", path(other.ID.String()), ""); r.Status != http.StatusAccepted {
		t.Fatalf("another webhook is limited too: %d %s", r.Status, r.Body)
	}
	h.clock.Advance(furrow.TestDeliveryWindow + time.Second)
	if r := h.user(h.manager, "POST", path(w.ID.String()), ""); r.Status != http.StatusAccepted {
		t.Fatalf("after the window: %d %s", r.Status, r.Body)
	}
	if n := len(h.engine.tested); n != furrow.TestDeliveryLimit+2 {
		t.Fatalf("%d test deliveries started", n)
	}
}

func TestTestDeliveryAccess(t *testing.T) {
	h := newHarness(t)
	w := h.createHook(`{"url":"https://hooks.example.com/in"}`)
	path := h.farmPath("/webhooks/" + w.ID.String() + "/test")
	expectError(t, h.user(h.viewer, "POST", path, ""), http.StatusForbidden, furrow.EFORBIDDEN, "")
	expectError(t, h.user(h.manager, "POST", h.farmPath("/webhooks/"+furrow.NewEventID()[4:]+"/test"), ""), http.StatusNotFound, furrow.ENOTFOUND, "")
	if len(h.engine.tested) != 0 {
		t.Fatal("a refused test delivery was started")
	}
}
