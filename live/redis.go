package live

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// subscribeTimeout bounds writing one SUBSCRIBE or UNSUBSCRIBE; it is
// short because the bus's subscriptions wait for it.
const subscribeTimeout = 2 * time.Second

// NewRedisBus returns a Bus that publishes through Redis pub/sub, so that a
// reading published on one process reaches sockets on every process sharing
// the Redis. Each topic is the Redis channel prefix+topic. The process keeps
// one subscriber connection, subscribed to exactly the topics its local
// sockets want; go-redis reconnects it and restores the subscriptions after
// a Redis restart. logger may be nil for slog.Default. Close the Bus to
// release the subscriber connection; client stays open.
func NewRedisBus(client redis.UniversalClient, prefix string, logger *slog.Logger) *Bus {
	if logger == nil {
		logger = slog.Default()
	}
	h := newHub()
	t := &redisTransport{
		client: client, prefix: prefix, hub: h, log: logger,
		subs: make(map[string]*watchState),
		ps:   client.Subscribe(context.Background()),
		done: make(chan struct{}),
	}
	ch := t.ps.ChannelWithSubscriptions(redis.WithChannelSize(1024))
	go t.receive(ch)
	return newBus(h, t, queueSize, redisLinger, logger)
}

type redisTransport struct {
	client redis.UniversalClient
	prefix string
	hub    *hub
	log    *slog.Logger
	ps     *redis.PubSub
	done   chan struct{}

	mu   sync.Mutex
	subs map[string]*watchState // topic -> its subscription
}

// watchState is one wanted topic; ready closes at its first confirmation.
type watchState struct {
	ready     chan struct{}
	confirmed bool
}

// send publishes the batch in one pipeline, every topic of each message.
func (t *redisTransport) send(ctx context.Context, batch []message) error {
	pipe := t.client.Pipeline()
	for _, m := range batch {
		b, err := m.encode()
		if err != nil {
			return err
		}
		for _, tp := range m.topics() {
			pipe.Publish(ctx, t.prefix+tp.String(), b)
		}
	}
	_, err := pipe.Exec(ctx)
	return err
}

func (t *redisTransport) watch(topic string) <-chan struct{} {
	t.mu.Lock()
	w, ok := t.subs[topic]
	if !ok {
		w = &watchState{ready: make(chan struct{})}
		t.subs[topic] = w
	}
	t.mu.Unlock()
	if !ok {
		ctx, cancel := context.WithTimeout(context.Background(), subscribeTimeout)
		defer cancel()
		// On failure go-redis still remembers the channel and subscribes
		// again when it reconnects; the caller waits for confirmation.
		if err := t.ps.Subscribe(ctx, t.prefix+topic); err != nil {
			t.log.Warn("live: redis subscribe failed; retrying on reconnect", "topic", topic, "err", err)
		}
	}
	return w.ready
}

func (t *redisTransport) unwatch(topic string) {
	t.mu.Lock()
	delete(t.subs, topic)
	t.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), subscribeTimeout)
	defer cancel()
	if err := t.ps.Unsubscribe(ctx, t.prefix+topic); err != nil {
		t.log.Warn("live: redis unsubscribe failed", "topic", topic, "err", err)
	}
}

func (t *redisTransport) close() error {
	err := t.ps.Close()
	<-t.done
	return err
}

// receive routes what the subscriber connection receives: messages to the
// hub, subscription confirmations to waiting subscribers.
func (t *redisTransport) receive(ch <-chan any) {
	defer close(t.done)
	for m := range ch {
		switch m := m.(type) {
		case *redis.Message:
			if topic, ok := strings.CutPrefix(m.Channel, t.prefix); ok {
				t.hub.deliver(topic, []byte(m.Payload))
			}
		case *redis.Subscription:
			if m.Kind == "subscribe" {
				t.confirm(strings.TrimPrefix(m.Channel, t.prefix))
			}
		}
	}
}

func (t *redisTransport) confirm(topic string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if w := t.subs[topic]; w != nil && !w.confirmed {
		w.confirmed = true
		close(w.ready)
	}
}
