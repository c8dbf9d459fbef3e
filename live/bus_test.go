package live

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/furrowhq/furrow"
	"github.com/google/uuid"
)

// stuckTransport never finishes a send until released.
type stuckTransport struct {
	memoryTransport
	entered chan struct{}
	release chan struct{}
}

func (s stuckTransport) send(ctx context.Context, _ []message) error {
	s.entered <- struct{}{}
	select {
	case <-s.release:
	case <-ctx.Done():
	}
	return nil
}

// TestPublishDropsWhenFull checks Publish neither blocks nor fails when
// the transport is stuck: readings beyond the queue are dropped and counted.
func TestPublishDropsWhenFull(t *testing.T) {
	tr := stuckTransport{memoryTransport{newHub()}, make(chan struct{}, 1), make(chan struct{})}
	b := newBus(tr.hub, tr, 4, 0, nil)
	defer b.Close()
	defer close(tr.release)
	r := furrow.LiveReading{Reading: furrow.Reading{FarmID: uuid.New(), DeviceID: uuid.New(), MetricID: 1}}
	b.Publish(r)
	<-tr.entered // the pump now holds one reading and is stuck
	for range 100 {
		b.Publish(r)
	}
	if d := b.Dropped(); d != 96 {
		t.Fatalf("dropped %d of 100 with a queue of 4, want 96", d)
	}
}

// gateTransport holds every send until open is closed.
type gateTransport struct {
	memoryTransport
	open chan struct{}
}

func (g gateTransport) send(ctx context.Context, _ []message) error {
	select {
	case <-g.open:
	case <-ctx.Done():
	}
	return nil
}

// TestPublishBoundsQueuedBytes checks that large events wait to be
// published up to queueBytes of data, the rest dropped and counted, and
// that the bytes are free again once sent.
func TestPublishBoundsQueuedBytes(t *testing.T) {
	tr := gateTransport{memoryTransport{newHub()}, make(chan struct{})}
	b := newBus(tr.hub, tr, queueSize, 0, nil)
	defer b.Close()
	e := furrow.Event{FarmID: uuid.New(), Data: json.RawMessage(`"` + strings.Repeat("x", 60<<10) + `"`)}
	n, held := 2*queueBytes/e.Size(), queueBytes/e.Size()
	for range n {
		b.PublishEvent(e)
	}
	if d := b.Dropped(); d != uint64(n-held) {
		t.Fatalf("dropped %d of %d events of %d bytes, want %d: %d MiB held", d, n, e.Size(), n-held, queueBytes>>20)
	}
	close(tr.open)
	waitPublished(t, b, uint64(held))
	b.PublishEvent(e)
	waitPublished(t, b, uint64(held+1))
	if d := b.Dropped(); d != uint64(n-held) {
		t.Fatalf("an event published once the queue was sent was dropped: %d dropped", d)
	}
}

// waitPublished waits up to 5 s for b to have published n messages.
func waitPublished(t *testing.T, b *Bus, n uint64) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); b.Published() < n; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("published %d, want %d", b.Published(), n)
		}
	}
}

// sizesTransport reports the size of every batch sent.
type sizesTransport struct {
	memoryTransport
	sizes chan int
}

func (s sizesTransport) send(_ context.Context, batch []message) error {
	s.sizes <- len(batch)
	return nil
}

// TestLingerSharesOneSend checks that a lingering bus sends messages
// published within its linger in one batch, and a full batch at once.
func TestLingerSharesOneSend(t *testing.T) {
	tr := sizesTransport{memoryTransport{newHub()}, make(chan int, 16)}
	b := newBus(tr.hub, tr, 4*batchSize, time.Minute, nil)
	defer b.Close()
	r := furrow.LiveReading{Reading: furrow.Reading{FarmID: uuid.New(), DeviceID: uuid.New(), MetricID: 1}}
	for range batchSize + 3 {
		b.Publish(r)
	}
	select {
	case n := <-tr.sizes:
		if n != batchSize {
			t.Fatalf("first send of %d messages, want a full batch of %d", n, batchSize)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a full batch waited for the linger")
	}
	select {
	case n := <-tr.sizes:
		t.Fatalf("a batch of %d sent before its linger ended", n)
	case <-time.After(100 * time.Millisecond):
	}

	tr = sizesTransport{memoryTransport{newHub()}, make(chan int, 16)}
	b = newBus(tr.hub, tr, 4*batchSize, 200*time.Millisecond, nil)
	defer b.Close()
	b.Publish(r)
	time.Sleep(20 * time.Millisecond)
	b.Publish(r)
	b.Publish(r)
	if n := <-tr.sizes; n != 3 {
		t.Fatalf("sent %d messages; want the 3 published within the linger in one batch", n)
	}
}

func TestRateLog(t *testing.T) {
	now := time.Unix(0, 0)
	l := &rateLog{clock: furrow.ClockFunc(func() time.Time { return now }), every: 10 * time.Second}
	if ok, _ := l.allow(); !ok {
		t.Fatal("first warning suppressed")
	}
	for range 3 {
		if ok, _ := l.allow(); ok {
			t.Fatal("warning within the interval let through")
		}
	}
	now = now.Add(10 * time.Second)
	if ok, n := l.allow(); !ok || n != 3 {
		t.Fatalf("after the interval: %v, %d suppressed; want true, 3", ok, n)
	}
}
