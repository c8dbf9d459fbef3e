package api

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/furrowhq/furrow"
	"github.com/google/uuid"
)

func TestProbes(t *testing.T) {
	h := newHarness(t)
	r := h.do(req{method: "GET", path: "/healthz"})
	if r.Status != http.StatusOK || strings.TrimSpace(r.Body) != `{"status":"ok"}` {
		t.Fatalf("healthz: %d %s", r.Status, r.Body)
	}
	r = h.do(req{method: "GET", path: "/readyz"})
	if r.Status != http.StatusOK || strings.TrimSpace(r.Body) != `{"status":"ready"}` {
		t.Fatalf("readyz without a pinger: %d %s", r.Status, r.Body)
	}
	h.deps.Ready = pingFunc(func(ctx context.Context) error { return nil })
	h.rebuild()
	if r := h.do(req{method: "GET", path: "/readyz"}); r.Status != http.StatusOK {
		t.Fatalf("readyz: %d %s", r.Status, r.Body)
	}
	// A database that hangs is cut off by the probe's own deadline.
	h.deps.Ready = pingFunc(func(ctx context.Context) error {
		if _, ok := ctx.Deadline(); !ok {
			return errors.New("no deadline")
		}
		<-ctx.Done()
		return ctx.Err()
	})
	h.rebuild()
	r = h.do(req{method: "GET", path: "/readyz"})
	if r.Status != http.StatusServiceUnavailable || strings.TrimSpace(r.Body) != `{"reason":"The database is not reachable.","status":"unavailable"}` {
		t.Fatalf("readyz down: %d %s", r.Status, r.Body)
	}
	// A process that is stopping says so, not that its database is down.
	h.deps.Ready = pingFunc(func(context.Context) error { return fmt.Errorf("draining: %w", ErrShuttingDown) })
	h.rebuild()
	r = h.do(req{method: "GET", path: "/readyz"})
	if r.Status != http.StatusServiceUnavailable || strings.TrimSpace(r.Body) != `{"reason":"The process is shutting down.","status":"unavailable"}` {
		t.Fatalf("readyz while shutting down: %d %s", r.Status, r.Body)
	}
}

type pingFunc func(context.Context) error

func (f pingFunc) Ping(ctx context.Context) error { return f(ctx) }

// TestManagementAccess checks every management endpoint against callers
// without a token, with a bad token, outside the farm, and below the role.
func TestManagementAccess(t *testing.T) {
	h := newHarness(t)
	hook := uuid.New()
	if _, err := h.store.CreateWebhook(t.Context(), furrow.Webhook{ID: hook, FarmID: h.farm, URL: "https://example.com", Enabled: true}); err != nil {
		t.Fatal(err)
	}
	dev := h.device.ID.String()
	endpoints := []struct {
		method, path string
		need         furrow.Role
	}{
		{"POST", "/members", furrow.RoleManager},
		{"POST", "/devices", furrow.RoleManager},
		{"POST", "/devices/" + dev + "/keys", furrow.RoleManager},
		{"GET", "/devices", furrow.RoleViewer},
		{"POST", "/webhooks", furrow.RoleManager},
		{"GET", "/webhooks", furrow.RoleManager},
		{"GET", "/webhooks/" + hook.String(), furrow.RoleManager},
		{"DELETE", "/webhooks/" + hook.String(), furrow.RoleManager},
		{"POST", "/webhooks/" + hook.String() + "/enable", furrow.RoleManager},
		{"GET", "/webhooks/" + hook.String() + "/attempts", furrow.RoleManager},
		{"POST", "/webhooks/" + hook.String() + "/redeliver", furrow.RoleManager},
		{"POST", "/events", furrow.RoleManager},
		{"GET", "/events", furrow.RoleViewer},
		{"GET", "/readings", furrow.RoleViewer},
	}
	for _, e := range endpoints {
		t.Run(e.method+e.path, func(t *testing.T) {
			path := h.farmPath(e.path)
			expectError(t, h.user("", e.method, path, "{}"), http.StatusUnauthorized, furrow.EUNAUTHORIZED, "missing: send Authorization: Bearer <user token>")
			expectError(t, h.user("fut_bogus", e.method, path, "{}"), http.StatusUnauthorized, furrow.EUNAUTHORIZED, "The credential is invalid: no user has this token")
			expectError(t, h.user(h.deviceKey, e.method, path, "{}"), http.StatusUnauthorized, furrow.EUNAUTHORIZED, "The credential is a device key: this API takes a user token")
			expectError(t, h.user(h.outsider, e.method, path, "{}"), http.StatusNotFound, furrow.ENOTFOUND, "farm does not exist")
			other := "/api/farms/" + uuid.NewString() + e.path
			expectError(t, h.user(h.owner, e.method, other, "{}"), http.StatusNotFound, furrow.ENOTFOUND, "farm does not exist")
			bad := "/api/farms/not-a-uuid" + e.path
			expectError(t, h.user(h.owner, e.method, bad, "{}"), http.StatusBadRequest, furrow.EINVALID, "farm id")
			below := map[furrow.Role]string{furrow.RoleManager: h.operator}[e.need]
			if below != "" {
				expectError(t, h.user(below, e.method, path, "{}"), http.StatusForbidden, furrow.EFORBIDDEN, "manager role")
			}
		})
	}
	if w, err := h.store.WebhookByID(t.Context(), hook); err != nil || !w.Enabled {
		t.Fatalf("a refused request changed state: %+v, %v", w, err)
	}
}

func TestCreateFarm(t *testing.T) {
	h := newHarness(t)
	r := h.user(h.outsider, "POST", "/api/farms", `{"name":" South "}`)
	var farm furrow.Farm
	decode(t, r, &farm)
	if r.Status != http.StatusCreated || farm.Name != "South" || farm.ID == uuid.Nil {
		t.Fatalf("%d %s", r.Status, r.Body)
	}
	if r.Header.Get("Cache-Control") != "no-store" {
		t.Fatal("management answers must not be cached")
	}
	// The creator is the owner: it can reach owner-only actions.
	r = h.user(h.outsider, "GET", "/api/farms/"+farm.ID.String()+"/webhooks", "")
	if r.Status != http.StatusOK || strings.TrimSpace(r.Body) != "[]" {
		t.Fatalf("owner of the new farm: %d %s", r.Status, r.Body)
	}
	expectError(t, h.user(h.owner, "POST", "/api/farms", `{"name":""}`), http.StatusBadRequest, furrow.EINVALID, "name is required")
	expectError(t, h.user(h.owner, "POST", "/api/farms", `{"name":5}`), http.StatusBadRequest, furrow.EINVALID, "name must be a string")
	expectError(t, h.user(h.owner, "POST", "/api/farms", `["x"]`), http.StatusBadRequest, furrow.EINVALID, "JSON object")
	expectError(t, h.user(h.owner, "POST", "/api/farms", `{"name":"x"`), http.StatusBadRequest, furrow.EINVALID, "JSON object")
	big := `{"name":"x","pad":"` + strings.Repeat("x", 64<<10) + `"}`
	expectError(t, h.user(h.owner, "POST", "/api/farms", big), http.StatusRequestEntityTooLarge, furrow.ETOOLARGE, "at most")
}

// A body's names are read exactly as documented: a member whose name
// differs only in case is an unknown field, ignored, never a second say on
// the field it resembles.
func TestBodyNamesCaseSensitive(t *testing.T) {
	h := newHarness(t)
	r := h.user(h.owner, "POST", "/api/farms", `{"name":"documented","Name":"shadow"}`)
	var farm furrow.Farm
	decode(t, r, &farm)
	if r.Status != http.StatusCreated || farm.Name != "documented" {
		t.Fatalf("farm: %d %s, want the name documented", r.Status, r.Body)
	}
	w := h.createHook(`{"url":"https://good.example/hook","Url":"https://other.example/x"}`)
	if w.URL != "https://good.example/hook" {
		t.Fatalf("webhook url %s, want https://good.example/hook", w.URL)
	}
	r = h.user(h.manager, "PATCH", h.farmPath("/webhooks/"+w.ID.String()), `{"Url":"https://other.example/x","Max_Per_Second":3}`)
	stored, err := h.store.WebhookByID(t.Context(), w.ID)
	if r.Status != http.StatusOK || err != nil || stored.URL != w.URL || stored.MaxPerSecond != nil {
		t.Fatalf("patch: %d %s, stored %+v (%v), want it unchanged", r.Status, r.Body, stored, err)
	}
	r = h.user(h.manager, "POST", h.farmPath("/events"), `{"type":"trigger.fired","data":{"a":1},"Data":{"b":2}}`)
	var e furrow.Event
	decode(t, r, &e)
	if r.Status != http.StatusCreated || string(e.Data) != `{"a":1}` {
		t.Fatalf("event: %d %s, want data {\"a\":1}", r.Status, r.Body)
	}
}

// A name given twice in one object of a body, at any depth, is refused:
// parsers disagree on which copy wins.
func TestBodyNameGivenTwice(t *testing.T) {
	h := newHarness(t)
	w := h.createHook(`{"url":"https://good.example/hook"}`)
	hook := h.farmPath("/webhooks/" + w.ID.String())
	for _, tc := range []struct{ method, path, body, reason string }{
		{"POST", "/api/farms", `{"name":"a","name":"b"}`, "The field name is given more than once."},
		{"POST", "/api/farms", `{"name":"a","n\u0061me":"b"}`, "The field name is given more than once."},
		{"POST", "/api/farms", `{"name":"a","pad":1,"pad":2}`, "The field pad is given more than once."},
		{"POST", h.farmPath("/webhooks"), `{"url":"https://good.example/hook","url":"https://other.example/x"}`, "The field url is given more than once."},
		{"PATCH", hook, `{"max_per_second":3,"max_per_second":null}`, "The field max_per_second is given more than once."},
		{"POST", h.farmPath("/events"), `{"type":"trigger.fired","data":{"a":1,"a":2}}`, `The field data gives the name "a" more than once in one object.`},
		{"POST", h.farmPath("/events"), `{"type":"trigger.fired","data":{"b":[{"a":1,"a":2}]}}`, `The field data gives the name "a" more than once in one object.`},
	} {
		expectError(t, h.user(h.owner, tc.method, tc.path, tc.body), http.StatusBadRequest, furrow.EINVALID, tc.reason)
	}
	if hooks, _ := h.store.Webhooks(t.Context(), h.farm); len(hooks) != 1 || hooks[0].MaxPerSecond != nil {
		t.Fatalf("a refused body changed the webhooks: %+v", hooks)
	}
	if events, _, _ := h.store.Events(t.Context(), furrow.EventFilter{FarmID: h.farm}); len(events) != 0 {
		t.Fatalf("a refused body stored events: %+v", events)
	}
	// Malformed JSON outranks a name given twice.
	expectError(t, h.user(h.owner, "POST", "/api/farms", `{"name":"a","name":"b",}`), http.StatusBadRequest, furrow.EINVALID, "single valid JSON object")
}

// Under /api/farms, as on every route, a path that is not a route is 404
// and a method its path lacks 405, before the credential is looked at:
// the routes are public (the API document), so these answers tell nothing.
func TestFarmRoutesBeforeCredential(t *testing.T) {
	h := newHarness(t)
	for _, token := range []string{"", "fut_bogus", h.owner} {
		for _, tc := range []struct {
			method, path string
			status       int
			allow        string
		}{
			{"GET", "/api/farms", http.StatusMethodNotAllowed, "POST"},
			{"DELETE", h.farmPath("/members"), http.StatusMethodNotAllowed, "POST"},
			{"PUT", h.farmPath("/webhooks/" + uuid.NewString()), http.StatusMethodNotAllowed, "GET, HEAD, PATCH, DELETE"},
			{"GET", h.farmPath("/nope"), http.StatusNotFound, ""},
			{"GET", "/api/farms/" + uuid.NewString() + "/nope", http.StatusNotFound, ""},
			{"POST", h.farmPath("/webhooks/" + uuid.NewString() + "/nope"), http.StatusNotFound, ""},
		} {
			r := h.user(token, tc.method, tc.path, "{}")
			if r.Status != tc.status || r.Header.Get("Allow") != tc.allow {
				t.Errorf("%s %s with token %q: %d, Allow %q; want %d, Allow %q", tc.method, tc.path, token, r.Status, r.Header.Get("Allow"), tc.status, tc.allow)
			}
		}
	}
}

// A name is bounded in characters, as the document's maxLength counts
// them, not in bytes: 200 two-byte characters are a name, 201 are not.
func TestNameBoundInCharacters(t *testing.T) {
	h := newHarness(t)
	name := func(n int) string { return `{"name":"` + strings.Repeat("é", n) + `"}` }
	for _, n := range []int{101, maxNameChars} {
		if r := h.user(h.owner, "POST", "/api/farms", name(n)); r.Status != http.StatusCreated {
			t.Fatalf("a name of %d characters (%d bytes): %d %s", n, 2*n, r.Status, r.Body)
		}
	}
	expectError(t, h.user(h.owner, "POST", "/api/farms", name(maxNameChars+1)), http.StatusBadRequest, furrow.EINVALID,
		fmt.Sprintf("at most %d characters", maxNameChars))
}

func TestAddMember(t *testing.T) {
	h := newHarness(t)
	newcomer, _, _ := h.store.CreateUser(context.Background(), "new@example.com")
	body := func(role string) string { return fmt.Sprintf(`{"user_id":%q,"role":%q}`, newcomer.ID, role) }
	expectError(t, h.user(h.manager, "POST", h.farmPath("/members"), body("owner")), http.StatusForbidden, furrow.EFORBIDDEN, "above your own")
	expectError(t, h.user(h.manager, "POST", h.farmPath("/members"), body("boss")), http.StatusBadRequest, furrow.EINVALID, "role must be one of")
	expectError(t, h.user(h.manager, "POST", h.farmPath("/members"), `{"user_id":"x","role":"viewer"}`), http.StatusBadRequest, furrow.EINVALID, "user_id must be a UUID")
	r := h.user(h.manager, "POST", h.farmPath("/members"), body("manager"))
	if r.Status != http.StatusCreated || strings.TrimSpace(r.Body) != fmt.Sprintf(`{"user_id":%q,"role":"manager"}`, newcomer.ID) {
		t.Fatalf("%d %s", r.Status, r.Body)
	}
	expectError(t, h.user(h.owner, "POST", h.farmPath("/members"), body("viewer")), http.StatusConflict, furrow.ECONFLICT, "already")
}

func TestDevices(t *testing.T) {
	h := newHarness(t)
	r := h.user(h.manager, "POST", h.farmPath("/devices"), `{"name":"probe-0"}`)
	var created struct {
		ID     uuid.UUID `json:"id"`
		Name   string    `json:"name"`
		APIKey string    `json:"api_key"`
	}
	decode(t, r, &created)
	if r.Status != http.StatusCreated || created.Name != "probe-0" || !strings.HasPrefix(created.APIKey, furrow.DeviceKeyPrefix) {
		t.Fatalf("%d %s", r.Status, r.Body)
	}
	// Rotation revokes the old key at once.
	r = h.user(h.manager, "POST", h.farmPath("/devices/"+created.ID.String()+"/keys"), "")
	var rotated struct {
		APIKey string `json:"api_key"`
	}
	decode(t, r, &rotated)
	if r.Status != http.StatusCreated || rotated.APIKey == "" || rotated.APIKey == created.APIKey {
		t.Fatalf("%d %s", r.Status, r.Body)
	}
	expectError(t, h.post(created.APIKey, readingBody(created.ID.String(), "220", "1")), http.StatusUnauthorized, furrow.EUNAUTHORIZED, "invalid")
	if r := h.post(rotated.APIKey, readingBody(created.ID.String(), "220", "1")); r.Status != http.StatusCreated {
		t.Fatalf("new key: %d", r.Status)
	}
	expectError(t, h.user(h.manager, "POST", h.farmPath("/devices/"+uuid.NewString()+"/keys"), ""), http.StatusNotFound, furrow.ENOTFOUND, "")
	expectError(t, h.user(h.manager, "POST", h.farmPath("/devices/zzz/keys"), ""), http.StatusBadRequest, furrow.EINVALID, "device id")

	// probe-0 reported just now, probe-1 40 minutes ago, probe-2 never.
	h.clock.Advance(-40 * time.Minute)
	if _, _, err := h.store.CreateReading(t.Context(), furrow.Reading{FarmID: h.farm, DeviceID: h.device.ID, MetricID: 220, Value: "1"}, nil); err != nil {
		t.Fatal(err)
	}
	h.clock.Advance(40 * time.Minute)
	r = h.user(h.viewer, "GET", h.farmPath("/devices"), "")
	var list []struct {
		Name       string `json:"name"`
		Status     string `json:"status"`
		LastSeenMs *int64 `json:"last_seen_ms"`
	}
	decode(t, r, &list)
	got := []string{}
	for _, d := range list {
		got = append(got, d.Name+"="+d.Status)
	}
	if want := "[probe-0=reporting probe-1=stale probe-2=never]"; fmt.Sprint(got) != want {
		t.Fatalf("devices = %v, want %s", got, want)
	}
	if !strings.Contains(r.Body, `"last_seen_ms":null`) || strings.Contains(r.Body, "api_key") {
		t.Fatalf("device list shape: %s", r.Body)
	}
}

func TestDevicesPages(t *testing.T) {
	h := newHarness(t)
	for _, name := range []string{"probe-3", "probe-0", "probe:4"} {
		if r := h.user(h.manager, "POST", h.farmPath("/devices"), `{"name":"`+name+`"}`); r.Status != http.StatusCreated {
			t.Fatalf("%d %s", r.Status, r.Body)
		}
	}
	want := []string{"probe-0", "probe-1", "probe-2", "probe-3", "probe:4"} // probe-1 and -2 are the harness's
	whole := h.user(h.viewer, "GET", h.farmPath("/devices"), "")
	if whole.Header.Get("Furrow-Next-Cursor") != "" {
		t.Fatal("the whole list names a next page")
	}
	for _, q := range []string{"?limit=1", "?limit=2", "?limit=4", "?limit=5"} {
		if got := pageAll(t, h, h.viewer, h.farmPath("/devices"+q), func(d deviceOut) string { return d.Name }); !slices.Equal(got, want) {
			t.Fatalf("%s: paged %v, want %v", q, got, want)
		}
	}
	r := h.user(h.viewer, "GET", h.farmPath("/devices?limit=2"), "")
	cursor := r.Header.Get("Furrow-Next-Cursor")
	// A cursor alone asks for a page of the default size: here the rest.
	r = h.user(h.viewer, "GET", h.farmPath("/devices?cursor="+cursor), "")
	var rest []deviceOut
	decode(t, r, &rest)
	if got := pageNames(rest); !slices.Equal(got, want[2:]) || r.Header.Get("Furrow-Next-Cursor") != "" {
		t.Fatalf("after the cursor: %s", r.Body)
	}
	foreign := encodeCursor(eventsList, furrow.Cursor{TimestampMs: 1, Seq: 1})
	noName := encodeDeviceCursor(furrow.DevicePlace{ID: uuid.New()})
	badText := base64.RawURLEncoding.EncodeToString([]byte("d1:" + uuid.NewString() + ":\xff"))
	for _, c := range []string{"zz", foreign, noName, badText, cursor + "A"} {
		expectError(t, h.user(h.viewer, "GET", h.farmPath("/devices?cursor="+c), ""), http.StatusBadRequest, furrow.EINVALID, "cursor")
	}
	expectError(t, h.user(h.viewer, "GET", h.farmPath("/devices?limit=0"), ""), http.StatusBadRequest, furrow.EINVALID, "limit")
}

// pageNames is the names of the devices of a page, in order.
func pageNames(ds []deviceOut) []string {
	names := make([]string, 0, len(ds))
	for _, d := range ds {
		names = append(names, d.Name)
	}
	return names
}

func TestEvents(t *testing.T) {
	h := newHarness(t)
	h.subscribeAll()
	r := h.user(h.manager, "POST", h.farmPath("/events"), `{"type":"trigger.fired","data":{"rule": "frost", "n":[1]}}`)
	var e furrow.Event
	decode(t, r, &e)
	if r.Status != http.StatusCreated || e.Type != furrow.EventTriggerFired || e.FarmID != h.farm ||
		!strings.HasPrefix(e.ID, "evt_") || string(e.Data) != `{"rule":"frost","n":[1]}` || e.OccurredAtMs == 0 {
		t.Fatalf("%d %s", r.Status, r.Body)
	}
	if h.engine.wakes != 1 {
		t.Fatalf("wakes = %d, want 1", h.engine.wakes)
	}
	if len(h.engine.events) != 1 || h.engine.events[0].ID != e.ID {
		t.Fatalf("published on the live bus: %+v, want the event", h.engine.events)
	}
	for body, reason := range map[string]string{
		`{"type":"metric.value","data":{}}`:              "type must be",
		`{"type":"webhook.disabled","data":{}}`:          "type must be",
		`{"type":"device.offline","data":{}}`:            "type must be",
		`{"type":"trigger.fired","data":[1]}`:            "data must be a JSON object",
		`{"type":"trigger.fired","data":null}`:           "data must be a JSON object",
		`{"type":"trigger.fired"}`:                       "data must be a JSON object",
		`{"type":"recommendation.created","data":"x"}`:   "data must be a JSON object",
		`{"type":"trigger.fired","data":{"a":"\ud800"}}`: "lone UTF-16 surrogate",
		`{"type":"trigger.fired","data":{"a":"\u0000"}}`: "NUL character",
		`{"type":"trigger.fired","data":{"a":1e99999}}`:  "written out in full",
	} {
		expectError(t, h.user(h.manager, "POST", h.farmPath("/events"), body), http.StatusBadRequest, furrow.EINVALID, reason)
	}
	h.user(h.manager, "POST", h.farmPath("/events"), `{"type":"recommendation.created","data":{}}`)
	r = h.user(h.viewer, "GET", h.farmPath("/events?type=trigger.fired&limit=5"), "")
	var list []furrow.Event
	decode(t, r, &list)
	if r.Status != http.StatusOK || len(list) != 1 || list[0].ID != e.ID {
		t.Fatalf("%d %s", r.Status, r.Body)
	}
	r = h.user(h.viewer, "GET", h.farmPath("/events"), "")
	decode(t, r, &list)
	if len(list) != 2 || list[0].Type != furrow.EventRecommendationCreated {
		t.Fatalf("events not newest first: %s", r.Body)
	}
	expectError(t, h.user(h.viewer, "GET", h.farmPath("/events?type=nope"), ""), http.StatusBadRequest, furrow.EINVALID, "type must be one of")
	for _, l := range []string{"0", "1001", "x", "-1"} {
		expectError(t, h.user(h.viewer, "GET", h.farmPath("/events?limit="+l), ""), http.StatusBadRequest, furrow.EINVALID, "limit must be an integer from 1 to 1000")
	}
}

func TestReadingsCursor(t *testing.T) {
	h := newHarness(t)
	for i := range 5 {
		h.post(h.deviceKey, readingBody(h.device.ID.String(), "220", fmt.Sprint(i)))
		h.clock.Advance(time.Second)
	}
	h.post(h.device2Key, readingBody(h.device2.ID.String(), "7", "99"))
	values := pageAll(t, h, h.viewer, h.farmPath("/readings?device_id="+h.device.ID.String()+"&metric_id=220&limit=2"),
		func(r furrow.Reading) string { return r.Value })
	if fmt.Sprint(values) != "[4 3 2 1 0]" {
		t.Fatalf("paged values = %v, want newest first without gaps", values)
	}
	r := h.user(h.viewer, "GET", h.farmPath("/readings?since_ms=1"), "")
	last, _ := h.calls.Last("Readings")
	if f, _ := last.Args[0].(furrow.ReadingFilter); !strings.Contains(r.Body, `"value":"99"`) || f.SinceMs == nil || *f.SinceMs != 1 {
		t.Fatalf("since_ms not passed: %s", r.Body)
	}
	for q, reason := range map[string]string{
		"cursor=abc": "cursor is malformed",
		"cursor=" + encodeCursor(readingsList, furrow.Cursor{}) + "x": "cursor is malformed",
		"cursor=" + encodeCursor(eventsList, furrow.Cursor{}):         "cursor is malformed",
		"device_id=x":   "device_id must be a UUID",
		"metric_id=0":   "metric_id must be an integer",
		"metric_id=2.5": "metric_id must be an integer",
		"since_ms=-1":   "since_ms must be an integer",
		"limit=abc":     "limit must be an integer",
	} {
		expectError(t, h.user(h.viewer, "GET", h.farmPath("/readings?"+q), ""), http.StatusBadRequest, furrow.EINVALID, reason)
	}
	r = h.user(h.viewer, "GET", h.farmPath("/readings?metric_id=12345"), "")
	if r.Status != http.StatusOK || strings.TrimSpace(r.Body) != "[]" {
		t.Fatalf("empty page: %d %s", r.Status, r.Body)
	}
}

func TestCursorRoundTrip(t *testing.T) {
	c := furrow.Cursor{TimestampMs: 1_700_000_000_123, Seq: 42}
	for _, l := range []list{readingsList, eventsList} {
		got, err := decodeCursor(l, encodeCursor(l, c))
		if err != nil || got != c {
			t.Fatalf("%s: got %+v, %v", l, got, err)
		}
	}
	if _, err := decodeCursor(eventsList, encodeCursor(readingsList, c)); err == nil {
		t.Fatal("the events list took a cursor of the readings list")
	}
}

func TestEventsCursor(t *testing.T) {
	h := newHarness(t)
	var ids []string // oldest first
	for i := range 5 {
		typ := "trigger.fired"
		if i == 2 {
			typ = "recommendation.created"
		}
		r := h.user(h.manager, "POST", h.farmPath("/events"), `{"type":"`+typ+`","data":{}}`)
		var e furrow.Event
		decode(t, r, &e)
		ids = append(ids, e.ID)
		if i%2 == 1 {
			h.clock.Advance(time.Second) // some events share a millisecond
		}
	}
	page := func(query string) []string {
		t.Helper()
		return pageAll(t, h, h.viewer, h.farmPath("/events?limit=2"+query), func(e furrow.Event) string { return e.ID })
	}
	if got, want := page(""), []string{ids[4], ids[3], ids[2], ids[1], ids[0]}; !slices.Equal(got, want) {
		t.Fatalf("paged %v, want %v (newest first, without gaps)", got, want)
	}
	if got, want := page("&type=trigger.fired"), []string{ids[4], ids[3], ids[1], ids[0]}; !slices.Equal(got, want) {
		t.Fatalf("paged trigger.fired %v, want %v", got, want)
	}
	since := furrow.Millis(h.clock.Now()) - 1000
	if got, want := page(fmt.Sprintf("&since_ms=%d", since)), []string{ids[4], ids[3], ids[2]}; !slices.Equal(got, want) {
		t.Fatalf("paged since_ms %v, want %v", got, want)
	}
	for q, reason := range map[string]string{
		"cursor=abc": "cursor is malformed",
		"cursor=" + encodeCursor(readingsList, furrow.Cursor{TimestampMs: 1}): "cursor is malformed",
		"since_ms=-1": "since_ms must be an integer",
		"since_ms=x":  "since_ms must be an integer",
	} {
		expectError(t, h.user(h.viewer, "GET", h.farmPath("/events?"+q), ""), http.StatusBadRequest, furrow.EINVALID, reason)
	}
}

func TestLiveHandlersMounted(t *testing.T) {
	h := newHarness(t)
	expectError(t, h.do(req{method: "GET", path: "/api/live", stub: true}), http.StatusNotFound, furrow.ENOTFOUND, "")
	h.withLive()
	h.deps.LivePage = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusAccepted) })
	h.rebuild()
	if r := h.do(req{method: "GET", path: "/api/live"}); r.Status != http.StatusUnauthorized {
		t.Fatalf("/api/live: %d", r.Status)
	}
	if r := h.do(req{method: "GET", path: "/live", stub: true}); r.Status != http.StatusAccepted {
		t.Fatalf("/live: %d", r.Status)
	}
}

// pageAll follows a list's Furrow-Next-Cursor from path, as who, until a
// page comes without one, and returns the key of every row in order.
func pageAll[T any](t *testing.T, h *harness, who, path string, key func(T) string) []string {
	t.Helper()
	var got []string
	cursor := ""
	for n := 0; ; n++ {
		if n > 5 {
			t.Fatal("paging does not end")
		}
		q := path
		if cursor != "" {
			q += "&cursor=" + cursor
		}
		r := h.user(who, "GET", q, "")
		var rows []T
		decode(t, r, &rows)
		for _, x := range rows {
			got = append(got, key(x))
		}
		if cursor = r.Header.Get("Furrow-Next-Cursor"); cursor == "" {
			return got
		}
	}
}
