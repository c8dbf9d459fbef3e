package api

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/furrowhq/furrow"
	"github.com/google/uuid"
)

// createHook creates a webhook as the manager and returns it.
func (h *harness) createHook(body string) furrow.Webhook {
	h.t.Helper()
	r := h.user(h.manager, "POST", h.farmPath("/webhooks"), body)
	if r.Status != http.StatusCreated {
		h.t.Fatalf("create webhook: %d %s", r.Status, r.Body)
	}
	var w furrow.Webhook
	decode(h.t, r, &w)
	return w
}

func TestCreateWebhook(t *testing.T) {
	h := newHarness(t)
	r := h.user(h.manager, "POST", h.farmPath("/webhooks"), `{"url":"https://hooks.example.com/in"}`)
	if r.Status != http.StatusCreated || !strings.Contains(r.Body, `"event_types":[]`) ||
		!strings.Contains(r.Body, `"enabled":true`) || !strings.Contains(r.Body, `"consecutive_failures":0`) {
		t.Fatalf("%d %s", r.Status, r.Body)
	}
	var w furrow.Webhook
	decode(t, r, &w)
	raw, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(w.Secret, "whsec_"))
	if !strings.HasPrefix(w.Secret, "whsec_") || err != nil || len(raw) != 32 || w.ID == uuid.Nil {
		t.Fatalf("secret %q or id %v malformed", w.Secret, w.ID)
	}
	if stored, err := h.store.WebhookByID(t.Context(), w.ID); err != nil || stored.FarmID != h.farm || stored.Secret != w.Secret {
		t.Fatalf("stored %+v (%v)", stored, err)
	}
	w2 := h.createHook(`{"url":"https://93.184.216.34/x","event_types":["trigger.fired","metric.value","trigger.fired"]}`)
	if strings.Join(w2.EventTypes, ",") != "trigger.fired,metric.value" || w2.Secret == w.Secret {
		t.Fatalf("second webhook %+v", w2)
	}
	w3 := h.createHook(`{"url":"https://93.184.216.34/y","event_types":["webhook.disabled","webhook.enabled"]}`)
	if strings.Join(w3.EventTypes, ",") != "webhook.disabled,webhook.enabled" {
		t.Fatalf("a webhook listing the lifecycle types: %+v", w3)
	}
	if strings.Contains(h.logs.String(), w.Secret) {
		t.Fatal("a webhook secret appears in the logs")
	}
}

func TestCreateWebhookRejects(t *testing.T) {
	h := newHarness(t)
	for body, reason := range map[string]string{
		`{}`:                                                           "url is required",
		`{"url":"http://example.com"}`:                                 "https",
		`{"url":"ftp://example.com"}`:                                  "absolute address that uses https",
		`{"url":"/relative"}`:                                          "absolute address that uses https",
		`{"url":"https://intranet/x"}`:                                 "fully qualified",
		`{"url":"https://printer.local/x"}`:                            "local network name",
		`{"url":"https://localhost/x"}`:                                "localhost",
		`{"url":"https://a.localhost./x"}`:                             "localhost",
		`{"url":"https://127.0.0.1/x"}`:                                "public address",
		`{"url":"https://10.0.0.5/x"}`:                                 "public address",
		`{"url":"https://192.168.1.1/x"}`:                              "public address",
		`{"url":"https://169.254.169.254/latest"}`:                     "public address",
		`{"url":"https://100.64.0.1/"}`:                                "public address",
		`{"url":"https://[::1]/"}`:                                     "public address",
		`{"url":"https://[fe80::1]/"}`:                                 "public address",
		`{"url":"https://[::ffff:10.0.0.1]/"}`:                         "public address",
		`{"url":"https://0.0.0.0/"}`:                                   "public address",
		`{"url":"https://user:pw@example.com/"}`:                       "credentials",
		`{"url":"https://example.com","event_types":["nope"]}`:         "unknown event type",
		`{"url":"https://example.com","event_types":"metric.value"}`:   "event_types must be a list",
		`{"url":"https://example.com","event_types":["webhook.test"]}`: "only to the webhook tested",
	} {
		expectError(t, h.user(h.manager, "POST", h.farmPath("/webhooks"), body), http.StatusBadRequest, furrow.EINVALID, reason)
	}
	if ws, err := h.store.Webhooks(t.Context(), h.farm); err != nil || len(ws) != 0 {
		t.Fatal("a rejected webhook was stored")
	}
}

func TestCreateWebhookAllowPrivate(t *testing.T) {
	h := newHarness(t)
	h.cfg.AllowPrivateWebhooks = true
	h.rebuild()
	w := h.createHook(`{"url":"http://127.0.0.1:9000/hook"}`)
	if w.URL != "http://127.0.0.1:9000/hook" {
		t.Fatalf("url %q", w.URL)
	}
}

func TestGetListDeleteWebhook(t *testing.T) {
	h := newHarness(t)
	w := h.createHook(`{"url":"https://example.com/a"}`)
	path := h.farmPath("/webhooks/" + w.ID.String())
	var got furrow.Webhook
	r := h.user(h.owner, "GET", path, "")
	decode(t, r, &got)
	if r.Status != http.StatusOK || got.Secret != w.Secret {
		t.Fatalf("get: %d %s", r.Status, r.Body)
	}
	var list []furrow.Webhook
	decode(t, h.user(h.manager, "GET", h.farmPath("/webhooks"), ""), &list)
	if len(list) != 1 || list[0].Secret != w.Secret {
		t.Fatalf("list: %+v", list)
	}
	expectError(t, h.user(h.manager, "GET", h.farmPath("/webhooks/bad"), ""), http.StatusBadRequest, furrow.EINVALID, "webhook id")
	expectError(t, h.user(h.manager, "GET", h.farmPath("/webhooks/"+uuid.NewString()), ""), http.StatusNotFound, furrow.ENOTFOUND, "")
	// A webhook of another farm is not reachable through this one.
	other := uuid.New()
	if _, err := h.store.CreateWebhook(t.Context(), furrow.Webhook{ID: other, FarmID: h.otherFarm()}); err != nil {
		t.Fatal(err)
	}
	expectError(t, h.user(h.manager, "DELETE", h.farmPath("/webhooks/"+other.String()), ""), http.StatusNotFound, furrow.ENOTFOUND, "")
	if r := h.user(h.manager, "DELETE", path, ""); r.Status != http.StatusNoContent || r.Body != "" {
		t.Fatalf("delete: %d %q", r.Status, r.Body)
	}
	expectError(t, h.user(h.manager, "GET", path, ""), http.StatusNotFound, furrow.ENOTFOUND, "")
}

func TestEnableWebhook(t *testing.T) {
	h := newHarness(t)
	w := h.createHook(`{"url":"https://example.com/a"}`)
	_, _ = h.store.SetWebhookState(t.Context(), w.ID, false, 5, 0)
	path := h.farmPath("/webhooks/" + w.ID.String() + "/enable")

	// The workflow has not applied the signal within the wait: 202 and the
	// current state with a reason.
	r := h.user(h.manager, "POST", path, "")
	if r.Status != http.StatusAccepted || !strings.Contains(r.Body, `"enabled":false`) || !strings.Contains(r.Body, `"reason"`) {
		t.Fatalf("pending: %d %s", r.Status, r.Body)
	}
	h.engine.flipOnSignal = true
	r = h.user(h.manager, "POST", path, "")
	var got furrow.Webhook
	decode(t, r, &got)
	if r.Status != http.StatusOK || !got.Enabled || got.ConsecutiveFailures != 0 || strings.Contains(r.Body, `"reason"`) {
		t.Fatalf("enabled: %d %s", r.Status, r.Body)
	}
	if len(h.engine.reenabled) != 2 || h.engine.reenabled[0] != w.ID {
		t.Fatalf("reenable signals %v", h.engine.reenabled)
	}
	expectError(t, h.user(h.manager, "POST", h.farmPath("/webhooks/"+uuid.NewString()+"/enable"), ""), http.StatusNotFound, furrow.ENOTFOUND, "")
}

func TestAttempts(t *testing.T) {
	h := newHarness(t)
	w := h.createHook(`{"url":"https://example.com/a"}`)
	for i := 1; i <= 3; i++ {
		_ = h.store.AddAttempt(t.Context(), furrow.Attempt{DeliveryID: uuid.New(), WebhookID: w.ID, EventID: "evt_" + uuid.NewString(), Attempt: i, StatusCode: 500})
	}
	var list []furrow.Attempt
	r := h.user(h.manager, "GET", h.farmPath("/webhooks/"+w.ID.String()+"/attempts?limit=2"), "")
	decode(t, r, &list)
	if len(list) != 2 || list[0].Attempt != 3 {
		t.Fatalf("attempts: %s", r.Body)
	}
	expectError(t, h.user(h.manager, "GET", h.farmPath("/webhooks/"+w.ID.String()+"/attempts?limit=0"), ""), http.StatusBadRequest, furrow.EINVALID, "limit")
	got := pageAll(t, h, h.manager, h.farmPath("/webhooks/"+w.ID.String()+"/attempts?limit=2"),
		func(a furrow.Attempt) string { return fmt.Sprint(a.Attempt) })
	if fmt.Sprint(got) != "[3 2 1]" {
		t.Fatalf("paged attempts %v, want [3 2 1]", got)
	}
	for _, c := range []string{"abc", encodeCursor(eventsList, furrow.Cursor{TimestampMs: 1})} {
		expectError(t, h.user(h.manager, "GET", h.farmPath("/webhooks/"+w.ID.String()+"/attempts?cursor="+c), ""),
			http.StatusBadRequest, furrow.EINVALID, "cursor is malformed")
	}
}

func TestRedeliver(t *testing.T) {
	h := newHarness(t)
	ctl := h.withControl()
	w := h.createHook(`{"url":"https://example.com/a","event_types":["trigger.fired"]}`)
	path := h.farmPath("/webhooks/" + w.ID.String() + "/redeliver")
	fired, _ := h.store.CreateEvent(t.Context(), furrow.Event{Type: furrow.EventTriggerFired, FarmID: h.farm, OccurredAtMs: 1000})
	reco, _ := h.store.CreateEvent(t.Context(), furrow.Event{Type: furrow.EventRecommendationCreated, FarmID: h.farm, OccurredAtMs: 2000})
	later, _ := h.store.CreateEvent(t.Context(), furrow.Event{Type: furrow.EventTriggerFired, FarmID: h.farm, OccurredAtMs: 3000})
	foreign, _ := h.store.CreateEvent(t.Context(), furrow.Event{Type: furrow.EventTriggerFired, FarmID: h.otherFarm(), OccurredAtMs: 3000})

	r := h.user(h.manager, "POST", path, `{"event_id":"`+fired.ID+`"}`)
	if r.Status != http.StatusAccepted || strings.TrimSpace(r.Body) != `{"count":1}` {
		t.Fatalf("by id: %d %s", r.Status, r.Body)
	}
	r = h.user(h.manager, "POST", path, `{"since_ms":1500}`)
	if r.Status != http.StatusAccepted || strings.TrimSpace(r.Body) != `{"count":1}` {
		t.Fatalf("since: %d %s", r.Status, r.Body)
	}
	if len(h.engine.redelivered) != 1 || h.engine.redelivered[0].ID != fired.ID {
		t.Fatalf("redelivered %+v", h.engine.redelivered)
	}
	if len(ctl.sets) != 1 || !slices.Equal(h.setIDs(ctl.sets[0]), []string{later.ID}) {
		t.Fatalf("redelivered since: %+v", ctl.sets)
	}
	for body, want := range map[string]struct {
		status       int
		code, reason string
	}{
		`{}`: {400, furrow.EINVALID, "exactly one"},
		`{"event_id":"` + fired.ID + `","since_ms":1}`: {400, furrow.EINVALID, "exactly one"},
		`{"event_id":"x"}`:                           {400, furrow.EINVALID, "The field event_id is malformed."},
		`{"since_ms":-5}`:                            {400, furrow.EINVALID, "negative"},
		`{"since_ms":"5"}`:                           {400, furrow.EINVALID, "since_ms must be a number"},
		`{"event_id":"` + reco.ID + `"}`:             {400, furrow.EINVALID, "does not subscribe"},
		`{"event_id":"` + foreign.ID + `"}`:          {404, furrow.ENOTFOUND, "event does not exist"},
		`{"event_id":"` + furrow.NewEventID() + `"}`: {404, furrow.ENOTFOUND, "event does not exist"},
	} {
		expectError(t, h.user(h.manager, "POST", path, body), want.status, want.code, want.reason)
	}
	if len(h.engine.redelivered) != 1 || len(ctl.sets) != 1 {
		t.Fatal("a refused redelivery started deliveries")
	}
}

// An event_id is evt_ and the 36-character hyphenated uuid, in either
// case; any other spelling of the uuid is a 400 naming the field.
func TestRedeliverEventIDForms(t *testing.T) {
	h := newHarness(t)
	w := h.createHook(`{"url":"https://example.com/a","event_types":["trigger.fired"]}`)
	path := h.farmPath("/webhooks/" + w.ID.String() + "/redeliver")
	fired, _ := h.store.CreateEvent(t.Context(), furrow.Event{Type: furrow.EventTriggerFired, FarmID: h.farm, OccurredAtMs: 1000})
	u := strings.TrimPrefix(fired.ID, "evt_")
	for _, id := range []string{
		"evt_{" + u + "}",
		"evt_urn:uuid:" + u,
		"evt_" + strings.ReplaceAll(u, "-", ""),
		"evt_" + u + " ",
		"EVT_" + u,
		u,
	} {
		body, _ := json.Marshal(map[string]string{"event_id": id})
		expectError(t, h.user(h.manager, "POST", path, string(body)), http.StatusBadRequest, furrow.EINVALID, "The field event_id is malformed.")
	}
	if len(h.engine.redelivered) != 0 {
		t.Fatalf("a refused id started deliveries: %+v", h.engine.redelivered)
	}
	r := h.user(h.manager, "POST", path, `{"event_id":"evt_`+strings.ToUpper(u)+`"}`)
	if r.Status != http.StatusAccepted || len(h.engine.redelivered) != 1 || h.engine.redelivered[0].ID != fired.ID {
		t.Fatalf("upper-case id: %d %s, redelivered %+v", r.Status, r.Body, h.engine.redelivered)
	}
}

// Events large enough that a page of the events list ends early are still
// redelivered together, not refused as too many.
func TestRedeliverLargeEvents(t *testing.T) {
	h := newHarness(t)
	ctl := h.withControl()
	w := h.createHook(`{"url":"https://example.com/a","event_types":["trigger.fired"]}`)
	data := json.RawMessage(`{"blob":"` + strings.Repeat("x", 60<<10) + `"}`)
	n := furrow.MaxPageBytes/len(data) + 5
	for i := range n {
		if _, err := h.store.CreateEvent(t.Context(), furrow.Event{Type: furrow.EventTriggerFired, FarmID: h.farm, OccurredAtMs: 1000 + int64(i), Data: data}); err != nil {
			t.Fatal(err)
		}
	}
	r := h.user(h.manager, "POST", h.farmPath("/webhooks/"+w.ID.String()+"/redeliver"), `{"since_ms":1000}`)
	if want := fmt.Sprintf(`{"count":%d}`, n); r.Status != http.StatusAccepted || strings.TrimSpace(r.Body) != want {
		t.Fatalf("%d events of %d bytes since: %d %s, want 202 %s", n, len(data), r.Status, r.Body, want)
	}
	ids := h.setIDs(ctl.sets[0])
	if slices.Sort(ids); len(ids) != n || len(slices.Compact(ids)) != n {
		t.Fatalf("the set holds %d events, want each of the %d once", len(ids), n)
	}
}

// The wait for a re-enabled webhook ends inside the request's deadline, so
// a workflow that is slow to apply it answers 202, not a timed-out 500.
func TestEnableWebhookWaitsWithinTheRequestDeadline(t *testing.T) {
	h := newHarness(t)
	h.cfg.RequestTimeout = 400 * time.Millisecond
	h.cfg.ReenableWait = 10 * time.Second
	h.rebuild()
	w := h.createHook(`{"url":"https://example.com/a"}`)
	_, _ = h.store.SetWebhookState(t.Context(), w.ID, false, 5, 0)
	r := h.user(h.manager, "POST", h.farmPath("/webhooks/"+w.ID.String()+"/enable"), "")
	if r.Status != http.StatusAccepted {
		t.Fatalf("status %d %s, want 202", r.Status, r.Body)
	}
}

// A farm past MaxWebhooksPerFarm is refused with 409, and a deletion frees
// a place.
func TestWebhooksPerFarmBound(t *testing.T) {
	h := newHarness(t)
	var first furrow.Webhook
	for i := range furrow.MaxWebhooksPerFarm {
		w := h.createHook(`{"url":"https://hooks.example.com/in"}`)
		if i == 0 {
			first = w
		}
	}
	expectError(t, h.user(h.manager, "POST", h.farmPath("/webhooks"), `{"url":"https://hooks.example.com/in"}`),
		http.StatusConflict, furrow.ECONFLICT, "the most it can have")
	if r := h.user(h.manager, "DELETE", h.farmPath("/webhooks/"+first.ID.String()), ""); r.Status != http.StatusNoContent {
		t.Fatalf("delete: %d %s", r.Status, r.Body)
	}
	h.createHook(`{"url":"https://hooks.example.com/in"}`)
}

// With the default wait, a workflow that applies the change late in the
// request, but before the fifth of it kept for the answer, is answered
// 200: the wait runs to that reserve, not to half the request's time.
func TestEnableWebhookWaitsUntilTheAnswerReserve(t *testing.T) {
	h := newHarness(t)
	h.cfg.RequestTimeout = 2 * time.Second
	h.cfg.ReenableWait = 0
	h.deps.Delivery = reenabler{h.engine, func(_ context.Context, id uuid.UUID) error {
		time.AfterFunc(1300*time.Millisecond, func() {
			_, _ = h.store.SetWebhookState(context.Background(), id, true, 0, 0)
		})
		return nil
	}}
	h.rebuild()
	w := h.createHook(`{"url":"https://example.com/a"}`)
	_, _ = h.store.SetWebhookState(t.Context(), w.ID, false, furrow.MaxFailedChains, 0)
	r := h.user(h.manager, "POST", h.farmPath("/webhooks/"+w.ID.String()+"/enable"), "")
	if r.Status != http.StatusOK || !strings.Contains(r.Body, `"enabled":true`) {
		t.Fatalf("status %d %s, want 200 with the webhook enabled", r.Status, r.Body)
	}
}

// Enabling a webhook one failure short of disabling, while its workflow
// applies a queued fifth failed chain first (a disabling transition), is
// not answered 200 with the webhook disabled: the transition seen is not
// the re-enable. Once the re-enable follows, the answer is 200.
func TestEnableWebhookIsNotAppliedByADisablingTransition(t *testing.T) {
	for name, reenableAfter := range map[string]time.Duration{"never": 0, "later": 200 * time.Millisecond} {
		t.Run(name, func(t *testing.T) {
			h := newHarness(t)
			h.cfg.RequestTimeout = time.Second
			h.deps.Delivery = reenabler{h.engine, func(ctx context.Context, id uuid.UUID) error {
				disable := furrow.WebhookTransition{WebhookID: id, Seq: 1, Failures: furrow.MaxFailedChains}
				if _, _, _, err := h.store.TransitionWebhook(ctx, disable, 0); err != nil {
					return err
				}
				if reenableAfter > 0 {
					time.AfterFunc(reenableAfter, func() {
						enable := furrow.WebhookTransition{WebhookID: id, Seq: 2, Enabled: true, By: furrow.EnabledByAPI}
						_, _, _, _ = h.store.TransitionWebhook(context.Background(), enable, 0)
					})
				}
				return nil
			}}
			h.rebuild()
			w := h.createHook(`{"url":"https://example.com/a"}`)
			if _, err := h.store.SetWebhookState(t.Context(), w.ID, true, furrow.MaxFailedChains-1, 0); err != nil {
				t.Fatal(err)
			}
			r := h.user(h.manager, "POST", h.farmPath("/webhooks/"+w.ID.String()+"/enable"), "")
			switch {
			case reenableAfter == 0 && r.Status != http.StatusAccepted:
				t.Fatalf("status %d %s, want 202: the webhook is disabled", r.Status, r.Body)
			case reenableAfter > 0 && (r.Status != http.StatusOK || !strings.Contains(r.Body, `"enabled":true`)):
				t.Fatalf("status %d %s, want 200 with the webhook enabled", r.Status, r.Body)
			}
		})
	}
}
