package live_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/furrowhq/furrow"
	"github.com/furrowhq/furrow/live"
	"github.com/google/uuid"
)

func memoryBus(t *testing.T) *live.Bus {
	b := live.NewMemoryBus(nil)
	t.Cleanup(func() { _ = b.Close() })
	return b
}

// Accept refuses a request that is not a WebSocket upgrade with an error
// for the API to answer, having written nothing.
func TestAcceptNeedsAnUpgrade(t *testing.T) {
	srv := live.NewServer(live.Deps{Bus: memoryBus(t)})
	rec := httptest.NewRecorder()
	err := srv.Accept(rec, httptest.NewRequest(http.MethodGet, "/api/live", nil), live.Client{})
	if furrow.ErrorCode(err) != furrow.EINVALID || rec.Code != http.StatusOK || rec.Body.Len() != 0 {
		t.Fatalf("Accept = %v, wrote %d %q", err, rec.Code, rec.Body)
	}
}

func TestParseTopicsBounded(t *testing.T) {
	raw := make([]string, live.MaxTopics+1)
	for i := range raw {
		raw[i] = live.FarmTopic(uuid.New()).String()
	}
	if _, err := live.ParseTopics(raw[:live.MaxTopics]); err != nil {
		t.Fatalf("%d topics: %v", live.MaxTopics, err)
	}
	if _, err := live.ParseTopics(raw); furrow.ErrorCode(err) != furrow.EINVALID {
		t.Fatalf("%d topics: %v, want EINVALID", len(raw), err)
	}
	if _, err := live.ParseTopics([]string{"farms/*/readings"}); furrow.ErrorCode(err) != furrow.EINVALID {
		t.Fatalf("wildcard: %v, want EINVALID", err)
	}
}

// TestDataMessageShape checks a data message is exactly the Reading JSON
// plus farm_id.
func TestDataMessageShape(t *testing.T) {
	bus := memoryBus(t)
	w := newWorld(t, bus, live.Deps{})
	c := w.dial(t, w.aliceToken, live.FarmTopic(w.farmA))
	bus.Publish(reading(w.farmA, uuid.New(), 220, "21.50"))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, b, err := c.Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	var keys []string
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	if fmt.Sprint(keys) != "[device_id farm_id metric_id timestamp value]" || m["value"] != "21.50" || m["timestamp"] != "1700000000000" {
		t.Fatalf("data message %s", b)
	}
}

// TestExactTopics checks that each socket gets exactly the readings of its
// topic: no cross-talk between farms, devices or metrics, no prefix match.
func TestExactTopics(t *testing.T) {
	for name, buses := range transports() {
		t.Run(name, func(t *testing.T) {
			pub, sub := buses(t)
			w := newWorld(t, sub, live.Deps{})
			dev1, dev2, dev3 := uuid.New(), uuid.New(), uuid.New()
			farmAll := w.dial(t, w.aliceToken, live.FarmTopic(w.farmA))
			m220 := w.dial(t, w.aliceToken, live.MetricTopic(w.farmA, dev1, 220))
			m22 := w.dial(t, w.aliceToken, live.MetricTopic(w.farmA, dev1, 22))
			farmB := w.dial(t, w.bobToken, live.FarmTopic(w.farmB))

			pub.Publish(reading(w.farmA, dev1, 220, "a1-220"))
			pub.Publish(reading(w.farmA, dev2, 220, "a2-220"))
			pub.Publish(reading(w.farmB, dev3, 220, "b3-220"))
			pub.Publish(reading(w.farmA, dev1, 22, "a1-22"))
			pub.Publish(reading(w.farmA, dev1, 2, "a1-2"))
			pub.Publish(reading(w.farmA, dev1, 220, "end-220"))
			pub.Publish(reading(w.farmA, dev1, 22, "end-22"))
			pub.Publish(reading(w.farmB, dev3, 220, "end-b"))

			check := func(c *websocket.Conn, end, topic string, want ...string) {
				t.Helper()
				var got []string
				for _, m := range readUntil(t, c, end) {
					if m.Type != "" || m.Topic != "" {
						t.Errorf("%s: not a data message: %+v", topic, m)
					}
					if !strings.HasPrefix(m.Value, "end") {
						got = append(got, m.Value)
					}
				}
				if fmt.Sprint(got) != fmt.Sprint(want) {
					t.Errorf("%s: got %v, want %v", topic, got, want)
				}
			}
			check(farmAll, "end-22", live.FarmTopic(w.farmA).String(), "a1-220", "a2-220", "a1-22", "a1-2")
			check(m220, "end-220", live.MetricTopic(w.farmA, dev1, 220).String(), "a1-220")
			check(m22, "end-22", live.MetricTopic(w.farmA, dev1, 22).String(), "a1-22")
			check(farmB, "end-b", live.FarmTopic(w.farmB).String(), "b3-220")
		})
	}
}

func TestSubscribeMessages(t *testing.T) {
	bus := memoryBus(t)
	w := newWorld(t, bus, live.Deps{})
	dev := uuid.New()
	c := w.dial(t, w.aliceToken)
	metric := live.MetricTopic(w.farmA, dev, 220)
	farm := live.FarmTopic(w.farmA)

	send(t, c, map[string]string{"type": "subscribe", "topic": metric.String()})
	expectControl(t, c, "subscribed", metric.String())
	bus.Publish(reading(w.farmA, dev, 220, "1"))
	if m := read(t, c); m.Value != "1" {
		t.Fatalf("got %+v", m)
	}

	send(t, c, map[string]string{"type": "subscribe", "topic": farm.String()})
	expectControl(t, c, "subscribed", farm.String())
	// One reading matching both subscribed topics arrives once: were it
	// sent twice, the read after the unsubscribe below would see "2".
	bus.Publish(reading(w.farmA, dev, 220, "2"))
	if m := read(t, c); m.Value != "2" {
		t.Fatalf("got %+v", m)
	}

	send(t, c, map[string]string{"type": "unsubscribe", "topic": metric.String()})
	expectControl(t, c, "unsubscribed", metric.String())
	bus.Publish(reading(w.farmA, dev, 220, "3"))
	if m := read(t, c); m.Value != "3" {
		t.Fatalf("after unsubscribe got %+v", m)
	}
	bus.Publish(reading(w.farmA, uuid.New(), 220, "other device"))
	if m := read(t, c); m.Value != "other device" {
		t.Fatalf("farm topic still subscribed: got %+v", m)
	}

	for _, tc := range []struct {
		msg  string
		code string
	}{
		{`{"type":"subscribe","topic":"farms/` + w.farmB.String() + `/readings"}`, furrow.EFORBIDDEN},
		{`{"type":"subscribe","topic":"farms/x/readings"}`, furrow.EINVALID},
		{`{"type":"shout","topic":"` + farm.String() + `"}`, furrow.EINVALID},
		{`not json`, furrow.EINVALID},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err := c.Write(ctx, websocket.MessageText, []byte(tc.msg))
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		if m := read(t, c); m.Type != "error" || m.Error != tc.code || m.Reason == "" {
			t.Fatalf("%s: got %+v, want error %s", tc.msg, m, tc.code)
		}
	}
	// Errors leave the connection and its subscriptions working.
	bus.Publish(reading(w.farmA, dev, 220, "4"))
	if m := read(t, c); m.Value != "4" {
		t.Fatalf("after errors got %+v", m)
	}
}

// TestDeviceOrder checks that each device's readings arrive in the order
// they were published.
func TestDeviceOrder(t *testing.T) {
	for name, buses := range transports() {
		t.Run(name, func(t *testing.T) {
			pub, sub := buses(t)
			w := newWorld(t, sub, live.Deps{SendBuffer: 4096})
			c := w.dial(t, w.aliceToken, live.FarmTopic(w.farmA))
			devs := []uuid.UUID{uuid.New(), uuid.New(), uuid.New()}
			const n = 600
			for i := range n {
				pub.Publish(reading(w.farmA, devs[i%len(devs)], 220, fmt.Sprint(i)))
			}
			pub.Publish(reading(w.farmA, devs[0], 220, "end"))
			got := readUntil(t, c, "end")
			if len(got) != n {
				t.Fatalf("got %d readings, want %d", len(got), n)
			}
			last := map[string]int{}
			for _, m := range got {
				var v int
				fmt.Sscan(m.Value, &v)
				if prev, ok := last[m.DeviceID]; ok && v <= prev {
					t.Fatalf("device %s: %d after %d", m.DeviceID, v, prev)
				}
				last[m.DeviceID] = v
			}
			if pub.Dropped() != 0 {
				t.Fatalf("dropped %d", pub.Dropped())
			}
		})
	}
}

func TestShutdownClosesConnections(t *testing.T) {
	w := newWorld(t, memoryBus(t), live.Deps{})
	c := w.dial(t, w.aliceToken, live.FarmTopic(w.farmA))
	done := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		done <- w.srv.Shutdown(ctx)
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, _, err := c.Read(ctx)
	if websocket.CloseStatus(err) != websocket.StatusGoingAway {
		t.Fatalf("read after shutdown: %v, want close 1001", err)
	}
	if err := <-done; err != nil {
		t.Fatalf("shutdown: %v", err)
	}
	if open := w.srv.Stats().Open; open != 0 {
		t.Fatalf("%d connections open after shutdown", open)
	}
}

// TestIdenticalReadingsAreTwoMessages checks that messages are told apart
// by publication, not by content: two readings alike (same device,
// metric, value and millisecond) are two messages, each sent once to a
// connection holding both of their topics, through Redis too.
func TestIdenticalReadingsAreTwoMessages(t *testing.T) {
	for name, buses := range transports() {
		t.Run(name, func(t *testing.T) {
			pub, sub := buses(t)
			w := newWorld(t, sub, live.Deps{})
			dev := uuid.New()
			c := w.dial(t, w.aliceToken, live.FarmTopic(w.farmA), live.MetricTopic(w.farmA, dev, 220))
			r := reading(w.farmA, dev, 220, "21.5")
			pub.Publish(r)
			pub.Publish(r)
			pub.Publish(reading(w.farmA, dev, 220, "end"))
			if got := readUntil(t, c, "end"); len(got) != 2 {
				t.Fatalf("two readings alike on two topics: got %d messages %+v, want 2", len(got), got)
			}
		})
	}
}
