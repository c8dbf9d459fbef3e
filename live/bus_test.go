package live

import (
	"context"
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
