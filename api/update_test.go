package api

import (
	"net/http"
	"strings"
	"testing"

	"github.com/furrowhq/furrow"
)

func TestWebhookRateOnCreateAndPatch(t *testing.T) {
	h := newHarness(t)
	w := h.createHook(`{"url":"https://hooks.example.com/in","max_per_second":5}`)
	if w.MaxPerSecond == nil || *w.MaxPerSecond != 5 {
		t.Fatalf("created %+v", w)
	}
	path := h.farmPath("/webhooks/" + w.ID.String())
	r := h.user(h.manager, "PATCH", path, `{"event_types":["trigger.fired"]}`)
	if r.Status != http.StatusOK || !strings.Contains(r.Body, `"max_per_second":5`) || !strings.Contains(r.Body, `"event_types":["trigger.fired"]`) {
		t.Fatalf("patch of the types kept the rate? %d %s", r.Status, r.Body)
	}
	r = h.user(h.manager, "PATCH", path, `{"max_per_second":null}`)
	if r.Status != http.StatusOK || !strings.Contains(r.Body, `"max_per_second":null`) {
		t.Fatalf("unlimited: %d %s", r.Status, r.Body)
	}
	r = h.user(h.manager, "PATCH", path, `{"max_per_second":0.5,"url":"https://hooks.example.com/new"}`)
	stored, _ := h.store.WebhookByID(t.Context(), w.ID)
	if r.Status != http.StatusOK || stored.MaxPerSecond == nil || *stored.MaxPerSecond != 0.5 || stored.URL != "https://hooks.example.com/new" {
		t.Fatalf("patch: %d %s, stored %+v", r.Status, r.Body, stored)
	}
	if plain := h.createHook(`{"url":"https://hooks.example.com/plain"}`); plain.MaxPerSecond != nil {
		t.Fatalf("default rate %v, want unlimited", *plain.MaxPerSecond)
	}
}

func TestWebhookRateRejects(t *testing.T) {
	h := newHarness(t)
	w := h.createHook(`{"url":"https://hooks.example.com/in"}`)
	path := h.farmPath("/webhooks/" + w.ID.String())
	for _, body := range []string{`{"max_per_second":0}`, `{"max_per_second":-1}`, `{"max_per_second":1001}`, `{"max_per_second":"5"}`,
		`{"url":"http://example.com"}`, `{"event_types":["nope"]}`} {
		r := h.user(h.manager, "PATCH", path, body)
		if r.Status != http.StatusBadRequest {
			t.Errorf("%s: %d %s", body, r.Status, r.Body)
		}
	}
	expectError(t, h.user(h.manager, "POST", h.farmPath("/webhooks"), `{"url":"https://hooks.example.com/x","max_per_second":0}`),
		http.StatusBadRequest, furrow.EINVALID, "max_per_second")
	expectError(t, h.user(h.viewer, "PATCH", path, `{}`), http.StatusForbidden, furrow.EFORBIDDEN, "")
	if stored, _ := h.store.WebhookByID(t.Context(), w.ID); stored.MaxPerSecond != nil {
		t.Fatal("a refused patch changed the webhook")
	}
}

// A patch changes only the url, the event types and the rate: the
// webhook's state and secret have endpoints of their own, so a patch that
// names them changes nothing.
func TestWebhookPatchLeavesStateAndSecret(t *testing.T) {
	h := newHarness(t)
	w := h.createHook(`{"url":"https://hooks.example.com/in","event_types":["trigger.fired"]}`)
	path := h.farmPath("/webhooks/" + w.ID.String())
	r := h.user(h.manager, "PATCH", path, `{"enabled":false,"secret":"whsec_mine","consecutive_failures":9}`)
	stored, err := h.store.WebhookByID(t.Context(), w.ID)
	if r.Status != http.StatusOK || err != nil || !stored.Enabled || stored.Secret != w.Secret || stored.ConsecutiveFailures != 0 ||
		stored.URL != w.URL || len(stored.EventTypes) != 1 {
		t.Fatalf("patch: %d %s; stored %+v, %v", r.Status, r.Body, stored, err)
	}
}

// null in a PATCH sets a field back to its default; a webhook's url has
// none, so null there is refused and changes nothing.
func TestWebhookPatchNull(t *testing.T) {
	h := newHarness(t)
	w := h.createHook(`{"url":"https://hooks.example.com/in","event_types":["trigger.fired"],"max_per_second":5}`)
	path := h.farmPath("/webhooks/" + w.ID.String())
	expectError(t, h.user(h.manager, "PATCH", path, `{"url":null,"event_types":null}`), http.StatusBadRequest, furrow.EINVALID, "url cannot be null")
	if stored, _ := h.store.WebhookByID(t.Context(), w.ID); stored.URL != w.URL || len(stored.EventTypes) != 1 {
		t.Fatalf("a refused patch changed the webhook: %+v", stored)
	}
	r := h.user(h.manager, "PATCH", path, `{"event_types":null}`)
	if r.Status != http.StatusOK || !strings.Contains(r.Body, `"event_types":[]`) || !strings.Contains(r.Body, `"max_per_second":5`) {
		t.Fatalf("event_types null: %d %s", r.Status, r.Body)
	}
	stored, _ := h.store.WebhookByID(t.Context(), w.ID)
	if len(stored.EventTypes) != 0 || !stored.Subscribes(furrow.EventMetricValue) {
		t.Fatalf("event_types null stored %v, want the default types", stored.EventTypes)
	}
}

// A field of the wrong type is named in the error.
func TestWebhookPatchWrongTypes(t *testing.T) {
	h := newHarness(t)
	w := h.createHook(`{"url":"https://hooks.example.com/in"}`)
	path := h.farmPath("/webhooks/" + w.ID.String())
	for body, want := range map[string]string{
		`{"url":5}`:              "The field url must be a string.",
		`{"event_types":"a"}`:    "The field event_types must be a list.",
		`{"event_types":[1]}`:    "The field event_types holds a number where a string is expected.",
		`{"event_types":[{}]}`:   "The field event_types holds an object where a string is expected.",
		`{"max_per_second":"5"}`: "The field max_per_second must be a number.",
		`{"max_per_second":[5]}`: "The field max_per_second must be a number.",
	} {
		expectError(t, h.user(h.manager, "PATCH", path, body), http.StatusBadRequest, furrow.EINVALID, want)
	}
}
