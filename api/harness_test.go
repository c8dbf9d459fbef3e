package api

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/furrowhq/furrow"
	"github.com/furrowhq/furrow/api/ratelimit"
	"github.com/furrowhq/furrow/internal/memstore"
	"github.com/furrowhq/furrow/internal/testclock"
	"github.com/furrowhq/furrow/internal/testenv"
)

// Peers of the tests: the trusted proxy and someone else.
const (
	proxyPeer     = "10.1.2.3:40000"
	untrustedPeer = "192.0.2.7:40000"
)

// harness is an API over the in-memory store with one farm and its people
// and devices.
type harness struct {
	t       *testing.T
	clock   *testclock.Clock
	store   *memstore.Store
	calls   *memstore.Recorder // the store calls since the harness was made
	engine  *engine
	logs    *testenv.Buffer
	cfg     Config
	deps    Deps
	handler http.Handler

	farm                                       uuid.UUID
	owner, manager, operator, viewer, outsider string // user tokens
	ownerID                                    uuid.UUID
	device, device2                            furrow.Device
	deviceKey, device2Key                      string
}

// subscribeAll gives the farm a webhook of every event type, so that its
// events wait for the dispatcher.
func (h *harness) subscribeAll() {
	h.t.Helper()
	if _, err := h.store.CreateWebhook(h.t.Context(), furrow.Webhook{ID: uuid.New(), FarmID: h.farm, Enabled: true}); err != nil {
		h.t.Fatal(err)
	}
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	clock := testclock.New(time.UnixMilli(1_700_000_000_000))
	store := memstore.New(clock)
	h := &harness{t: t, clock: clock, store: store, engine: &engine{store: store}, logs: &testenv.Buffer{}}
	ctx := context.Background()
	owner, ownerToken, _ := store.CreateUser(ctx, "owner@example.com")
	h.owner, h.ownerID = ownerToken, owner.ID
	farm, _ := store.CreateFarm(ctx, owner.ID, "North")
	h.farm = farm.ID
	h.manager = h.member(furrow.RoleManager)
	h.operator = h.member(furrow.RoleOperator)
	h.viewer = h.member(furrow.RoleViewer)
	_, h.outsider, _ = store.CreateUser(ctx, "outsider@example.com")
	h.device, h.deviceKey, _ = store.CreateDevice(ctx, farm.ID, "probe-1")
	h.device2, h.device2Key, _ = store.CreateDevice(ctx, farm.ID, "probe-2")
	h.cfg = Config{
		TrustedProxies: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")},
		Thresholds:     furrow.Thresholds{StaleAfter: 30 * time.Minute, OfflineAfter: 2 * time.Hour},
		ReenableWait:   300 * time.Millisecond,
	}
	h.deps = Deps{
		Users: store, Farms: store, Devices: store, Readings: store, Events: store,
		Webhooks: store, Delivery: h.engine, Publisher: h.engine, EventPublisher: h.engine, Waker: h.engine,
		Limiter: ratelimit.NewMemory(furrow.RateLimit, furrow.RateWindow, clock),
		Clock:   clock, Logger: slog.New(slog.NewTextHandler(h.logs, nil)),
	}
	h.rebuild()
	h.calls = store.Record()
	return h
}

// readings returns the readings stored on the harness farm, newest first.
func (h *harness) readings() []furrow.Reading {
	h.t.Helper()
	rs, _, err := h.store.Readings(h.t.Context(), furrow.ReadingFilter{FarmID: h.farm})
	if err != nil {
		h.t.Fatal(err)
	}
	return rs
}

// otherFarm returns a farm of someone outside the harness farm.
func (h *harness) otherFarm() uuid.UUID {
	h.t.Helper()
	u, _, err := h.store.CreateUser(h.t.Context(), uuid.NewString()+"@example.com")
	if err != nil {
		h.t.Fatal(err)
	}
	f, err := h.store.CreateFarm(h.t.Context(), u.ID, "Elsewhere")
	if err != nil {
		h.t.Fatal(err)
	}
	return f.ID
}

// engine stands in for what is not the store: the live bus, the
// dispatcher's wake-up and the delivery engine (Temporal), recording what
// the API asks of them.
type engine struct {
	store        *memstore.Store // whose webhook Reenable may enable
	mu           sync.Mutex
	published    []furrow.LiveReading
	events       []furrow.Event // published on the live bus
	wakes        int
	reenabled    []uuid.UUID
	flipOnSignal bool // Reenable enables the webhook at once, as a quick workflow would
	redelivered  []furrow.Event
	tested       []furrow.Event // the test deliveries started
}

func (e *engine) Publish(r furrow.LiveReading) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.published = append(e.published, r)
}

func (e *engine) PublishEvent(ev furrow.Event) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.events = append(e.events, ev)
}

func (e *engine) Wake(uuid.UUID) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.wakes++
}

func (e *engine) Reenable(ctx context.Context, id uuid.UUID) error {
	e.mu.Lock()
	e.reenabled = append(e.reenabled, id)
	flip := e.flipOnSignal
	e.mu.Unlock()
	if flip {
		_, err := e.store.SetWebhookState(ctx, id, true, 0, 0)
		return err
	}
	return nil
}

func (e *engine) Redeliver(_ context.Context, _ furrow.Webhook, events []furrow.Event) (int, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.redelivered = append(e.redelivered, events...)
	return len(events), nil
}

func (e *engine) TestDelivery(_ context.Context, _ furrow.Webhook, ev furrow.Event) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.tested = append(e.tested, ev)
	return nil
}

// rebuild makes the handler again after cfg or deps changed.
func (h *harness) rebuild() { h.handler = New(h.cfg, h.deps) }

func (h *harness) member(role furrow.Role) string {
	u, token, _ := h.store.CreateUser(context.Background(), role.String()+"@example.com")
	_ = h.store.AddMember(context.Background(), furrow.Member{FarmID: h.farm, UserID: u.ID, Role: role})
	return token
}

// response is a recorded answer.
type response struct {
	Status int
	Header http.Header
	Body   string
}

// errorCode returns the error and reason of an error body.
func (r response) errorBody(t *testing.T) (string, string) {
	t.Helper()
	var b struct{ Error, Reason string }
	if err := json.Unmarshal([]byte(r.Body), &b); err != nil {
		t.Fatalf("error body %q: %v", r.Body, err)
	}
	return b.Error, b.Reason
}

// req describes one request to the harness.
type req struct {
	method, path, body string
	peer               string
	header             map[string]string
	// stub says a test double answers instead of Furrow's handler, so the
	// exchange is not held to the OpenAPI document.
	stub bool
}

func (h *harness) do(q req) response {
	h.t.Helper()
	r := httptest.NewRequest(q.method, q.path, strings.NewReader(q.body))
	r.RemoteAddr = untrustedPeer
	if q.peer != "" {
		r.RemoteAddr = q.peer
	}
	if q.body != "" {
		r.Header.Set("Content-Type", "application/json")
	}
	for k, v := range q.header {
		r.Header.Set(k, v)
	}
	w := httptest.NewRecorder()
	h.handler.ServeHTTP(w, r)
	b, _ := io.ReadAll(w.Result().Body)
	if !q.stub {
		checkContract(h.t, r, []byte(q.body), w.Result(), b)
	}
	return response{w.Code, w.Result().Header, string(b)}
}

// user sends a management request with a user token.
func (h *harness) user(token, method, path, body string) response {
	h.t.Helper()
	hdr := map[string]string{}
	if token != "" {
		hdr["Authorization"] = "Bearer " + token
	}
	return h.do(req{method: method, path: path, body: body, header: hdr})
}

// farmPath is a path under the harness farm.
func (h *harness) farmPath(rest string) string { return "/api/farms/" + h.farm.String() + rest }

// expectError asserts status, error code and that the reason contains want.
func expectError(t *testing.T, r response, status int, code, want string) {
	t.Helper()
	if r.Status != status {
		t.Fatalf("status = %d, want %d; body %s", r.Status, status, r.Body)
	}
	if ct := r.Header.Get("Content-Type"); ct != "application/json" {
		t.Fatalf("Content-Type = %q, want application/json", ct)
	}
	gotCode, reason := r.errorBody(t)
	if gotCode != code {
		t.Fatalf("error = %q, want %q; body %s", gotCode, code, r.Body)
	}
	if !strings.Contains(reason, want) {
		t.Fatalf("reason = %q, want it to contain %q", reason, want)
	}
}

// decode unmarshals a response body into v.
func decode(t *testing.T, r response, v any) {
	t.Helper()
	if err := json.Unmarshal([]byte(r.Body), v); err != nil {
		t.Fatalf("body %q: %v", r.Body, err)
	}
}
