package api

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/google/uuid"

	"github.com/furrowhq/furrow"
	"github.com/furrowhq/furrow/live"
)

// withLive mounts a live server on an in-process bus and returns the bus.
func (h *harness) withLive() *live.Bus {
	h.t.Helper()
	bus := live.NewMemoryBus(nil)
	srv := live.NewServer(live.Deps{Bus: bus})
	h.t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		_ = bus.Close()
	})
	h.deps.Live = srv
	h.rebuild()
	return bus
}

// upgradeHeaders make a request a WebSocket upgrade.
func upgradeHeaders(auth string) map[string]string {
	hdr := map[string]string{
		"Connection": "Upgrade", "Upgrade": "websocket",
		"Sec-WebSocket-Version": "13", "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ==",
	}
	if auth != "" {
		hdr["Authorization"] = auth
	}
	return hdr
}

func TestLiveRejectsBeforeUpgrade(t *testing.T) {
	h := newHarness(t)
	h.withLive()
	mine, other := live.FarmTopic(h.farm).String(), live.FarmTopic(uuid.New()).String()
	viewer := "Bearer " + h.viewer
	for _, tc := range []struct {
		name, auth, query string
		header            map[string]string
		status            int
		code, reason      string
	}{
		{"no token", "", "?topic=" + mine, nil, 401, furrow.EUNAUTHORIZED, "furrow.bearer."},
		{"unknown token", "Bearer fut_nope", "?topic=" + mine, nil, 401, furrow.EUNAUTHORIZED, "invalid"},
		{"basic scheme", "Basic " + h.viewer, "?topic=" + mine, nil, 401, furrow.EUNAUTHORIZED, "invalid"},
		{"bad topic", viewer, "?topic=farms/" + strings.ToUpper(h.farm.String()) + "/readings", nil, 400, furrow.EINVALID, "lower-case"},
		{"wildcard topic", viewer, "?topic=farms/*/readings", nil, 400, furrow.EINVALID, "topic"},
		{"outsider", "Bearer " + h.outsider, "?topic=" + mine, nil, 403, furrow.EFORBIDDEN, "not a member"},
		{"outsider on the events topic", "Bearer " + h.outsider, "?topic=" + live.EventsTopic(h.farm).String(), nil, 403, furrow.EFORBIDDEN, "not a member"},
		{"one of two forbidden", viewer, "?topic=" + mine + "&topic=" + other, nil, 403, furrow.EFORBIDDEN, other},
		{"not an upgrade", viewer, "?topic=" + mine, map[string]string{"Authorization": viewer}, 400, furrow.EINVALID, "WebSocket upgrade"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hdr := tc.header
			if hdr == nil {
				hdr = upgradeHeaders(tc.auth)
			}
			r := h.do(req{method: "GET", path: "/api/live" + tc.query, header: hdr})
			expectError(t, r, tc.status, tc.code, tc.reason)
			if strings.Contains(r.Body, "fut_") {
				t.Fatalf("the answer leaks a token: %s", r.Body)
			}
		})
	}
}

// dialLive connects to the API's /api/live over a real socket.
func dialLive(t *testing.T, h *harness, topic live.Topic, opts *websocket.DialOptions) (*websocket.Conn, *http.Response, error) {
	t.Helper()
	srv := httptest.NewServer(h.handler)
	t.Cleanup(srv.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, resp, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(srv.URL, "http")+"/api/live?topic="+topic.String(), opts)
	if c != nil {
		t.Cleanup(func() { _ = c.CloseNow() })
	}
	return c, resp, err
}

// readMessage reads one message of the live protocol.
func readMessage(t *testing.T, c *websocket.Conn) map[string]any {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, b, err := c.Read(ctx)
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("message %s: %v", b, err)
	}
	return m
}

// A browser offers the token as a subprotocol; the server selects
// furrow.v1, and each later subscription is authorized on its own.
func TestLiveBearerSubprotocol(t *testing.T) {
	h := newHarness(t)
	bus := h.withLive()
	topic := live.FarmTopic(h.farm)
	c, _, err := dialLive(t, h, topic, &websocket.DialOptions{
		Subprotocols: []string{live.Subprotocol, live.BearerProtocolPrefix + h.viewer},
	})
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	if c.Subprotocol() != live.Subprotocol {
		t.Fatalf("subprotocol %q, want %q", c.Subprotocol(), live.Subprotocol)
	}
	if m := readMessage(t, c); m["type"] != "subscribed" || m["topic"] != topic.String() {
		t.Fatalf("got %v, want subscribed", m)
	}
	bus.Publish(furrow.LiveReading{Reading: furrow.Reading{FarmID: h.farm, DeviceID: h.device.ID, MetricID: 220, Value: "41.5", Timestamp: 1}})
	if m := readMessage(t, c); m["value"] != "41.5" || m["farm_id"] != h.farm.String() {
		t.Fatalf("got %v, want the reading", m)
	}
	other := live.FarmTopic(uuid.New())
	b, _ := json.Marshal(map[string]string{"type": "subscribe", "topic": other.String()})
	if err := c.Write(t.Context(), websocket.MessageText, b); err != nil {
		t.Fatal(err)
	}
	if m := readMessage(t, c); m["type"] != "error" || m["error"] != furrow.EFORBIDDEN || m["topic"] != other.String() {
		t.Fatalf("got %v, want a forbidden error for %s", m, other)
	}
}

// The Authorization header wins over the subprotocol.
func TestLiveHeaderWinsOverSubprotocol(t *testing.T) {
	h := newHarness(t)
	h.withLive()
	_, resp, err := dialLive(t, h, live.FarmTopic(h.farm), &websocket.DialOptions{
		HTTPHeader:   http.Header{"Authorization": {"Bearer fut_nope"}},
		Subprotocols: []string{live.Subprotocol, live.BearerProtocolPrefix + h.viewer},
	})
	if err == nil || resp == nil || resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("dial: err %v, resp %v; want 401", err, resp)
	}
}

// A WebSocket session outlives the request deadline and the server's read
// and write timeouts, which bound only its handshake.
func TestLiveSessionOutlivesRequestBounds(t *testing.T) {
	h := newHarness(t)
	h.cfg.RequestTimeout = 200 * time.Millisecond
	bus := h.withLive()
	srv := httptest.NewUnstartedServer(h.handler)
	srv.Config.ReadTimeout, srv.Config.WriteTimeout = 300*time.Millisecond, 300*time.Millisecond
	srv.Start()
	t.Cleanup(srv.Close)
	topic := live.FarmTopic(h.farm)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(srv.URL, "http")+"/api/live?topic="+topic.String(),
		&websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + h.viewer}}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseNow()
	if m := readMessage(t, c); m["type"] != "subscribed" {
		t.Fatalf("got %v, want subscribed", m)
	}
	time.Sleep(time.Second) // past every bound of a request
	bus.Publish(furrow.LiveReading{Reading: furrow.Reading{FarmID: h.farm, DeviceID: h.device.ID, MetricID: 220, Value: "later", Timestamp: 1}})
	if m := readMessage(t, c); m["value"] != "later" {
		t.Fatalf("got %v, want the reading published after the bounds", m)
	}
}
