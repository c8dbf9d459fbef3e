package live

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/furrowhq/furrow"
	"github.com/google/uuid"
)

// TestDuplicateSuppressedAcrossInterleaving checks that a reading matching
// two of a connection's topics is sent to it once even when many other
// messages come between its two copies, as other processes' PUBLISHes
// through Redis may: far more than the 16 ids a connection once
// remembered.
func TestDuplicateSuppressedAcrossInterleaving(t *testing.T) {
	bus := NewMemoryBus(nil)
	defer bus.Close()
	srv := NewServer(Deps{Bus: bus})
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		topics, err := ParseTopics(r.URL.Query()["topic"])
		if err != nil {
			t.Error(err)
			return
		}
		_ = srv.Accept(w, r, Client{User: uuid.New(), Topics: topics, Authorize: func(context.Context, Topic) error { return nil }})
	}))
	defer hs.Close()
	defer srv.Shutdown(context.Background())
	farm, device := uuid.New(), uuid.New()
	farmTopic, metricTopic := FarmTopic(farm), MetricTopic(farm, device, 220)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ws, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(hs.URL, "http")+"?topic="+farmTopic.String()+"&topic="+metricTopic.String(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.CloseNow()
	for range 2 {
		if _, b, err := ws.Read(ctx); err != nil || !strings.Contains(string(b), `"subscribed"`) {
			t.Fatalf("got %s, %v; want subscribed", b, err)
		}
	}
	data := func(value string) []byte {
		b, err := message{reading: furrow.LiveReading{Reading: furrow.Reading{
			FarmID: farm, DeviceID: device, MetricID: 220, Value: value, Timestamp: 1}}}.encode()
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	// As the subscriber connection hands them to the hub: the reading's
	// copy on its farm topic, other processes' messages, its copy on its
	// metric topic.
	const between = 100
	bus.hub.deliver(farmTopic.String(), 1, data("twice"))
	for i := range between {
		bus.hub.deliver(farmTopic.String(), uint64(2+i), data(fmt.Sprint(i)))
	}
	bus.hub.deliver(metricTopic.String(), 1, data("twice"))
	bus.hub.deliver(farmTopic.String(), 2+between, data("end"))
	copies, others := 0, 0
	for {
		_, b, err := ws.Read(ctx)
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case strings.Contains(string(b), `"value":"end"`):
			if copies != 1 || others != between {
				t.Fatalf("the reading was sent %d times with %d messages between its copies, want once (and %d others)", copies, others, between)
			}
			return
		case strings.Contains(string(b), `"value":"twice"`):
			copies++
		default:
			others++
		}
	}
}

// TestRecentIDsBounded checks that a connection forgets a publication
// once dedupWindow has passed, or once dedupCap newer ones came, and
// remembers it until then.
func TestRecentIDsBounded(t *testing.T) {
	var r recentIDs
	t0 := time.Unix(1700000000, 0)
	for id := range uint64(dedupCap) {
		if r.seen(id, t0) {
			t.Fatalf("id %d seen before it was sent", id)
		}
	}
	if !r.seen(0, t0.Add(dedupWindow-time.Millisecond)) {
		t.Fatal("the oldest id, within the window and the cap, was forgotten")
	}
	if r.seen(dedupCap, t0) {
		t.Fatal("a new id counted as seen")
	}
	if r.n != dedupCap || len(r.set) != dedupCap || len(r.ring) != dedupCap {
		t.Fatalf("holds %d ids (set %d, ring %d), want at most %d", r.n, len(r.set), len(r.ring), dedupCap)
	}
	if _, ok := r.set[0]; ok {
		t.Fatal("past the cap, the oldest id is still remembered")
	}
	if !r.seen(1, t0) {
		t.Fatal("the second oldest id was forgotten")
	}
	later := t0.Add(dedupWindow)
	if r.seen(1, later) {
		t.Fatal("an id was remembered past the window")
	}
	if r.n != 1 || len(r.set) != 1 {
		t.Fatalf("holds %d ids (set %d) after the window, want only the one sent since", r.n, len(r.set))
	}
}
