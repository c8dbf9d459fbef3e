package live_test

import (
	"context"
	"encoding/json"
	"net/http"
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
