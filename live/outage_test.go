package live_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"

	"github.com/furrowhq/furrow/internal/testenv"
	"github.com/furrowhq/furrow/live"
)

// proxiedRedis returns a client of the test Redis through a proxy the test
// can refuse or silence, bounded as Furrow's own client is.
func proxiedRedis(t *testing.T) (*redis.Client, *testenv.Proxy) {
	t.Helper()
	opt, p := testenv.ProxiedRedis(t)
	opt.DialTimeout = time.Second
	opt.ReadTimeout = time.Second
	opt.WriteTimeout = time.Second
	c := redis.NewClient(opt)
	t.Cleanup(func() { c.Close() })
	return c, p
}

// readWithin reads the next message, failing t if none comes within limit.
func readWithin(t *testing.T, c *websocket.Conn, limit time.Duration) message {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	_, b, err := c.Read(ctx)
	if err != nil {
		t.Fatalf("no message within %v: %v", limit, err)
	}
	var m message
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("message %s: %v", b, err)
	}
	return m
}

// When Redis is down as a client subscribes, the client is told with an
// error message for the topic, and once Redis is back the subscription is
// made and confirmed with subscribed, and readings flow.
func TestSubscribeDuringRedisOutage(t *testing.T) {
	for _, fault := range []string{"refused", "blackholed"} {
		t.Run(fault, func(t *testing.T) {
			c, p := proxiedRedis(t)
			if fault == "refused" {
				p.Cut()
			} else {
				p.Blackhole()
			}
			prefix := testPrefix()
			bus := redisBus(t, c, prefix)
			w := newWorld(t, bus, live.Deps{})
			topic := live.FarmTopic(w.farmA)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			ws, _, err := websocket.Dial(ctx, w.url(topic), &websocket.DialOptions{
				HTTPHeader: http.Header{"Authorization": {"Bearer " + w.aliceToken}}})
			if err != nil {
				t.Fatal(err)
			}
			defer ws.CloseNow()
			start := time.Now()
			m := readWithin(t, ws, 20*time.Second)
			t.Logf("Redis %s: %q answered after %v", fault, m.Type, time.Since(start))
			if m.Type != "error" || m.Topic != topic.String() || m.Error != "internal_error" || m.Reason == "" {
				t.Fatalf("got %+v, want an error for %s", m, topic)
			}
			// Asking again while the bus is still down is not answered as
			// live: the subscription stands, unconfirmed.
			send(t, ws, map[string]string{"type": "subscribe", "topic": topic.String()})
			if m := readWithin(t, ws, 5*time.Second); m.Type != "error" || m.Topic != topic.String() || m.Error != "internal_error" {
				t.Fatalf("a repeated subscribe during the outage: %+v, want the bus's error", m)
			}
			p.Restore()
			m = readWithin(t, ws, 30*time.Second)
			if m.Type != "subscribed" || m.Topic != topic.String() {
				t.Fatalf("after Redis came back: %+v, want subscribed", m)
			}
			pub := redisBus(t, testenv.Redis(t), prefix)
			pub.Publish(reading(w.farmA, uuid.New(), 220, "back"))
			if m := readWithin(t, ws, 10*time.Second); m.Value != "back" {
				t.Fatalf("got %+v, want the reading", m)
			}
		})
	}
}

// Subscribes that wait on a Redis that does not answer do not stop the
// connection's reading: the pongs to the server's pings are still read,
// so the connection stands, answered with the bus's error for each topic.
func TestSubscribesDuringAnOutageKeepTheConnection(t *testing.T) {
	c, p := proxiedRedis(t)
	p.Blackhole()
	bus := redisBus(t, c, testPrefix())
	w := newWorld(t, bus, live.Deps{PingInterval: 300 * time.Millisecond, PongTimeout: 700 * time.Millisecond})
	topics := []live.Topic{live.FarmTopic(w.farmA), live.EventsTopic(w.farmA)}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ws, _, err := websocket.Dial(ctx, w.url(topics...), &websocket.DialOptions{
		HTTPHeader: http.Header{"Authorization": {"Bearer " + w.aliceToken}}})
	if err != nil {
		t.Fatal(err)
	}
	defer ws.CloseNow()
	// The client reads all along, as it must to answer pings.
	msgs, failed := make(chan []byte, 8), make(chan error, 1)
	go func() {
		for {
			_, b, err := ws.Read(ctx)
			if err != nil {
				failed <- err
				return
			}
			msgs <- b
		}
	}()
	errorsFor := map[string]bool{}
	for len(errorsFor) < len(topics) {
		select {
		case b := <-msgs:
			var m struct{ Type, Topic, Error string }
			if err := json.Unmarshal(b, &m); err != nil || m.Type != "error" || m.Error != "internal_error" {
				t.Fatalf("got %s, want the bus's error", b)
			}
			errorsFor[m.Topic] = true
		case err := <-failed:
			t.Fatalf("the connection ended after %d of %d topics' answers: %v", len(errorsFor), len(topics), err)
		case <-ctx.Done():
			t.Fatal("no answer for every topic within 30 s")
		}
	}
	select {
	case err := <-failed:
		t.Fatalf("the connection ended after the answers: %v", err)
	case <-time.After(time.Second):
	}
}

// A client that floods subscribes while the bus cannot confirm them is
// closed with 1008 (too many waiting), and that is not counted as a slow
// client: furrow_live_slow_disconnects_total counts clients too slow to
// read.
func TestSubscribeFloodIsNotASlowClient(t *testing.T) {
	c, p := proxiedRedis(t)
	p.Blackhole()
	bus := redisBus(t, c, testPrefix())
	w := newWorld(t, bus, live.Deps{})
	topic := live.FarmTopic(w.farmA)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	ws, _, err := websocket.Dial(ctx, w.url(), &websocket.DialOptions{
		HTTPHeader: http.Header{"Authorization": {"Bearer " + w.aliceToken}}})
	if err != nil {
		t.Fatal(err)
	}
	defer ws.CloseNow()
	for range 300 {
		if err := ws.Write(ctx, websocket.MessageText, []byte(`{"type":"subscribe","topic":"`+topic.String()+`"}`)); err != nil {
			break // closed by the server already
		}
	}
	for {
		if _, _, err := ws.Read(ctx); err != nil {
			if websocket.CloseStatus(err) != websocket.StatusPolicyViolation {
				t.Fatalf("closed with %v, want 1008", err)
			}
			break
		}
	}
	waitFor(t, "the flooding connection to end", func() bool { return w.srv.Stats().Open == 0 })
	if s := w.srv.Stats(); s.SlowClosed != 0 {
		t.Fatalf("stats %+v: a subscribe flood counted as a slow client", s)
	}
}

// expectBusError reads the bus's error for topic, within limit.
func expectBusError(t *testing.T, c *websocket.Conn, topic live.Topic, limit time.Duration) message {
	t.Helper()
	m := readWithin(t, c, limit)
	if m.Type != "error" || m.Topic != topic.String() || m.Error != "internal_error" ||
		!strings.HasPrefix(m.Reason, "The live bus is unavailable; ") {
		t.Fatalf("got %+v, want the bus's error for %s", m, topic)
	}
	return m
}

// A client subscribed when the bus loses its Redis subscriber connection
// is told, with the bus's error for the topic, that it may miss messages,
// and with subscribed once the subscription is back: then it knows to
// fill the gap from the polling API.
func TestRedisOutageIsToldToSubscribers(t *testing.T) {
	c, p := proxiedRedis(t)
	prefix := testPrefix()
	sub := redisBus(t, c, prefix)
	pub := redisBus(t, testenv.Redis(t), prefix)
	w := newWorld(t, sub, live.Deps{})
	topic := live.FarmTopic(w.farmA)
	ws := w.dial(t, w.aliceToken, topic)
	dev := uuid.New()
	pub.Publish(reading(w.farmA, dev, 220, "before"))
	if m := read(t, ws); m.Value != "before" {
		t.Fatalf("got %+v", m)
	}
	p.Cut()
	m := expectBusError(t, ws, topic, 20*time.Second)
	if !strings.Contains(m.Reason, "missed") || !strings.Contains(m.Reason, "polling API") {
		t.Fatalf("reason %q: does not say messages may be missed, to be filled from the polling API", m.Reason)
	}
	p.Restore()
	expectControl(t, ws, "subscribed", topic.String())
	pub.Publish(reading(w.farmA, dev, 220, "after"))
	if m := readWithin(t, ws, 10*time.Second); m.Value != "after" {
		t.Fatalf("got %+v, want the reading", m)
	}
}

// During an outage a subscribe of a topic that another socket of the
// process watched before it is answered as any other: the bus's error,
// then subscribed once Redis is back, never subscribed before.
func TestOutageSubscribeOfAWatchedTopic(t *testing.T) {
	c, p := proxiedRedis(t)
	bus := redisBus(t, c, testPrefix())
	w := newWorld(t, bus, live.Deps{})
	topic := live.FarmTopic(w.farmA)
	first := w.dial(t, w.aliceToken, topic)
	p.Cut()
	expectBusError(t, first, topic, 20*time.Second) // the bus knows of the outage
	second := w.dial(t, w.aliceToken)
	send(t, second, map[string]string{"type": "subscribe", "topic": topic.String()})
	expectBusError(t, second, topic, 20*time.Second)
	p.Restore()
	expectControl(t, first, "subscribed", topic.String())
	expectControl(t, second, "subscribed", topic.String())
}
