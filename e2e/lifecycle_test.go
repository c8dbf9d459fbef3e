package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/furrowhq/furrow/internal/testenv"
)

// lifecycleData is the data of webhook.disabled and webhook.enabled.
type lifecycleData struct {
	WebhookID      string `json:"webhook_id"`
	FailedChains   int    `json:"failed_chains"`
	LastStatusCode int    `json:"last_status_code"`
	LastError      string `json:"last_error"`
	By             string `json:"by"`
}

// nextLifecycle waits for the next delivery to rc, which must be a
// lifecycle event of type typ about webhook hook, and returns it with its
// data.
func nextLifecycle(t *testing.T, rc *receiver, typ, hook string) (delivery, lifecycleData) {
	t.Helper()
	d := rc.next(t, time.Minute)
	var data lifecycleData
	if err := json.Unmarshal(d.Data, &data); err != nil || d.Type != typ || data.WebhookID != hook || !d.Verified {
		t.Fatalf("got %+v (data %s), want a verified %s of webhook %s", d, d.Data, typ, hook)
	}
	return d, data
}

// lifecycleEvents lists the farm's events of type typ from the polling API.
func (e *devEnv) lifecycleEvents(t *testing.T, typ string) []struct{ ID string } {
	t.Helper()
	r := do(t, nil, "GET", e.f.URL+"/api/farms/"+e.fx.FarmID+"/events?type="+typ, nil, bearer(e.fx.Token)...)
	expect(t, r, 200, "")
	var evs []struct{ ID string }
	r.JSON(t, &evs)
	return evs
}

func TestWebhookLifecycleEvents(t *testing.T) {
	testenv.SkipShort(t, "the furrow binary (furrow dev, embedded Temporal server) and webhook receivers")
	e := newDevEnv(t)
	failing := e.createWebhook(t, map[string]any{"url": e.rc.URL()})
	e.rc.setSecret(failing.Secret)
	// httptest's TLS servers share one certificate, so the CA file of
	// e.rc is trusted for these too.
	watcher, plain := newReceiver(t), newReceiver(t)
	w := e.createWebhook(t, map[string]any{"url": watcher.URL(), "event_types": []string{"webhook.disabled", "webhook.enabled"}})
	watcher.setSecret(w.Secret)
	p := e.createWebhook(t, map[string]any{"url": plain.URL()})
	plain.setSecret(p.Secret)

	r := do(t, nil, "POST", e.f.URL+"/api/farms/"+e.fx.FarmID+"/webhooks", map[string]any{"url": watcher.URL(), "event_types": []string{"webhook.test"}}, bearer(e.fx.Token)...)
	expect(t, r, 400, "bad_request")

	tc, err := client.Dial(client.Options{HostPort: e.temporal, Namespace: "default"})
	if err != nil {
		t.Fatal(err)
	}
	defer tc.Close()

	events := newLiveClient(t, e.f.URL, e.fx.Token, "farms/"+e.fx.FarmID+"/events")
	var disabledID string
	t.Run("five failed chains: webhook.disabled reaches the webhook that lists it, once", func(t *testing.T) {
		e.failFiveChains(t, failing.ID)
		d, data := nextLifecycle(t, watcher, "webhook.disabled", failing.ID)
		if data.FailedChains != 5 || data.LastStatusCode != 400 || data.LastError != "" {
			t.Fatalf("webhook.disabled data %s", d.Data)
		}
		disabledID = d.EventID
		if m := events.next(t, 10*time.Second); m.ID != disabledID || m.Type != "webhook.disabled" || m.FarmID != e.fx.FarmID {
			t.Fatalf("the farm's live events topic got %+v, want %s", m, disabledID)
		}
		watcher.quiet(t, 3*time.Second)
		evs := e.lifecycleEvents(t, "webhook.disabled")
		if len(evs) != 1 || evs[0].ID != disabledID {
			t.Fatalf("the events API lists %+v, want the one %s", evs, disabledID)
		}
	})

	t.Run("enabled by the API: webhook.enabled by api", func(t *testing.T) {
		r := do(t, nil, "POST", e.f.URL+"/api/farms/"+e.fx.FarmID+"/webhooks/"+failing.ID+"/enable", nil, bearer(e.fx.Token)...)
		expect(t, r, 200, "")
		d, data := nextLifecycle(t, watcher, "webhook.enabled", failing.ID)
		if data.By != "api" || d.EventID == disabledID {
			t.Fatalf("webhook.enabled %+v data %s, want by api", d, d.Data)
		}
		if m := events.next(t, 10*time.Second); m.ID != d.EventID || m.Type != "webhook.enabled" {
			t.Fatalf("the farm's live events topic got %+v, want %s", m, d.EventID)
		}
	})

	t.Run("enabled by the reenable signal without payload: webhook.enabled by signal", func(t *testing.T) {
		e.failFiveChains(t, failing.ID)
		nextLifecycle(t, watcher, "webhook.disabled", failing.ID)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := tc.SignalWorkflow(ctx, "webhook/"+failing.ID, "", "reenable", nil); err != nil {
			t.Fatalf("signal: %v", err)
		}
		d, data := nextLifecycle(t, watcher, "webhook.enabled", failing.ID)
		if data.By != "signal" {
			t.Fatalf("webhook.enabled data %s, want by signal", d.Data)
		}
		if w := e.webhook(t, failing.ID); !w.Enabled || w.ConsecutiveFailures != 0 {
			t.Fatalf("after the signal: %+v", w)
		}
		watcher.quiet(t, 3*time.Second)
	})

	t.Run("the events API and the metrics count each transition once", func(t *testing.T) {
		if n, m := len(e.lifecycleEvents(t, "webhook.disabled")), len(e.lifecycleEvents(t, "webhook.enabled")); n != 2 || m != 2 {
			t.Fatalf("the events API lists %d webhook.disabled and %d webhook.enabled, want 2 of each", n, m)
		}
		m := eventually(t, e.f.MetricsURL, func(m metrics) bool {
			return m.value(`furrow_webhook_lifecycle_events_total{type="webhook.enabled"}`) == 2
		})
		if n := m.value(`furrow_webhook_lifecycle_events_total{type="webhook.disabled"}`); n != 2 {
			t.Fatalf("furrow_webhook_lifecycle_events_total{type=webhook.disabled} = %v, want 2", n)
		}
	})

	t.Run("a webhook with no event types receives none of them", func(t *testing.T) {
		plain.mu.Lock()
		defer plain.mu.Unlock()
		if len(plain.got) == 0 {
			t.Fatal("the plain webhook received nothing at all")
		}
		for _, d := range plain.got {
			if d.Type != "metric.value" {
				t.Fatalf("the plain webhook received %s", d.Type)
			}
		}
	})

	t.Run("failures reported after a delivery that followed them still disable", func(t *testing.T) {
		rc := newReceiver(t)
		late := e.createWebhook(t, map[string]any{"url": rc.URL(), "event_types": []string{"metric.value"}})
		rc.setSecret(late.Secret)
		lateReports(t, e, tc, late.ID)
		if _, data := nextLifecycle(t, watcher, "webhook.disabled", late.ID); data.FailedChains != 5 || data.LastStatusCode != 503 {
			t.Fatalf("webhook.disabled data %+v, want 5 failed chains, the last answered 503", data)
		}
	})
}

// lateReports makes five chains of hook fail before a delivery to it, and
// their reports reach the webhook's workflow only after that delivery (as
// under a backlog, the endpoint having recovered): the reports are sent
// as the delivery workflows send them, once the delivery, which read a
// count of 0 and so reported nothing, is in the attempt log. The webhook
// is disabled at 5, with its webhook.disabled event.
func lateReports(t *testing.T, e *devEnv, tc client.Client, hookID string) {
	t.Helper()
	failedBy := time.Now().UnixMilli()
	time.Sleep(20 * time.Millisecond)
	e.postReading(t, 77)
	waitFor(t, time.Minute, func() bool {
		rows := e.attempts(t, hookID)
		return len(rows) > 0 && rows[0].StatusCode == 200
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	opts := client.StartWorkflowOptions{ID: "webhook/" + hookID, TaskQueue: "furrow"}
	for i := range 5 {
		report := map[string]any{"WebhookID": hookID, "EventID": fmt.Sprintf("evt_late-%d", i), "Failed": true, "StatusCode": 503,
			"Chain": fmt.Sprintf("delivery/%s/late-%d/run", hookID, i), "EndedAtMs": failedBy - int64(10-i)}
		if _, err := tc.SignalWithStartWorkflow(ctx, opts.ID, "chain", report, opts, "Webhook", map[string]any{"WebhookID": hookID}); err != nil {
			t.Fatalf("report %d: %v", i, err)
		}
	}
	waitFor(t, time.Minute, func() bool {
		w := e.webhook(t, hookID)
		return !w.Enabled && w.ConsecutiveFailures == 5
	})
}
