package live_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/furrowhq/furrow"
	"github.com/furrowhq/furrow/live"
	"github.com/google/uuid"
)

// world is a live server behind a stand-in for the API, which
// authenticates users and authorizes topics (package api tests the real
// one): alice views farm A, bob owns farm B.
type world struct {
	srv                  *live.Server
	http                 *httptest.Server
	bus                  *live.Bus
	farmA, farmB         uuid.UUID
	aliceToken, bobToken string
	users                map[string]uuid.UUID
	roles                map[[2]uuid.UUID]furrow.Role
	// checks counts the calls of the Authorize handed to Accept, which
	// checks the initial topics' farms and then each subscribe's.
	checks atomic.Int64
}

func newWorld(t *testing.T, bus *live.Bus, d live.Deps) *world {
	t.Helper()
	w := &world{bus: bus, farmA: uuid.New(), farmB: uuid.New(),
		aliceToken: "fut_alice_" + uuid.NewString(), bobToken: "fut_bob_" + uuid.NewString()}
	alice, bob := uuid.New(), uuid.New()
	w.users = map[string]uuid.UUID{w.aliceToken: alice, w.bobToken: bob}
	w.roles = map[[2]uuid.UUID]furrow.Role{{w.farmA, alice}: furrow.RoleViewer, {w.farmB, bob}: furrow.RoleOwner}
	d.Bus = bus
	w.srv = live.NewServer(d)
	w.http = httptest.NewServer(w)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = w.srv.Shutdown(ctx)
		w.http.Close()
	})
	return w
}

// ServeHTTP is the stand-in for the API's GET /api/live. The token comes
// in the Authorization header or, from a browser, as the bearer
// subprotocol.
func (w *world) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	token := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
	for _, p := range strings.Split(r.Header.Get("Sec-WebSocket-Protocol"), ",") {
		if tok, ok := strings.CutPrefix(strings.TrimSpace(p), live.BearerProtocolPrefix); ok && token == "" {
			token = tok
		}
	}
	user, ok := w.users[token]
	if !ok {
		rw.WriteHeader(http.StatusUnauthorized)
		return
	}
	authorize := func(_ context.Context, t live.Topic) error {
		if w.roles[[2]uuid.UUID{t.Farm, user}] < furrow.RoleViewer {
			return furrow.Errorf(furrow.EFORBIDDEN, "You are not a member of the farm of topic %s.", t)
		}
		return nil
	}
	topics, err := live.ParseTopics(r.URL.Query()["topic"])
	for _, t := range topics {
		if err == nil {
			err = authorize(r.Context(), t)
		}
	}
	if err == nil {
		err = w.srv.Accept(rw, r, live.Client{Topics: topics, Authorize: func(ctx context.Context, t live.Topic) error {
			w.checks.Add(1)
			return authorize(ctx, t)
		}})
	}
	if err != nil {
		rw.WriteHeader(http.StatusBadRequest)
	}
}

func (w *world) url(topics ...live.Topic) string {
	u := "ws" + strings.TrimPrefix(w.http.URL, "http") + "/api/live"
	for i, t := range topics {
		sep := "&"
		if i == 0 {
			sep = "?"
		}
		u += sep + "topic=" + t.String()
	}
	return u
}

// dial connects with a bearer token and waits for the subscription of
// every initial topic.
func (w *world) dial(t *testing.T, token string, topics ...live.Topic) *websocket.Conn {
	t.Helper()
	return w.dialWith(t, &websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + token}}}, topics...)
}

func (w *world) dialWith(t *testing.T, opts *websocket.DialOptions, topics ...live.Topic) *websocket.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, resp, err := websocket.Dial(ctx, w.url(topics...), opts)
	if err != nil {
		status := 0
		if resp != nil {
			status = resp.StatusCode
		}
		t.Fatalf("dial: %v (status %d)", err, status)
	}
	c.SetReadLimit(1 << 20)
	t.Cleanup(func() { _ = c.CloseNow() })
	for _, tp := range topics {
		expectControl(t, c, "subscribed", tp.String())
	}
	return c
}

// message is any message from the server.
type message struct {
	Type      string `json:"type"`
	Topic     string `json:"topic"`
	Error     string `json:"error"`
	Reason    string `json:"reason"`
	FarmID    string `json:"farm_id"`
	DeviceID  string `json:"device_id"`
	MetricID  int32  `json:"metric_id"`
	Value     string `json:"value"`
	Timestamp string `json:"timestamp"`
}

func read(t *testing.T, c *websocket.Conn) message {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, b, err := c.Read(ctx)
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	var m message
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("message %s: %v", b, err)
	}
	return m
}

func expectControl(t *testing.T, c *websocket.Conn, typ, topic string) message {
	t.Helper()
	m := read(t, c)
	if m.Type != typ || m.Topic != topic {
		t.Fatalf("got %+v, want type %q topic %q", m, typ, topic)
	}
	return m
}

func send(t *testing.T, c *websocket.Conn, v any) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	b, _ := json.Marshal(v)
	if err := c.Write(ctx, websocket.MessageText, b); err != nil {
		t.Fatalf("write: %v", err)
	}
}

func reading(farm, device uuid.UUID, metric int32, value string) furrow.LiveReading {
	return furrow.LiveReading{Reading: furrow.Reading{
		FarmID: farm, DeviceID: device, MetricID: metric, Value: value, Timestamp: 1700000000000,
	}}
}

// readUntil reads data messages until one has the value end, and returns
// the values before it.
func readUntil(t *testing.T, c *websocket.Conn, end string) []message {
	t.Helper()
	var got []message
	for {
		m := read(t, c)
		if m.Type != "" {
			t.Fatalf("unexpected control message %+v", m)
		}
		if m.Value == end {
			return got
		}
		got = append(got, m)
	}
}
