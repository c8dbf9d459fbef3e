package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/furrowhq/furrow"
)

// control stands in for the delivery engine's furrow.WebhookControl,
// recording what the API asks of it. Like temporal.Control, it refuses a
// key used before for another request with ECONFLICT, recording nothing.
type control struct {
	mu        sync.Mutex
	sets      []furrow.RedeliverySet // the redeliveries since a time
	once      [][]furrow.Event       // the redeliveries of events under a key
	keys      []string               // the keys of both, in order
	asked     map[string]string      // what each key asked for first
	deleted   []uuid.UUID            // the webhooks told deleted
	deleteErr error                  // what WebhookDeleted answers
}

// reusedKey records that key asks for request, and returns ECONFLICT when
// it asked for another before. c.mu is held.
func (c *control) reusedKey(key, request string) error {
	if key == "" {
		return nil
	}
	if c.asked == nil {
		c.asked = map[string]string{}
	}
	if first, ok := c.asked[key]; ok && first != request {
		return furrow.Errorf(furrow.ECONFLICT, "The Idempotency-Key was already used for a different redelivery.")
	}
	c.asked[key] = request
	return nil
}

func (c *control) RedeliverOnce(_ context.Context, _ furrow.Webhook, events []furrow.Event, key string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	request := "events"
	for _, e := range events {
		request += ":" + e.ID
	}
	if err := c.reusedKey(key, request); err != nil {
		return err
	}
	c.once, c.keys = append(c.once, events), append(c.keys, key)
	return nil
}

func (c *control) RedeliverSince(_ context.Context, _ furrow.Webhook, set furrow.RedeliverySet, key string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.reusedKey(key, fmt.Sprint("since:", set.SinceMs)); err != nil {
		return err
	}
	c.sets, c.keys = append(c.sets, set), append(c.keys, key)
	return nil
}

func (c *control) WebhookDeleted(_ context.Context, id uuid.UUID) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.deleted = append(c.deleted, id)
	return c.deleteErr
}

// withControl gives the harness a WebhookControl and returns it.
func (h *harness) withControl() *control {
	c := &control{}
	h.deps.Control = c
	h.rebuild()
	return c
}

// setIDs reads the ids of set's events as the redelivery's workflow does, a
// page of at most 100 at a time.
func (h *harness) setIDs(set furrow.RedeliverySet) []string {
	h.t.Helper()
	var ids []string
	var after *furrow.Cursor
	for {
		page, next, err := h.store.RedeliveryEvents(h.t.Context(), set, after, 100)
		if err != nil {
			h.t.Fatal(err)
		}
		for _, e := range page {
			ids = append(ids, e.ID)
		}
		if next == nil {
			return ids
		}
		after = next
	}
}

// A redelivery since a time counts only the events the webhook subscribes
// to: a thousand metric.value events since then do not refuse the
// recovery of a webhook that receives trigger.fired, and the count is what
// the redelivery sends.
func TestRedeliverSinceCountsOnlySubscribedEvents(t *testing.T) {
	h := newHarness(t)
	ctl := h.withControl()
	w := h.createHook(`{"url":"https://example.com/a","event_types":["trigger.fired"]}`)
	for i := range furrow.MaxListLimit + 1 {
		if _, err := h.store.CreateEvent(t.Context(), furrow.Event{Type: furrow.EventMetricValue, FarmID: h.farm, OccurredAtMs: 1000 + int64(i)}); err != nil {
			t.Fatal(err)
		}
	}
	fired, err := h.store.CreateEvent(t.Context(), furrow.Event{Type: furrow.EventTriggerFired, FarmID: h.farm, OccurredAtMs: 1500})
	if err != nil {
		t.Fatal(err)
	}
	r := h.user(h.manager, "POST", h.farmPath("/webhooks/"+w.ID.String()+"/redeliver"), `{"since_ms":1000}`)
	if r.Status != http.StatusAccepted || strings.TrimSpace(r.Body) != `{"count":1}` {
		t.Fatalf("since: %d %s, want 202 {\"count\":1}", r.Status, r.Body)
	}
	if len(ctl.sets) != 1 || ctl.sets[0].Count != 1 || ctl.keys[0] != "" {
		t.Fatalf("redeliveries %+v, keys %q; want one set of 1 event, no key", ctl.sets, ctl.keys)
	}
	if ids := h.setIDs(ctl.sets[0]); len(ids) != 1 || ids[0] != fired.ID {
		t.Fatalf("the set holds %v, want %s", ids, fired.ID)
	}
	if len(h.engine.redelivered) != 0 {
		t.Fatalf("the request named %d events to the engine, want none", len(h.engine.redelivered))
	}
}

// More than furrow.MaxRedeliverSince subscribed events since since_ms are
// refused whole; that many are accepted.
func TestRedeliverSinceBound(t *testing.T) {
	if testing.Short() {
		t.Skip("stores a hundred thousand events")
	}
	h := newHarness(t)
	ctl := h.withControl()
	w := h.createHook(`{"url":"https://example.com/a","event_types":["trigger.fired"]}`)
	path := h.farmPath("/webhooks/" + w.ID.String() + "/redeliver")
	for i := range furrow.MaxRedeliverSince {
		if _, err := h.store.CreateEvent(t.Context(), furrow.Event{Type: furrow.EventTriggerFired, FarmID: h.farm, OccurredAtMs: 2000 + int64(i)}); err != nil {
			t.Fatal(err)
		}
	}
	r := h.user(h.manager, "POST", path, `{"since_ms":2000}`)
	if want := fmt.Sprintf(`{"count":%d}`, furrow.MaxRedeliverSince); r.Status != http.StatusAccepted || strings.TrimSpace(r.Body) != want {
		t.Fatalf("%d events since: %d %s, want 202 %s", furrow.MaxRedeliverSince, r.Status, r.Body, want)
	}
	_, _ = h.store.CreateEvent(t.Context(), furrow.Event{Type: furrow.EventTriggerFired, FarmID: h.farm, OccurredAtMs: 2000})
	expectError(t, h.user(h.manager, "POST", path, `{"since_ms":2000}`), http.StatusBadRequest, furrow.EINVALID,
		fmt.Sprintf("More than %d events", furrow.MaxRedeliverSince))
	if len(ctl.sets) != 1 {
		t.Fatalf("%d redeliveries started, want the first only", len(ctl.sets))
	}
}

// A disabled webhook's deliveries would all be skipped, so its redelivery
// is refused with 409 and starts nothing.
func TestRedeliverToADisabledWebhook(t *testing.T) {
	h := newHarness(t)
	ctl := h.withControl()
	w := h.createHook(`{"url":"https://example.com/a","event_types":["trigger.fired"]}`)
	fired, _ := h.store.CreateEvent(t.Context(), furrow.Event{Type: furrow.EventTriggerFired, FarmID: h.farm, OccurredAtMs: 1000})
	_, _ = h.store.SetWebhookState(t.Context(), w.ID, false, furrow.MaxFailedChains, 0)
	path := h.farmPath("/webhooks/" + w.ID.String() + "/redeliver")
	for _, body := range []string{`{"event_id":"` + fired.ID + `"}`, `{"since_ms":0}`} {
		expectError(t, h.user(h.manager, "POST", path, body), http.StatusConflict, furrow.ECONFLICT, "The webhook is disabled; enable it first.")
	}
	if len(h.engine.redelivered) != 0 || len(ctl.sets) != 0 {
		t.Fatal("a redelivery to a disabled webhook started deliveries")
	}
	_, _ = h.store.SetWebhookState(t.Context(), w.ID, true, 0, 0)
	if r := h.user(h.manager, "POST", path, `{"since_ms":0}`); r.Status != http.StatusAccepted {
		t.Fatalf("once enabled: %d %s, want 202", r.Status, r.Body)
	}
}

// An Idempotency-Key names the redelivery: both forms pass it on, the
// same request sent again under its key is accepted again, the key reused
// for another body (another form, event or since_ms) is 409, and a
// malformed one is refused.
func TestRedeliverIdempotencyKey(t *testing.T) {
	h := newHarness(t)
	ctl := h.withControl()
	w := h.createHook(`{"url":"https://example.com/a","event_types":["trigger.fired"]}`)
	fired, _ := h.store.CreateEvent(t.Context(), furrow.Event{Type: furrow.EventTriggerFired, FarmID: h.farm, OccurredAtMs: 1000})
	path := h.farmPath("/webhooks/" + w.ID.String() + "/redeliver")
	send := func(body, key string) response {
		return h.do(req{method: "POST", path: path, body: body,
			header: map[string]string{"Authorization": "Bearer " + h.manager, "Idempotency-Key": key}})
	}
	since, event := `{"since_ms":0}`, `{"event_id":"`+fired.ID+`"}`
	for range 2 {
		for body, key := range map[string]string{since: "recover-1", event: "recover-2"} {
			if r := send(body, key); r.Status != http.StatusAccepted || strings.TrimSpace(r.Body) != `{"count":1}` {
				t.Fatalf("%s under a key: %d %s", body, r.Status, r.Body)
			}
		}
	}
	expectError(t, send(event, "recover-1"), http.StatusConflict, furrow.ECONFLICT, "Idempotency-Key")
	expectError(t, send(since, "recover-2"), http.StatusConflict, furrow.ECONFLICT, "Idempotency-Key")
	expectError(t, send(`{"since_ms":500}`, "recover-1"), http.StatusConflict, furrow.ECONFLICT, "Idempotency-Key")
	if len(ctl.sets) != 2 || len(ctl.once) != 2 || len(h.engine.redelivered) != 0 {
		t.Fatalf("%d sets and %d event lists under a key, %d without; want 2, 2 and 0", len(ctl.sets), len(ctl.once), len(h.engine.redelivered))
	}
	for _, k := range ctl.keys {
		if k != "recover-1" && k != "recover-2" {
			t.Fatalf("keys passed on %q, want the request's each time", ctl.keys)
		}
	}
	expectError(t, send(`{"since_ms":0}`, "bad\x01key"), http.StatusBadRequest, furrow.EINVALID, "Idempotency-Key")
}

// Deleting a webhook tells its workflow to end; a signal that fails does
// not fail the delete, which committed: it is logged.
func TestDeleteWebhookEndsItsWorkflow(t *testing.T) {
	h := newHarness(t)
	ctl := h.withControl()
	w := h.createHook(`{"url":"https://example.com/a"}`)
	if r := h.user(h.manager, "DELETE", h.farmPath("/webhooks/"+w.ID.String()), ""); r.Status != http.StatusNoContent {
		t.Fatalf("delete: %d %s", r.Status, r.Body)
	}
	if len(ctl.deleted) != 1 || ctl.deleted[0] != w.ID {
		t.Fatalf("workflows told deleted: %v, want %s", ctl.deleted, w.ID)
	}

	ctl.deleteErr = errors.New("temporal unreachable")
	w = h.createHook(`{"url":"https://example.com/a"}`)
	if r := h.user(h.manager, "DELETE", h.farmPath("/webhooks/"+w.ID.String()), ""); r.Status != http.StatusNoContent {
		t.Fatalf("delete with Temporal down: %d %s, want 204", r.Status, r.Body)
	}
	if _, err := h.store.WebhookByID(t.Context(), w.ID); furrow.ErrorCode(err) != furrow.ENOTFOUND {
		t.Fatalf("webhook after delete: %v, want gone", err)
	}
	if logs := h.logs.String(); !strings.Contains(logs, "its workflow was not told") || !strings.Contains(logs, w.ID.String()) {
		t.Fatalf("the failed signal was not logged: %s", logs)
	}
}

// reenabler is the engine with a Reenable of the test's own.
type reenabler struct {
	*engine
	reenable func(ctx context.Context, id uuid.UUID) error
}

func (e reenabler) Reenable(ctx context.Context, id uuid.UUID) error { return e.reenable(ctx, id) }

// A signal slow enough to leave less than ReenableWait of the request's
// time still answers 202 in time, never a timed-out 500.
func TestEnableWebhookAfterASlowSignal(t *testing.T) {
	h := newHarness(t)
	h.cfg.RequestTimeout = 400 * time.Millisecond
	h.deps.Delivery = reenabler{h.engine, func(context.Context, uuid.UUID) error {
		time.Sleep(300 * time.Millisecond)
		return nil
	}}
	h.rebuild()
	w := h.createHook(`{"url":"https://example.com/a"}`)
	_, _ = h.store.SetWebhookState(t.Context(), w.ID, false, furrow.MaxFailedChains, 0)
	r := h.user(h.manager, "POST", h.farmPath("/webhooks/"+w.ID.String()+"/enable"), "")
	if r.Status != http.StatusAccepted || !strings.Contains(r.Body, `"reason"`) {
		t.Fatalf("status %d %s, want 202 with a reason", r.Status, r.Body)
	}
}

// A re-enable followed at once by a new failure is still seen applied:
// the transition number moved.
func TestEnableWebhookSeesTheTransition(t *testing.T) {
	h := newHarness(t)
	w := h.createHook(`{"url":"https://example.com/a"}`)
	_, _, _, err := h.store.TransitionWebhook(t.Context(), furrow.WebhookTransition{WebhookID: w.ID, Seq: 1, Failures: furrow.MaxFailedChains}, 0)
	if err != nil {
		t.Fatal(err)
	}
	h.deps.Delivery = reenabler{h.engine, func(ctx context.Context, id uuid.UUID) error {
		if _, _, _, err := h.store.TransitionWebhook(ctx, furrow.WebhookTransition{WebhookID: id, Seq: 2, Enabled: true, By: furrow.EnabledByAPI}, 0); err != nil {
			return err
		}
		_, err := h.store.SetWebhookState(ctx, id, true, 1, 0)
		return err
	}}
	h.rebuild()
	r := h.user(h.manager, "POST", h.farmPath("/webhooks/"+w.ID.String()+"/enable"), "")
	if r.Status != http.StatusOK || !strings.Contains(r.Body, `"consecutive_failures":1`) {
		t.Fatalf("status %d %s, want 200 with the failure that followed", r.Status, r.Body)
	}
}
