package e2e

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/furrowhq/furrow/internal/testenv"
)

// TestFarmEventsEndToEnd covers the event types beyond metric.value: app
// events reach only the webhooks subscribed to their type, and a silent
// device is announced offline once by the scheduled sweep.
func TestFarmEventsEndToEnd(t *testing.T) {
	testenv.SkipShort(t, "the furrow binary (furrow dev, embedded Temporal server) and a webhook receiver")
	e := newDevEnv(t,
		"FURROW_DEVICE_STALE_AFTER", "1s",
		"FURROW_DEVICE_OFFLINE_AFTER", "2s",
		"FURROW_DEVICE_SWEEP_EVERY", "1s")
	rc := e.rc
	hook := e.createWebhook(t, map[string]any{"url": rc.URL(), "event_types": []string{"trigger.fired", "device.offline"}})
	rc.setSecret(hook.Secret)
	farmAPI := e.f.URL + "/api/farms/" + e.fx.FarmID

	t.Run("app events go to subscribed webhooks only", func(t *testing.T) {
		r := do(t, nil, "POST", farmAPI+"/events", map[string]any{"type": "recommendation.created", "data": map[string]any{"text": "irrigate"}}, bearer(e.fx.Token)...)
		expect(t, r, 201, "")
		r = do(t, nil, "POST", farmAPI+"/events", map[string]any{"type": "trigger.fired", "data": map[string]any{"rule": "dry"}}, bearer(e.fx.Token)...)
		expect(t, r, 201, "")
		var fired struct{ ID string }
		r.JSON(t, &fired)
		d := rc.next(t, 10*time.Second)
		if d.EventID != fired.ID || d.Type != "trigger.fired" || !d.Verified || !strings.Contains(string(d.Data), `"rule":"dry"`) {
			t.Fatalf("delivery %+v, want the trigger.fired event %s", d, fired.ID)
		}
		expect(t, do(t, nil, "POST", farmAPI+"/events", map[string]any{"type": "metric.value", "data": map[string]any{}}, bearer(e.fx.Token)...), 400, "bad_request")
		list := do(t, nil, "GET", farmAPI+"/events?type=recommendation.created", nil, bearer(e.fx.Token)...)
		expect(t, list, 200, "")
		if !strings.Contains(string(list.Body), `"irrigate"`) {
			t.Fatalf("events list %s", list.Body)
		}
	})

	t.Run("a silent device goes offline once and is announced", func(t *testing.T) {
		e.postReading(t, 5) // metric.value: not subscribed, never sent
		d := rc.next(t, 20*time.Second)
		if d.Type != "device.offline" || !d.Verified {
			t.Fatalf("delivery %+v, want device.offline", d)
		}
		var data struct {
			DeviceID       string `json:"device_id"`
			LastSeenMs     int64  `json:"last_seen_ms"`
			OfflineAfterMs int64  `json:"offline_after_ms"`
		}
		if err := json.Unmarshal(d.Data, &data); err != nil || data.DeviceID != e.fx.DeviceID || data.OfflineAfterMs != 2000 || data.LastSeenMs == 0 {
			t.Fatalf("offline data %s (%v)", d.Data, err)
		}
		// Several more sweeps run; the episode is announced only once.
		rc.quiet(t, 4*time.Second)
		var devices []struct{ ID, Status string }
		r := do(t, nil, "GET", farmAPI+"/devices", nil, bearer(e.fx.Token)...)
		r.JSON(t, &devices)
		for _, dv := range devices {
			if dv.ID == e.fx.DeviceID && dv.Status != "offline" {
				t.Fatalf("device status %q, want offline", dv.Status)
			}
		}
	})
}
