package live

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/furrowhq/furrow"
	"github.com/google/uuid"
)

// gatedTransport is the in-process transport with subscriptions that are
// confirmed only once their topic's gate is opened. onWatch, when set, is
// called with each topic watched, on the subscribing goroutine.
type gatedTransport struct {
	memoryTransport
	onWatch func(topic string)
	mu      sync.Mutex
	gates   map[string]chan struct{}
}

func (g *gatedTransport) watch(topic string) <-chan struct{} {
	if g.onWatch != nil {
		g.onWatch(topic)
	}
	return g.gate(topic)
}

func (g *gatedTransport) gate(topic string) chan struct{} {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.gates[topic] == nil {
		g.gates[topic] = make(chan struct{})
	}
	return g.gates[topic]
}

func (g *gatedTransport) open(topic string) { close(g.gate(topic)) }

// TestNoSubscribedAfterUnsubscribed checks that a subscription the bus
// confirms as the client unsubscribes is not answered subscribed after
// unsubscribed, which would leave the client believing it is subscribed.
// One processor makes the interleaving certain: the confirmation comes
// while the subscriber goroutine runs on, and is seen only once it waits.
func TestNoSubscribedAfterUnsubscribed(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	tr := &gatedTransport{memoryTransport: memoryTransport{newHub()}, gates: map[string]chan struct{}{}}
	bus := newBus(tr.hub, tr, queueSize, 0, nil)
	defer bus.Close()
	srv := NewServer(Deps{Bus: bus})
	ctx, ws := dialAccepting(t, srv, func(context.Context, Topic) error { return nil })
	request := func(typ string, t2 Topic) {
		b, _ := json.Marshal(clientMessage{Type: typ, Topic: t2.String()})
		if err := ws.Write(ctx, websocket.MessageText, b); err != nil {
			t.Fatal(err)
		}
	}
	next := func() serverMessage {
		m, _ := readServerMessage(t, ctx, ws)
		return m
	}
	farm := uuid.New()
	x, y, z := FarmTopic(farm), EventsTopic(farm), MetricTopic(farm, farm, 1)
	tr.open(y.String())
	tr.open(z.String())

	request("subscribe", x)
	if m := next(); m.Type != "error" || m.Topic != x.String() {
		t.Fatalf("got %+v, want the bus's error for %s", m, x)
	}
	// x now waits on the bus. The bus confirms it as y is subscribed,
	// once x's unsubscribe, sent right after, waits to be carried out.
	tr.onWatch = func(topic string) {
		if topic == y.String() {
			waitQueued(t, srv)
			tr.open(x.String())
		}
	}
	request("subscribe", y)
	request("unsubscribe", x)
	var got []serverMessage
	for m := next(); m.Type != "unsubscribed"; m = next() {
		got = append(got, m)
	}
	request("subscribe", z)
	for m := next(); m.Topic != z.String(); m = next() {
		got = append(got, m)
		if m.Type == "subscribed" && m.Topic == x.String() {
			t.Fatalf("subscribed %s came after unsubscribed (messages %+v)", x, got)
		}
	}
}

// waitQueued waits until the one connection of srv has a request waiting.
func waitQueued(t *testing.T, srv *Server) {
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		srv.mu.Lock()
		n := 0
		for c := range srv.conns {
			n = len(c.requests)
		}
		srv.mu.Unlock()
		if n > 0 {
			return
		}
		time.Sleep(time.Millisecond)
	}
	t.Error("the unsubscribe was never queued")
}

// queuedWithin reports whether the one connection of srv has n client
// messages waiting to be answered within limit.
func queuedWithin(srv *Server, n int, limit time.Duration) bool {
	for deadline := time.Now().Add(limit); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		srv.mu.Lock()
		queued := 0
		for c := range srv.conns {
			queued = len(c.requests)
		}
		srv.mu.Unlock()
		if queued >= n {
			return true
		}
	}
	return false
}

// TestRepliesInOrder checks that every client message is answered in the
// order it came, those refused at once included, while a subscribe before
// them is still being carried out; and that a refused message's error
// names its topic when it has one.
func TestRepliesInOrder(t *testing.T) {
	bus := NewMemoryBus(nil)
	defer bus.Close()
	srv := NewServer(Deps{Bus: bus})
	checking, release := make(chan struct{}, 1), make(chan struct{})
	ctx, ws := dialAccepting(t, srv, func(ctx context.Context, _ Topic) error {
		checking <- struct{}{}
		select {
		case <-release:
		case <-ctx.Done():
		}
		return nil
	})
	topic := FarmTopic(uuid.New()).String()
	sent := []string{
		`{"type":"subscribe","topic":"` + topic + `"}`,
		`not json`,
		`{"type":"shout","topic":"` + topic + `"}`,
		`{"type":"subscribe","topic":"farms/x/readings"}`,
		`{"type":1,"topic":"` + topic + `"}`,
	}
	want := []serverMessage{
		{Type: "subscribed", Topic: topic},
		{Type: "error", Error: furrow.EINVALID},
		{Type: "error", Topic: topic, Error: furrow.EINVALID},
		{Type: "error", Topic: "farms/x/readings", Error: furrow.EINVALID},
		{Type: "error", Topic: topic, Error: furrow.EINVALID},
	}
	for i, m := range sent {
		if err := ws.Write(ctx, websocket.MessageText, []byte(m)); err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			<-checking // the subscribe is being carried out
		}
	}
	// The subscribe is held until the reader has taken the rest, so that
	// an answer sent at once would overtake its answer.
	queuedWithin(srv, len(sent)-1, 2*time.Second)
	close(release)
	for i, w := range want {
		m, b := readServerMessage(t, ctx, ws)
		if m.Type != w.Type || m.Topic != w.Topic || m.Error != w.Error || (m.Type == "error" && m.Reason == "") {
			t.Fatalf("answer %d to %s: got %s, want %+v with a reason", i+1, sent[i], b, w)
		}
	}
}

// dialAccepting serves srv, accepting every connection with authorize as
// its farm check, and dials it; the server, srv and the connection end
// with t, and the context returned bounds the test's calls to 30 s.
func dialAccepting(t *testing.T, srv *Server, authorize func(context.Context, Topic) error) (context.Context, *websocket.Conn) {
	t.Helper()
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = srv.Accept(w, r, Client{User: uuid.New(), Authorize: authorize})
	}))
	t.Cleanup(hs.Close)
	t.Cleanup(func() { _ = srv.Shutdown(context.Background()) }) // before hs.Close: cleanups run last first
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	ws, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(hs.URL, "http"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ws.CloseNow() })
	return ctx, ws
}

// readServerMessage reads the next message from ws, decoded and as sent.
func readServerMessage(t *testing.T, ctx context.Context, ws *websocket.Conn) (serverMessage, []byte) {
	t.Helper()
	_, b, err := ws.Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var m serverMessage
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m, b
}
