package live_test

import (
	"strings"
	"testing"
	"time"

	"github.com/furrowhq/furrow"
	"github.com/furrowhq/furrow/internal/testclock"
	"github.com/furrowhq/furrow/live"
	"github.com/google/uuid"
)

// A connection may send live.SubscribeBurst subscribes at once, then one
// every live.SubscribeEvery: a subscribe beyond that is answered
// rate_limited for its topic, and unsubscribes are not counted.
func TestSubscribesAreRateLimited(t *testing.T) {
	clock := testclock.New(time.Unix(1700000000, 0))
	w := newWorld(t, memoryBus(t), live.Deps{Clock: clock})
	c := w.dial(t, w.aliceToken)
	device := uuid.New()
	topic := func(i int) string { return live.MetricTopic(w.farmA, device, int32(i+1)).String() }
	// Subscribe and unsubscribe pairs, each of another topic: what a
	// client turning the bus into an amplifier would send.
	for i := range live.SubscribeBurst {
		send(t, c, map[string]string{"type": "subscribe", "topic": topic(i)})
		expectControl(t, c, "subscribed", topic(i))
		send(t, c, map[string]string{"type": "unsubscribe", "topic": topic(i)})
		expectControl(t, c, "unsubscribed", topic(i))
	}
	over := topic(live.SubscribeBurst)
	send(t, c, map[string]string{"type": "subscribe", "topic": over})
	if m := expectControl(t, c, "error", over); m.Error != furrow.ERATELIMITED || m.Reason == "" {
		t.Fatalf("subscribe past the burst: got %+v, want %s with a reason", m, furrow.ERATELIMITED)
	}
	send(t, c, map[string]string{"type": "unsubscribe", "topic": topic(0)})
	expectControl(t, c, "unsubscribed", topic(0))
	clock.Advance(live.SubscribeEvery)
	send(t, c, map[string]string{"type": "subscribe", "topic": over})
	expectControl(t, c, "subscribed", over)
	send(t, c, map[string]string{"type": "subscribe", "topic": topic(0)})
	if m := expectControl(t, c, "error", topic(0)); m.Error != furrow.ERATELIMITED {
		t.Fatalf("a second subscribe within %v: got %+v, want %s", live.SubscribeEvery, m, furrow.ERATELIMITED)
	}
}

// A connection remembers a farm's membership check, allowed or refused,
// for live.FarmCheckTTL: subscribing again to the farm's topics, or to
// more of them, does not check again within it.
func TestMembershipCheckRemembered(t *testing.T) {
	clock := testclock.New(time.Unix(1700000000, 0))
	w := newWorld(t, memoryBus(t), live.Deps{Clock: clock})
	c := w.dial(t, w.aliceToken, live.FarmTopic(w.farmA))
	checks := func(want int64) {
		t.Helper()
		if n := w.checks.Load(); n != want {
			t.Fatalf("the farms were checked %d times, want %d", n, want)
		}
	}
	checks(1)
	device := uuid.New()
	for _, tp := range []live.Topic{live.EventsTopic(w.farmA), live.MetricTopic(w.farmA, device, 1), live.EventsTopic(w.farmA)} {
		send(t, c, map[string]string{"type": "unsubscribe", "topic": tp.String()})
		expectControl(t, c, "unsubscribed", tp.String())
		send(t, c, map[string]string{"type": "subscribe", "topic": tp.String()})
		expectControl(t, c, "subscribed", tp.String())
	}
	checks(1)
	// A refusal is not remembered: each is checked, and its reason names
	// its own topic.
	for i, tp := range []live.Topic{live.FarmTopic(w.farmB), live.EventsTopic(w.farmB)} {
		send(t, c, map[string]string{"type": "subscribe", "topic": tp.String()})
		m := expectControl(t, c, "error", tp.String())
		if m.Error != furrow.EFORBIDDEN || !strings.Contains(m.Reason, tp.String()) {
			t.Fatalf("got %+v, want %s naming %s", m, furrow.EFORBIDDEN, tp)
		}
		checks(int64(2 + i))
	}
	clock.Advance(live.FarmCheckTTL)
	another := live.MetricTopic(w.farmA, device, 2).String()
	send(t, c, map[string]string{"type": "subscribe", "topic": another})
	expectControl(t, c, "subscribed", another)
	checks(4)
}
