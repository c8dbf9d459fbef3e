package live_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/furrowhq/furrow/internal/testenv"
	"github.com/furrowhq/furrow/live"
	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"
)

// transports returns, per transport, a bus to publish on and a bus the
// sockets subscribe through: one bus in process, two processes' buses
// sharing one Redis.
func transports() map[string]func(*testing.T) (pub, sub *live.Bus) {
	return map[string]func(*testing.T) (*live.Bus, *live.Bus){
		"memory": func(t *testing.T) (*live.Bus, *live.Bus) {
			b := memoryBus(t)
			return b, b
		},
		"redis": func(t *testing.T) (*live.Bus, *live.Bus) {
			prefix := testPrefix()
			return redisBus(t, testenv.Redis(t), prefix), redisBus(t, testenv.Redis(t), prefix)
		},
	}
}

func testPrefix() string { return "furrow-test:live:" + uuid.NewString() + ":" }

func redisBus(t *testing.T, c *redis.Client, prefix string) *live.Bus {
	b := live.NewRedisBus(c, prefix, nil)
	t.Cleanup(func() { _ = b.Close() })
	return b
}

// numSub returns how many connections subscribe to a Redis channel.
func numSub(t *testing.T, c *redis.Client, channel string) int64 {
	t.Helper()
	n, err := c.PubSubNumSub(context.Background(), channel).Result()
	if err != nil {
		t.Fatal(err)
	}
	return n[channel]
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestRedisSubscribesExactlyWhatSocketsWant checks the process keeps one
// Redis subscription per wanted topic and drops it with the last socket.
func TestRedisSubscribesExactlyWhatSocketsWant(t *testing.T) {
	rc := testenv.Redis(t)
	prefix := testPrefix()
	bus := redisBus(t, rc, prefix)
	w := newWorld(t, bus, live.Deps{})
	topic := live.FarmTopic(w.farmA)
	channel := prefix + topic.String()
	if n := numSub(t, rc, channel); n != 0 {
		t.Fatalf("subscribed before any socket: %d", n)
	}
	c1 := w.dial(t, w.aliceToken, topic)
	c2 := w.dial(t, w.aliceToken, topic)
	if n := numSub(t, rc, channel); n != 1 {
		t.Fatalf("two sockets, one process: %d subscriptions, want 1", n)
	}
	other := prefix + live.FarmTopic(w.farmB).String()
	if n := numSub(t, rc, other); n != 0 {
		t.Fatalf("subscribed to an unwanted topic: %d", n)
	}
	_ = c1.CloseNow()
	time.Sleep(100 * time.Millisecond)
	if n := numSub(t, rc, channel); n != 1 {
		t.Fatalf("one socket left: %d subscriptions, want 1", n)
	}
	_ = c2.CloseNow()
	waitFor(t, "unsubscribe after the last socket", func() bool { return numSub(t, rc, channel) == 0 })
}

// TestRedisResubscribesAfterDisconnect kills the subscriber connection on
// the real Redis, as a Redis restart would, and checks that the client is
// told of the gap (the bus's error, then subscribed), even when the
// reconnection is at once, and that messages flow again.
func TestRedisResubscribesAfterDisconnect(t *testing.T) {
	subClient, name := namedClient(t)
	admin := testenv.Redis(t)
	prefix := testPrefix()
	pub := redisBus(t, admin, prefix)
	sub := redisBus(t, subClient, prefix)
	w := newWorld(t, sub, live.Deps{})
	topic := live.FarmTopic(w.farmA)
	c := w.dial(t, w.aliceToken, topic)

	pub.Publish(reading(w.farmA, uuid.New(), 220, "before"))
	if m := read(t, c); m.Value != "before" {
		t.Fatalf("got %+v", m)
	}

	killSubscriber(t, admin, name, func() bool { return numSub(t, admin, prefix+topic.String()) == 1 })

	if m := read(t, c); m.Type != "error" || m.Topic != topic.String() || m.Error != "internal_error" {
		t.Fatalf("after the kill got %+v, want the bus's error", m)
	}
	pub.Publish(reading(w.farmA, uuid.New(), 220, "after"))
	// The reading may come before subscribed: the subscription carries
	// messages as soon as Redis confirms it, before its announcement.
	var confirmed, after bool
	for !confirmed || !after {
		m := read(t, c)
		confirmed = confirmed || m.Type == "subscribed" && m.Topic == topic.String()
		after = after || m.Value == "after"
		if m.Type != "subscribed" && m.Value != "after" {
			t.Fatalf("after reconnect got %+v", m)
		}
	}
}

// namedClient returns a client of the test Redis whose connections carry
// a name no other test uses, and that name.
func namedClient(t *testing.T) (*redis.Client, string) {
	t.Helper()
	opt, err := redis.ParseURL(testenv.RedisURL(t))
	if err != nil {
		t.Fatal(err)
	}
	opt.ClientName = "furrow-live-" + strings.ReplaceAll(uuid.NewString(), "-", "")
	c := redis.NewClient(opt)
	t.Cleanup(func() { _ = c.Close() })
	return c, opt.ClientName
}

// killSubscriber kills the one subscriber connection named name, as a
// Redis restart would, and waits until another replaces it and also is
// true.
func killSubscriber(t *testing.T, admin *redis.Client, name string, also func() bool) {
	t.Helper()
	old := pubsubClientIDs(t, admin, name)
	if len(old) != 1 {
		t.Fatalf("pubsub connections named %s: %v, want one", name, old)
	}
	if err := admin.Do(context.Background(), "CLIENT", "KILL", "ID", old[0]).Err(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "a new subscriber connection", func() bool {
		ids := pubsubClientIDs(t, admin, name)
		return len(ids) == 1 && ids[0] != old[0] && also()
	})
}

// pubsubClientIDs lists the ids of the connections named name that
// subscribe to something.
func pubsubClientIDs(t *testing.T, c *redis.Client, name string) []string {
	t.Helper()
	list, err := c.ClientList(context.Background()).Result()
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, line := range strings.Split(list, "\n") {
		f := map[string]string{}
		for _, kv := range strings.Fields(line) {
			k, v, _ := strings.Cut(kv, "=")
			f[k] = v
		}
		if f["name"] == name && f["sub"] != "" && f["sub"] != "0" {
			ids = append(ids, f["id"])
		}
	}
	return ids
}
