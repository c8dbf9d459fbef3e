package api

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
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
		{"old WebSocket version", viewer, "?topic=" + mine, withHeader(upgradeHeaders(viewer), "Sec-WebSocket-Version", "8"), 400, furrow.EINVALID, "Sec-WebSocket-Version"},
		{"no handshake key", viewer, "?topic=" + mine, withHeader(upgradeHeaders(viewer), "Sec-WebSocket-Key", ""), 400, furrow.EINVALID, "Sec-WebSocket-Key"},
		{"short handshake key", viewer, "?topic=" + mine, withHeader(upgradeHeaders(viewer), "Sec-WebSocket-Key", "c2hvcnQ="), 400, furrow.EINVALID, "Sec-WebSocket-Key"},
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

// withHeader returns hdr with key set to v, or removed when v is "".
func withHeader(hdr map[string]string, key, v string) map[string]string {
	if v == "" {
		delete(hdr, key)
	} else {
		hdr[key] = v
	}
	return hdr
}

// dialLive connects to the API's /api/live over a real socket.
func dialLive(t *testing.T, h *harness, topic live.Topic, opts *websocket.DialOptions) (*websocket.Conn, *http.Response, error) {
	t.Helper()
	srv := httptest.NewServer(h.handler)
	t.Cleanup(srv.Close)
	return dialServer(t, srv, topic, opts)
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

// dialServer connects to /api/live of srv with opts.
func dialServer(t *testing.T, srv *httptest.Server, topic live.Topic, opts *websocket.DialOptions) (*websocket.Conn, *http.Response, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, resp, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(srv.URL, "http")+"/api/live?topic="+topic.String(), opts)
	if c != nil {
		t.Cleanup(func() { _ = c.CloseNow() })
	}
	return c, resp, err
}

func bearerOpts(token string) *websocket.DialOptions {
	return &websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + token}}}
}

// A user may hold live.MaxConnsPerUser connections on one server: the next
// is refused before the upgrade with 429 rate_limited and retry-after,
// another user is not, and closing one lets the user in again.
func TestLiveConnectionsPerUser(t *testing.T) {
	h := newHarness(t)
	h.withLive()
	srv := httptest.NewServer(h.handler)
	t.Cleanup(srv.Close)
	topic := live.FarmTopic(h.farm)
	var open []*websocket.Conn
	for i := range live.MaxConnsPerUser {
		c, _, err := dialServer(t, srv, topic, bearerOpts(h.viewer))
		if err != nil {
			t.Fatalf("connection %d: %v", i+1, err)
		}
		open = append(open, c)
	}
	_, resp, err := dialServer(t, srv, topic, bearerOpts(h.viewer))
	if err == nil || resp == nil || resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("connection %d: err %v, resp %v; want 429", live.MaxConnsPerUser+1, err, resp)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Fatalf("Content-Type %q, want application/json", ct)
	}
	var body struct{ Error, Reason string }
	if b, _ := io.ReadAll(resp.Body); json.Unmarshal(b, &body) != nil || body.Error != furrow.ERATELIMITED || body.Reason == "" {
		t.Fatalf("body %+v, want rate_limited with a reason", body)
	}
	if got, want := resp.Header.Get("Retry-After"), strconv.Itoa(int(live.ConnLimitRetryAfter/time.Second)); got != want {
		t.Fatalf("Retry-After %q, want %q", got, want)
	}
	if _, _, err := dialServer(t, srv, topic, bearerOpts(h.operator)); err != nil {
		t.Fatalf("another user: %v", err)
	}
	_ = open[0].Close(websocket.StatusNormalClosure, "")
	deadline := time.Now().Add(5 * time.Second)
	for {
		_, resp, err := dialServer(t, srv, topic, bearerOpts(h.viewer))
		if err == nil {
			break
		}
		if resp == nil || resp.StatusCode != http.StatusTooManyRequests || time.Now().After(deadline) {
			t.Fatalf("after closing one: err %v, resp %v; want a connection", err, resp)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A connection's initial topics are authorized once per farm, however
// many topics of the farm it names, repeated or not, and not again after
// the upgrade: the connection remembers the check, so subscribing to more
// of the farm's topics, or to one again, does not ask the store.
func TestLiveChecksEachFarmOnce(t *testing.T) {
	h := newHarness(t)
	h.withLive()
	topics := []live.Topic{live.FarmTopic(h.farm), live.EventsTopic(h.farm),
		live.MetricTopic(h.farm, h.device.ID, 220), live.FarmTopic(h.farm)}
	q := url.Values{}
	for _, tp := range topics {
		q.Add("topic", tp.String())
	}
	srv := httptest.NewServer(h.handler)
	t.Cleanup(srv.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(srv.URL, "http")+"/api/live?"+q.Encode(), bearerOpts(h.viewer))
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseNow()
	for range topics {
		if m := readMessage(t, c); m["type"] != "subscribed" {
			t.Fatalf("got %v, want subscribed", m)
		}
	}
	more := live.MetricTopic(h.farm, h.device.ID, 221).String()
	for _, step := range []struct{ send, answer string }{
		{"subscribe", "subscribed"}, {"unsubscribe", "unsubscribed"}, {"subscribe", "subscribed"},
	} {
		b, _ := json.Marshal(map[string]string{"type": step.send, "topic": more})
		if err := c.Write(ctx, websocket.MessageText, b); err != nil {
			t.Fatal(err)
		}
		if m := readMessage(t, c); m["type"] != step.answer || m["topic"] != more {
			t.Fatalf("%s %s: got %v, want %s", step.send, more, m, step.answer)
		}
	}
	if n := h.calls.Count("MemberRole"); n != 1 {
		t.Fatalf("MemberRole called %d times for one farm, want once", n)
	}
}

// A browser app served from another origin connects: the endpoint takes
// no cookie, so an origin check would protect nothing.
func TestLiveAcceptsAnyOrigin(t *testing.T) {
	h := newHarness(t)
	h.withLive()
	topic := live.FarmTopic(h.farm)
	c, resp, err := dialLive(t, h, topic, &websocket.DialOptions{
		HTTPHeader:   http.Header{"Origin": {"https://app.example"}},
		Subprotocols: []string{live.Subprotocol, live.BearerProtocolPrefix + h.viewer},
	})
	if err != nil {
		status := 0
		if resp != nil {
			status = resp.StatusCode
		}
		t.Fatalf("dial from another origin: %v (status %d)", err, status)
	}
	if m := readMessage(t, c); m["type"] != "subscribed" || m["topic"] != topic.String() {
		t.Fatalf("got %v, want subscribed", m)
	}
}

// The work before the upgrade, the token's lookup included, is bounded by
// the request timeout: a silent store ends in 500 internal_error with
// retry-after, not a wait.
func TestLiveHandshakeHasTheRequestDeadline(t *testing.T) {
	h := newHarness(t)
	h.cfg.RequestTimeout = 100 * time.Millisecond
	h.withLive()
	h.deps.Users = stallingUsers{h.store}
	h.rebuild()
	answered := make(chan response, 1)
	start := time.Now()
	go func() {
		answered <- h.do(req{method: "GET", path: "/api/live?topic=" + url.QueryEscape(live.FarmTopic(h.farm).String()), header: upgradeHeaders("Bearer " + h.viewer)})
	}()
	select {
	case r := <-answered:
		expectError(t, r, http.StatusInternalServerError, furrow.EINTERNAL, "")
		if r.Header.Get("Retry-After") == "" {
			t.Fatal("500 without retry-after")
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Fatalf("answered after %v, want about the 100 ms timeout", d)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no answer within 5 s: the token's lookup has no deadline")
	}
}

// stallingUsers waits for the request's deadline to look a token up, as a
// store does whose database has gone silent.
type stallingUsers struct{ furrow.UserService }

func (stallingUsers) UserByToken(ctx context.Context, _ string) (furrow.User, error) {
	<-ctx.Done()
	return furrow.User{}, ctx.Err()
}
