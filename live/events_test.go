package live_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/google/uuid"

	"github.com/furrowhq/furrow"
	"github.com/furrowhq/furrow/live"
)

// readEvent reads the next message as an event envelope.
func readEvent(t *testing.T, c *websocket.Conn) furrow.Event {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, b, err := c.Read(ctx)
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	var e furrow.Event
	if err := json.Unmarshal(b, &e); err != nil || e.ID == "" {
		t.Fatalf("message %s is not an event envelope (%v)", b, err)
	}
	return e
}

// TestEventsTopic checks that a farm's events reach the sockets of its
// events topic as envelopes, and only those: not its readings topic, not
// another farm's events topic.
func TestEventsTopic(t *testing.T) {
	for name, buses := range transports() {
		t.Run(name, func(t *testing.T) {
			pub, sub := buses(t)
			w := newWorld(t, sub, live.Deps{})
			events := w.dial(t, w.aliceToken, live.EventsTopic(w.farmA))
			readings := w.dial(t, w.aliceToken, live.FarmTopic(w.farmA))
			other := w.dial(t, w.bobToken, live.EventsTopic(w.farmB))

			hook := uuid.New()
			disabled := furrow.WebhookTransition{WebhookID: hook, Seq: 1, AtMs: 1700000000000, Failures: 5}.Event(w.farmA)
			pub.PublishEvent(disabled)
			pub.PublishEvent(furrow.WebhookTransition{WebhookID: hook, Seq: 1, Enabled: true, By: furrow.EnabledByAPI}.Event(w.farmB))
			pub.Publish(reading(w.farmA, uuid.New(), 220, "end"))

			if got := readEvent(t, events); got.ID != disabled.ID || got.Type != furrow.EventWebhookDisabled ||
				got.FarmID != w.farmA || got.OccurredAtMs != disabled.OccurredAtMs || string(got.Data) != string(disabled.Data) {
				t.Fatalf("events topic got %+v, want %+v", got, disabled)
			}
			if got := readEvent(t, other); got.FarmID != w.farmB || got.Type != furrow.EventWebhookEnabled {
				t.Fatalf("farm B's events topic got %+v", got)
			}
			if got := readUntil(t, readings, "end"); len(got) != 0 {
				t.Fatalf("the readings topic got %+v before the reading", got)
			}
		})
	}
}
