package live

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/furrowhq/furrow"
	"github.com/google/uuid"
)

const (
	// queueSize bounds the messages waiting to be published; beyond it
	// Publish drops, so that ingestion never waits on the bus.
	queueSize = 4096
	// queueBytes bounds the bytes of the values and data of the messages
	// waiting to be published, as queueSize bounds their number: an app
	// event may carry a request body's worth, and 4,096 of them, held while
	// the transport is slow, would take a quarter of a gigabyte.
	queueBytes = 16 << 20
	// batchSize bounds the messages sent to the transport at once (one
	// Redis pipeline).
	batchSize = 128
	// redisLinger is how long the Redis bus waits, after a message comes
	// alone, for others to share its pipeline: each round trip to Redis
	// costs both processes far more CPU than a message in it, and a live
	// chart does not see 2 ms.
	redisLinger = 2 * time.Millisecond
	// sendTimeout bounds one transport send.
	sendTimeout = 5 * time.Second
	// warnEvery rate-limits the bus's warnings.
	warnEvery = 10 * time.Second
)

// transport carries messages to the hubs that want them: directly in
// process, or through Redis pub/sub.
type transport interface {
	// send publishes a batch in order. It is called from one goroutine.
	send(ctx context.Context, batch []message) error
	// wants reports whether messages of farm may have a subscriber
	// anywhere; those that cannot are not sent.
	wants(farm uuid.UUID) bool
	// watch makes messages of topic reach the local hub and returns a
	// channel closed once they do. Calls are serialised by the Bus, under
	// its lock, so watch must not wait on the network.
	watch(topic string) <-chan struct{}
	// unwatch stops what watch started, after the topic's last local
	// subscriber left; as watch, it must not wait on the network.
	unwatch(topic string)
	close() error
}

// Bus is the live-updates bus. It implements furrow.Publisher and
// furrow.EventPublisher and lets local sinks subscribe to topics. The zero value is not usable; create one
// with NewMemoryBus or NewRedisBus.
type Bus struct {
	hub   *hub
	tr    transport
	queue chan message
	// linger is how long a batch that is not full waits for more; zero
	// sends at once.
	linger time.Duration
	log    *slog.Logger
	warn   *rateLog

	subMu     sync.Mutex   // serialises watch and unwatch, keeping their order
	queued    atomic.Int64 // the sizes of the messages queued or being sent
	dropped   atomic.Uint64
	published atomic.Uint64

	stop      chan struct{}
	done      chan struct{}
	closeOnce sync.Once
}

func newBus(h *hub, tr transport, queue int, linger time.Duration, log *slog.Logger) *Bus {
	if log == nil {
		log = slog.Default()
	}
	b := &Bus{
		hub: h, tr: tr, queue: make(chan message, queue), linger: linger, log: log,
		warn: &rateLog{clock: furrow.SystemClock{}, every: warnEvery},
		stop: make(chan struct{}), done: make(chan struct{}),
	}
	go b.pump()
	return b
}

// Publish queues a reading for its two topics. It never blocks and never
// fails: when the queue is full (queueSize messages, or queueBytes of
// values and data) the reading is dropped and counted. A
// reading of a farm that no socket watches is counted as published and
// goes no further.
func (b *Bus) Publish(r furrow.LiveReading) { b.enqueue(r.FarmID, message{reading: r}) }

// PublishEvent queues a farm event for its farm's events topic, as Publish
// does.
func (b *Bus) PublishEvent(e furrow.Event) { b.enqueue(e.FarmID, message{event: &e}) }

func (b *Bus) enqueue(farm uuid.UUID, m message) {
	if !b.tr.wants(farm) {
		b.published.Add(1)
		return
	}
	// Random, so that the ids of every process sharing a Redis differ.
	m.id = rand.Uint64()
	n := int64(m.size())
	if b.queued.Add(n) > queueBytes {
		b.queued.Add(-n)
		b.drop(1, "live: publish queue full, message dropped", nil)
		return
	}
	select {
	case b.queue <- m:
	default:
		b.queued.Add(-n)
		b.drop(1, "live: publish queue full, message dropped", nil)
	}
}

// Dropped returns how many messages were dropped because the queue was
// full or the transport failed.
func (b *Bus) Dropped() uint64 { return b.dropped.Load() }

// Published returns how many messages were handed to the transport.
func (b *Bus) Published() uint64 { return b.published.Load() }

// Subscribe makes s receive the messages of topic t and returns once they
// flow (on Redis, once the subscription is confirmed). When ctx ends first,
// s is unsubscribed again and the context's error is returned.
func (b *Bus) Subscribe(ctx context.Context, t Topic, s Sink) error {
	ready := b.Watch(t, s)
	select {
	case <-ready:
		return nil
	case <-ctx.Done():
		b.Unsubscribe(t, s)
		return fmt.Errorf("live: subscribe %s: %w", t, ctx.Err())
	}
}

// Watch makes s receive the messages of topic t and returns a channel
// closed once they flow (on Redis, once the subscription is confirmed,
// which after an outage is when Redis is back). The subscription stands
// until Unsubscribe, confirmed or not. When Redis loses it, s.Lost is
// called, and Watch then returns a new channel, closed once it is back.
func (b *Bus) Watch(t Topic, s Sink) <-chan struct{} {
	topic := t.String()
	b.subMu.Lock()
	defer b.subMu.Unlock()
	b.hub.add(topic, s)
	return b.tr.watch(topic)
}

// Unsubscribe stops s receiving the messages of topic t. Unsubscribing
// what was not subscribed does nothing.
func (b *Bus) Unsubscribe(t Topic, s Sink) {
	topic := t.String()
	b.subMu.Lock()
	defer b.subMu.Unlock()
	if b.hub.remove(topic, s) {
		b.tr.unwatch(topic)
	}
}

// Close stops publishing and releases the transport. Messages still queued
// are dropped; Publish after Close drops too. It returns the transport's
// close error.
func (b *Bus) Close() error {
	var err error
	b.closeOnce.Do(func() {
		close(b.stop)
		<-b.done
		err = b.tr.close()
	})
	return err
}

// pump is the one goroutine that sends to the transport, so messages leave
// in the order they were published and each device's order holds.
func (b *Bus) pump() {
	defer close(b.done)
	batch := make([]message, 0, batchSize)
	for {
		select {
		case <-b.stop:
			return
		case r := <-b.queue:
			batch = b.fill(append(batch[:0], r))
			ctx, cancel := context.WithTimeout(context.Background(), sendTimeout)
			err := b.tr.send(ctx, batch)
			cancel()
			b.queued.Add(-sizeOf(batch))
			if err != nil {
				b.drop(len(batch), "live: publish failed, messages dropped", err)
			} else {
				b.published.Add(uint64(len(batch)))
			}
		}
	}
}

// fill adds what is queued to batch, up to batchSize, waiting up to the
// bus's linger for more when it is not full.
func (b *Bus) fill(batch []message) []message {
	batch = b.take(batch)
	if b.linger <= 0 || len(batch) == batchSize {
		return batch
	}
	t := time.NewTimer(b.linger)
	defer t.Stop()
	for len(batch) < batchSize {
		select {
		case r := <-b.queue:
			batch = b.take(append(batch, r))
		case <-t.C:
			return batch
		case <-b.stop:
			return batch
		}
	}
	return batch
}

// take adds whatever is already queued to batch, up to batchSize.
func (b *Bus) take(batch []message) []message {
	for len(batch) < batchSize {
		select {
		case r := <-b.queue:
			batch = append(batch, r)
		default:
			return batch
		}
	}
	return batch
}

func (b *Bus) drop(n int, msg string, err error) {
	total := b.dropped.Add(uint64(n))
	if ok, suppressed := b.warn.allow(); ok {
		args := []any{"dropped_total", total, "suppressed_warnings", suppressed}
		if err != nil {
			args = append(args, "err", err)
		}
		b.log.Warn(msg, args...)
	}
}

// rateLog lets one warning through per interval and counts the rest.
type rateLog struct {
	mu         sync.Mutex
	clock      furrow.Clock
	every      time.Duration
	last       time.Time
	suppressed int
}

// allow reports whether to log now and how many were suppressed since the
// last one.
func (l *rateLog) allow() (bool, int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.clock.Now()
	if !l.last.IsZero() && now.Sub(l.last) < l.every {
		l.suppressed++
		return false, 0
	}
	n := l.suppressed
	l.last, l.suppressed = now, 0
	return true, n
}
