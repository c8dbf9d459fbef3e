package api

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/furrowhq/furrow"
)

func TestWebhookHealth(t *testing.T) {
	h := newHarness(t)
	r := h.user(h.manager, "POST", h.farmPath("/webhooks"), `{"url":"https://hooks.example.com/in"}`)
	var created struct {
		ID     uuid.UUID            `json:"id"`
		Health furrow.WebhookHealth `json:"health"`
	}
	decode(t, r, &created)
	if hl := created.Health; !hl.Enabled || hl.Attempts24h != 0 || hl.SuccessRate24h != nil || hl.LastFailure != nil {
		t.Fatalf("a new webhook's health %+v", hl)
	}
	other := h.createHook(`{"url":"https://hooks.example.com/other"}`)
	now := h.clock.Now()
	for i, status := range []int{200, 200, 200, 503} {
		err := h.store.AddAttempt(t.Context(), furrow.Attempt{WebhookID: created.ID, EventID: furrow.NewEventID(), Attempt: 1,
			StatusCode: status, DurationMs: int64(100 * (i + 1)), AtMs: furrow.Millis(now.Add(time.Duration(i-10) * time.Minute))})
		if err != nil {
			t.Fatal(err)
		}
	}
	if _, err := h.store.SetWebhookState(t.Context(), created.ID, true, 1, 0); err != nil {
		t.Fatal(err)
	}
	h.calls = h.store.Record()
	r = h.user(h.manager, "GET", h.farmPath("/webhooks"), "")
	var list []struct {
		ID     uuid.UUID            `json:"id"`
		Health furrow.WebhookHealth `json:"health"`
	}
	if err := json.Unmarshal([]byte(r.Body), &list); err != nil || r.Status != http.StatusOK || len(list) != 2 {
		t.Fatalf("list: %d %s", r.Status, r.Body)
	}
	if n := len(h.calls.Calls("AttemptHealth")); n != 1 {
		t.Fatalf("listing 2 webhooks read their health with %d calls, want 1", n)
	}
	hl := list[0].Health
	if hl.Attempts24h != 4 || hl.SuccessRate24h == nil || *hl.SuccessRate24h != 0.75 || hl.ConsecutiveFailures != 1 ||
		hl.LastFailure == nil || hl.LastFailure.StatusCode != 503 || *hl.P50DurationMs != 200 || *hl.P95DurationMs != 400 ||
		*hl.LastDeliveredAtMs != furrow.Millis(now.Add(-8*time.Minute)) {
		t.Fatalf("health %+v", hl)
	}
	if list[1].ID != other.ID || list[1].Health.Attempts24h != 0 {
		t.Fatalf("the other webhook's health %+v", list[1])
	}
	r = h.user(h.manager, "GET", h.farmPath("/webhooks/"+created.ID.String()), "")
	var one struct {
		Health furrow.WebhookHealth `json:"health"`
	}
	decode(t, r, &one)
	if one.Health.Attempts24h != 4 || one.Health.LastFailure == nil {
		t.Fatalf("get: %s", r.Body)
	}
}
