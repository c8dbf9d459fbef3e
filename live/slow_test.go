package live_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/google/uuid"

	"github.com/furrowhq/furrow/internal/testenv"
	"github.com/furrowhq/furrow/live"
)

// TestSlowClientIsDropped checks that a client that never reads is
// disconnected without holding up a fast client or the publisher.
func TestSlowClientIsDropped(t *testing.T) {
	bus := memoryBus(t)
	w := newWorld(t, bus, live.Deps{SendBuffer: 8, WriteTimeout: 2 * time.Second})
	topic := live.FarmTopic(w.farmA)
	fast := w.dial(t, w.aliceToken, topic)
	slow := dialSlow(t, w, topic)

	value := strings.Repeat("9", 1000)
	dev := uuid.New()
	sent := 0
	for w.srv.Stats().SlowClosed == 0 {
		if sent == 200000 {
			t.Fatal("slow client never disconnected")
		}
		// Distinct values: identical messages would be one reading.
		v := fmt.Sprintf("%d-%s", sent, value)
		bus.Publish(reading(w.farmA, dev, 220, v))
		sent++
		if m := read(t, fast); m.Value != v {
			t.Fatalf("fast client got %+v", m)
		}
	}
	for i := range 100 {
		v := fmt.Sprintf("more-%d", i)
		bus.Publish(reading(w.farmA, dev, 220, v))
		if m := read(t, fast); m.Value != v {
			t.Fatalf("fast client after drop got %+v", m)
		}
	}
	if d := bus.Dropped(); d != 0 {
		t.Fatalf("publisher dropped %d readings", d)
	}
	if s := w.srv.Stats(); s.SlowClosed != 1 {
		t.Fatalf("stats %+v, want one slow connection closed", s)
	}
	waitFor(t, "the slow connection to end", func() bool { return w.srv.Stats().Open == 1 })

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for {
		if _, _, err := slow.Read(ctx); err != nil {
			if s := websocket.CloseStatus(err); s != -1 && s != websocket.StatusPolicyViolation {
				t.Fatalf("slow client closed with %v, want 1008", s)
			}
			break
		}
	}
}

// TestMissedPongCloses checks the keepalive: a client that never reads
// never answers pings and is disconnected.
func TestMissedPongCloses(t *testing.T) {
	w := newWorld(t, memoryBus(t), live.Deps{PingInterval: 50 * time.Millisecond, PongTimeout: 100 * time.Millisecond})
	_ = w.dial(t, w.aliceToken, live.FarmTopic(w.farmA)) // never read again
	waitFor(t, "the silent client to be dropped", func() bool {
		s := w.srv.Stats()
		return s.SlowClosed == 1 && s.Open == 0
	})
	reader := w.dial(t, w.aliceToken, live.FarmTopic(w.farmA))
	// A reading client answers pings and stays.
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	if _, _, err := reader.Read(ctx); websocket.CloseStatus(err) != -1 || ctx.Err() == nil {
		t.Fatalf("reading client: %v", err)
	}
}

// TestSlowClientThatReadsGets1008 checks that a client cut for letting its
// send buffer fill, and still reading, gets the 1008 close frame with the
// reason, ahead of the messages still queued for it.
func TestSlowClientThatReadsGets1008(t *testing.T) {
	bus := memoryBus(t)
	w := newWorld(t, bus, live.Deps{SendBuffer: 8, WriteTimeout: time.Minute})
	topic := live.FarmTopic(w.farmA)
	fast := w.dial(t, w.aliceToken, topic)
	slow := dialSlow(t, w, topic)
	// Far more than the socket buffers and the send buffer hold.
	value := strings.Repeat("9", 1000)
	dev := uuid.New()
	for i := range 20000 {
		v := fmt.Sprintf("%d-%s", i, value)
		bus.Publish(reading(w.farmA, dev, 220, v))
		if m := read(t, fast); m.Value != v {
			t.Fatalf("fast client got %+v", m)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for {
		_, _, err := slow.Read(ctx)
		if err == nil {
			continue
		}
		var ce websocket.CloseError
		if !errors.As(err, &ce) || ce.Code != websocket.StatusPolicyViolation || ce.Reason != "send buffer full: client too slow" {
			t.Fatalf("slow client ended with %v, want the 1008 close frame with its reason", err)
		}
		break
	}
	if s := w.srv.Stats(); s.SlowClosed != 1 {
		t.Fatalf("stats %+v, want one slow connection closed", s)
	}
}

// dialSlow subscribes alice to topic on a connection whose tiny receive
// buffer makes its TCP window fill soon, as a slow client's does.
func dialSlow(t *testing.T, w *world, topic live.Topic) *websocket.Conn {
	t.Helper()
	// The buffer is set before connecting: shrunk after, below the window
	// already offered, the kernel drops data the sender then retransmits
	// with a growing backoff, and the client stalls for many seconds.
	dialer := &net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		var err error
		if cerr := c.Control(func(fd uintptr) {
			err = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096)
		}); cerr != nil {
			return cerr
		}
		return err
	}}
	tiny := &http.Client{Transport: &http.Transport{DialContext: dialer.DialContext}}
	return w.dialWith(t, &websocket.DialOptions{
		HTTPClient: tiny,
		HTTPHeader: http.Header{"Authorization": {"Bearer " + w.aliceToken}},
	}, topic)
}

// TestDataFlowsWhileAPongIsAwaited checks that the server goes on writing
// while it waits for a pong: a reading client far away, whose pongs take
// long to come back, would otherwise let its send buffer fill on a busy
// topic and be disconnected as too slow.
func TestDataFlowsWhileAPongIsAwaited(t *testing.T) {
	bus := memoryBus(t)
	w := newWorld(t, bus, live.Deps{PingInterval: 50 * time.Millisecond, PongTimeout: time.Minute})
	topic := live.FarmTopic(w.farmA)
	p := testenv.NewProxy(t, strings.TrimPrefix(w.http.URL, "http://"))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, _, err := websocket.Dial(ctx, "ws://"+p.Addr+"/api/live?topic="+topic.String(),
		&websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + w.aliceToken}}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseNow()
	expectControl(t, c, "subscribed", topic.String())
	p.HoldClient()
	sent := p.FromTarget()
	// Nothing is published yet: what the server sends now is a ping,
	// whose pong the proxy holds back.
	waitFor(t, "a ping", func() bool { return p.FromTarget() > sent })
	bus.Publish(reading(w.farmA, uuid.New(), 220, "while a pong is awaited"))
	if m := read(t, c); m.Value != "while a pong is awaited" {
		t.Fatalf("got %+v", m)
	}
	p.Restore()
	bus.Publish(reading(w.farmA, uuid.New(), 220, "after the pong"))
	if m := read(t, c); m.Value != "after the pong" {
		t.Fatalf("got %+v", m)
	}
	if s := w.srv.Stats(); s.SlowClosed != 0 {
		t.Fatalf("stats %+v: a client whose pong came late was closed", s)
	}
}
