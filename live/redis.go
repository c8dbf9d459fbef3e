package live

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/furrowhq/furrow"
	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"
)

// subscribeTimeout bounds writing one SUBSCRIBE or UNSUBSCRIBE; it is
// short because the bus's subscriptions wait for it.
const subscribeTimeout = 2 * time.Second

// NewRedisBus returns a Bus that publishes through Redis pub/sub, so that a
// reading published on one process reaches sockets on every process sharing
// the Redis. Each topic is the Redis channel prefix+topic. The process keeps
// one subscriber connection, subscribed to exactly the topics its local
// sockets want and to the bus's control channels; go-redis reconnects it
// and restores the subscriptions after a Redis restart. Messages of a farm
// that no socket watches, on any process, are not sent (see interest).
// logger may be nil for slog.Default. Close the Bus to release the
// subscriber connection; client stays open.
func NewRedisBus(client redis.UniversalClient, prefix string, logger *slog.Logger) *Bus {
	return newRedisBus(client, prefix, logger, interestPoll)
}

// newRedisBus is NewRedisBus polling the subscribed channels every poll.
func newRedisBus(client redis.UniversalClient, prefix string, logger *slog.Logger, poll time.Duration) *Bus {
	if logger == nil {
		logger = slog.Default()
	}
	h := newHub()
	ctx, cancel := context.WithCancel(context.Background())
	t := &redisTransport{
		client: client, prefix: prefix, hub: h, log: logger,
		id:         uuid.NewString(),
		in:         newInterest(),
		warns:      &rateLog{clock: furrow.SystemClock{}, every: warnEvery},
		subs:       make(map[string]*watchState),
		announcing: make(map[uuid.UUID]chan struct{}),
		done:       make(chan struct{}), pollDone: make(chan struct{}), stopPoll: cancel,
	}
	t.ps = client.Subscribe(context.Background(), prefix+interestChannel, prefix+ackChannel+t.id)
	ch := t.ps.ChannelWithSubscriptions(redis.WithChannelSize(1024))
	go t.receive(ch)
	go t.pollLoop(ctx, poll)
	return newBus(h, t, queueSize, redisLinger, logger)
}

type redisTransport struct {
	client redis.UniversalClient
	prefix string
	id     string // names this process's acknowledgement channel
	hub    *hub
	in     *interest
	log    *slog.Logger
	warns  *rateLog
	ps     *redis.PubSub

	done     chan struct{}
	pollDone chan struct{}
	stopPoll context.CancelFunc

	mu         sync.Mutex
	subs       map[string]*watchState      // topic -> its subscription
	announcing map[uuid.UUID]chan struct{} // farm -> its announcement in flight
}

// watchState is one wanted topic; ready closes once its first confirmation
// has been announced.
type watchState struct {
	ready     chan struct{}
	confirmed bool
}

func (t *redisTransport) wants(farm uuid.UUID) bool { return t.in.wants(farm) }

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
	t.stopPoll()
	<-t.pollDone
	err := t.ps.Close()
	<-t.done
	return err
}

// receive routes what the subscriber connection receives: messages to the
// hub, the control channels' to interest, subscription confirmations to
// waiting subscribers.
func (t *redisTransport) receive(ch <-chan any) {
	defer close(t.done)
	for m := range ch {
		switch m := m.(type) {
		case *redis.Message:
			t.route(m)
		case *redis.Subscription:
			if m.Kind == "subscribe" {
				t.confirmed(strings.TrimPrefix(m.Channel, t.prefix))
			}
		}
	}
}

func (t *redisTransport) route(m *redis.Message) {
	name, ok := strings.CutPrefix(m.Channel, t.prefix)
	switch {
	case !ok:
	case name == interestChannel:
		t.onAnnounce(m.Payload)
	case name == ackChannel+t.id:
		t.in.acked(m.Payload)
	default:
		t.hub.deliver(name, []byte(m.Payload))
	}
}

// confirmed handles one subscription confirmation, first or after a
// reconnect. A topic's farm is announced each time, since polls may have
// pruned it while the connection was down; the first announcement makes
// the subscription ready.
func (t *redisTransport) confirmed(name string) {
	if name == interestChannel {
		t.in.controlSubscribed()
		return
	}
	farm, ok := farmOfChannel(name)
	if !ok {
		return
	}
	t.mu.Lock()
	w := t.subs[name]
	first := w != nil && !w.confirmed
	if first {
		w.confirmed = true
	}
	t.mu.Unlock()
	go func() {
		t.announceOnce(farm)
		if first {
			close(w.ready)
		}
	}()
}
