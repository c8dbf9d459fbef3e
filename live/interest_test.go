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

// chanSink hands every message it receives to a channel.
type chanSink chan []byte

func (s chanSink) Send(_ uint64, msg []byte) { s <- msg }

// Lost does nothing: these tests do not lose Redis.
func (chanSink) Lost(live.Topic) {}

// spy returns a channel of the values of the readings sent to any topic
// channel under prefix, seen through a pattern subscription, which the
// buses' polls do not count as a watcher.
func spy(t *testing.T, c *redis.Client, prefix string) <-chan string {
	t.Helper()
	ps := c.PSubscribe(context.Background(), prefix+"farms/*")
	if _, err := ps.Receive(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ps.Close() })
	out := make(chan string, 1024)
	go func() {
		for m := range ps.Channel() {
			out <- m.Payload
		}
	}()
	return out
}

// quiet fails if anything arrives on ch within d.
func quiet(t *testing.T, ch <-chan string, d time.Duration, what string) {
	t.Helper()
	select {
	case m := <-ch:
		t.Fatalf("%s: sent %s", what, m)
	case <-time.After(d):
	}
}

func receive(t *testing.T, ch chanSink, want string) {
	t.Helper()
	select {
	case m := <-ch:
		if !strings.Contains(string(m), `"value":"`+want+`"`) {
			t.Fatalf("received %s, want the reading %q", m, want)
		}
	case <-time.After(5 * time.Second):
		t.Fatalf("reading %q not received within 5 s", want)
	}
}

func knowing(t *testing.T, buses ...*live.Bus) {
	t.Helper()
	waitFor(t, "the buses to learn the watched farms", func() bool {
		for _, b := range buses {
			if !live.KnowsWatchedFarms(b) {
				return false
			}
		}
		return true
	})
}

// TestRedisBusSendsOnlyWatchedFarms checks that a reading of a farm no
// socket watches never reaches Redis, that it is counted as published, and
// that once another process watches the farm its readings flow; after the
// watcher leaves, the polls prune the farm again.
func TestRedisBusSendsOnlyWatchedFarms(t *testing.T) {
	rc := testenv.Redis(t)
	prefix := testPrefix()
	pub := live.NewRedisBusPolling(rc, prefix, 100*time.Millisecond)
	t.Cleanup(func() { _ = pub.Close() })
	sub := redisBus(t, testenv.Redis(t), prefix)
	sent := spy(t, rc, prefix)
	knowing(t, pub, sub)

	farm := uuid.New()
	pub.Publish(reading(farm, uuid.New(), 7, "unwatched"))
	quiet(t, sent, 300*time.Millisecond, "a reading nobody watches")
	if n := pub.Published(); n != 1 {
		t.Fatalf("published %d, want the unwatched reading counted", n)
	}

	sink := make(chanSink, 16)
	if err := sub.Subscribe(context.Background(), live.FarmTopic(farm), sink); err != nil {
		t.Fatal(err)
	}
	pub.Publish(reading(farm, uuid.New(), 7, "watched"))
	receive(t, sink, "watched")

	sub.Unsubscribe(live.FarmTopic(farm), sink)
	waitFor(t, "the farm pruned", func() bool {
		for len(sent) > 0 {
			<-sent
		}
		pub.Publish(reading(farm, uuid.New(), 7, "after"))
		select {
		case <-sent:
			return false
		case <-time.After(300 * time.Millisecond):
			return true
		}
	})
}

// TestRedisBusNewWatcherMissesNothing checks that a reading published on
// another process right after a subscription is ready reaches it, for
// many farms in turn: readiness waits until every process knows the farm.
func TestRedisBusNewWatcherMissesNothing(t *testing.T) {
	prefix := testPrefix()
	pubs := []*live.Bus{redisBus(t, testenv.Redis(t), prefix), redisBus(t, testenv.Redis(t), prefix)}
	sub := redisBus(t, testenv.Redis(t), prefix)
	knowing(t, append(pubs, sub)...)
	for i := range 40 {
		farm := uuid.New()
		sink := make(chanSink, 4)
		if err := sub.Subscribe(context.Background(), live.MetricTopic(farm, farm, 3), sink); err != nil {
			t.Fatal(err)
		}
		r := reading(farm, farm, 3, "first")
		pubs[i%2].Publish(r)
		receive(t, sink, "first")
	}
}

// TestRedisBusRelearnsAfterReconnect kills a publishing process's
// subscriber connection, which may have missed announcements: it learns
// the watched farms again, and a socket watching on another process still
// gets its readings.
func TestRedisBusRelearnsAfterReconnect(t *testing.T) {
	pubClient, name := namedClient(t)
	admin := testenv.Redis(t)
	prefix := testPrefix()
	pub := redisBus(t, pubClient, prefix)
	sub := redisBus(t, admin, prefix)
	knowing(t, pub, sub)
	farm := uuid.New()
	sink := make(chanSink, 16)
	if err := sub.Subscribe(context.Background(), live.FarmTopic(farm), sink); err != nil {
		t.Fatal(err)
	}
	pub.Publish(reading(farm, uuid.New(), 1, "before"))
	receive(t, sink, "before")

	if n := live.ControlSubscriptions(pub); n != 1 {
		t.Fatalf("control subscription confirmed %d times before the reconnect, want 1", n)
	}
	killSubscriber(t, admin, name, func() bool { return true })
	waitFor(t, "the reconnect noticed and the watched farms read again", func() bool {
		return live.ControlSubscriptions(pub) == 2 && live.KnowsWatchedFarms(pub)
	})
	pub.Publish(reading(farm, uuid.New(), 1, "after"))
	receive(t, sink, "after")
}
