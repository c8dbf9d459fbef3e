package live

import (
	"context"
	"errors"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/furrowhq/furrow"
	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"
)

const (
	// subscribeTimeout bounds writing one SUBSCRIBE, UNSUBSCRIBE or PING,
	// and one read of the subscribed channels; it is short because the topics
	// queued behind it wait for it.
	subscribeTimeout = 2 * time.Second
	// healthCheckEvery is how often the subscriber connection is pinged: a
	// write is what finds a peer gone without a word, and go-redis then
	// reconnects.
	healthCheckEvery = 3 * time.Second
	// silenceLimit bounds one read of the subscriber connection: the
	// health check's pongs come every healthCheckEvery, so a connection
	// silent for longer is lost (a peer gone without a word, into whose
	// socket buffer the pings are still written).
	silenceLimit = 2*healthCheckEvery + subscribeTimeout
	// reconnectPause spaces the attempts to reconnect the subscriber
	// connection while Redis refuses, doubling up to maxReconnectPause
	// while it goes on refusing (an error reply to the handshake, such as
	// WRONGPASS, comes as fast as a connection is made).
	reconnectPause    = 100 * time.Millisecond
	maxReconnectPause = 2 * time.Second
)

// NewRedisBus returns a Bus that publishes through Redis pub/sub, so that a
// reading published on one process reaches sockets on every process sharing
// the Redis. Each topic is the Redis channel prefix+topic. The process keeps
// one subscriber connection, subscribed to exactly the topics its local
// sockets want and to the bus's control channels; go-redis reconnects it
// and restores the subscriptions after a Redis restart; meanwhile the sinks
// of each topic that was live are told it was lost (Sink.Lost). Messages
// of a farm that no socket watches, on any process, are not sent (see
// interest).
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
		onRedis:    make(map[string]bool),
		queued:     make(map[string]bool),
		wake:       make(chan struct{}, 1),
		announcing: make(map[uuid.UUID]*announcement),
		ctx:        ctx, cancel: cancel,
		done: make(chan struct{}), pollDone: make(chan struct{}), managerDone: make(chan struct{}),
		checkDone: make(chan struct{}),
	}
	t.ps = client.Subscribe(context.Background(), prefix+interestChannel, prefix+ackChannel+t.id)
	go t.receive()
	go t.healthCheck()
	go t.pollLoop(ctx, poll)
	go t.manage()
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

	// ctx ends at close, and with it the poller, the subscription
	// manager, the health check and the retries of announcements.
	ctx         context.Context
	cancel      context.CancelFunc
	done        chan struct{}
	pollDone    chan struct{}
	managerDone chan struct{}
	checkDone   chan struct{}

	mu   sync.Mutex
	subs map[string]*watchState // topic -> its subscription
	// losses counts the subscriber connections lost: a confirmation makes
	// a topic live only while no loss has followed it.
	losses uint64
	// onRedis holds the topics the manager subscribed and did not
	// unsubscribe since; queue the topics whose Redis subscription may
	// differ from subs, oldest first, each once (queued).
	onRedis    map[string]bool
	queue      []string
	queued     map[string]bool
	wake       chan struct{} // tells the manager that queue grew
	announcing map[uuid.UUID]*announcement
}

// watchState is one wanted topic. ready is closed while the topic is live:
// its subscription confirmed on the current subscriber connection and its
// farm announced; a lost connection replaces it with an open one.
// requested says its SUBSCRIBE was sent, so that a confirmation of an
// earlier subscription of the topic does not count.
type watchState struct {
	ready     chan struct{}
	requested bool
}

// isClosed reports whether ch is closed.
func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
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
		p := payload(m.id, b)
		for _, tp := range m.topics() {
			pipe.Publish(ctx, t.prefix+tp.String(), p)
		}
	}
	_, err := pipe.Exec(ctx)
	return err
}

// payload is what crosses Redis for a message: its publication's id in
// hex, a space, then what subscribers receive. A process receives a
// message once per topic of it that its sockets watch; the id lets a
// socket watching several of them take it once.
func payload(id uint64, data []byte) []byte {
	p := strconv.AppendUint(make([]byte, 0, 17+len(data)), id, 16)
	return append(append(p, ' '), data...)
}

// parsePayload splits what payload joined.
func parsePayload(p string) (id uint64, data []byte, ok bool) {
	hex, rest, ok := strings.Cut(p, " ")
	if !ok {
		return 0, nil, false
	}
	id, err := strconv.ParseUint(hex, 16, 64)
	return id, []byte(rest), err == nil
}

// watch records that topic is wanted and leaves its SUBSCRIBE to the
// manager: it is called under the Bus's lock, and a SUBSCRIBE may wait
// seconds on a silent Redis, which would hold up every other subscribe
// and unsubscribe of the process.
func (t *redisTransport) watch(topic string) <-chan struct{} {
	t.mu.Lock()
	defer t.mu.Unlock()
	w, ok := t.subs[topic]
	if !ok {
		w = &watchState{ready: make(chan struct{})}
		t.subs[topic] = w
		t.enqueue(topic)
	}
	return w.ready
}

// unwatch records that topic is no longer wanted and, as watch, leaves
// its UNSUBSCRIBE to the manager.
func (t *redisTransport) unwatch(topic string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.subs, topic)
	t.enqueue(topic)
}

// enqueue asks the manager to bring topic's Redis subscription in line
// with subs. t.mu must be held.
func (t *redisTransport) enqueue(topic string) {
	if t.queued[topic] {
		return
	}
	t.queued[topic] = true
	t.queue = append(t.queue, topic)
	select {
	case t.wake <- struct{}{}:
	default:
	}
}

// manage is the one goroutine that writes SUBSCRIBE and UNSUBSCRIBE, in
// the order topics were queued, until close.
func (t *redisTransport) manage() {
	defer close(t.managerDone)
	for {
		topic, ok := t.next()
		if !ok {
			return
		}
		t.apply(topic)
	}
}

// next takes the oldest queued topic, waiting for one; false once the
// transport closes.
func (t *redisTransport) next() (string, bool) {
	for {
		t.mu.Lock()
		if len(t.queue) > 0 {
			topic := t.queue[0]
			t.queue = t.queue[1:]
			if len(t.queue) == 0 {
				t.queue = nil // lets the backing array go
			}
			delete(t.queued, topic)
			t.mu.Unlock()
			return topic, true
		}
		t.mu.Unlock()
		select {
		case <-t.wake:
		case <-t.ctx.Done():
			return "", false
		}
	}
}

// apply writes what topic's Redis subscription needs: a SUBSCRIBE for a
// subscription not yet requested (even when Redis still has the topic from
// an earlier one: its confirmation is what makes the new one ready), an
// UNSUBSCRIBE for a topic no longer wanted. A topic wanted again before
// its UNSUBSCRIBE was written is thus never unsubscribed.
func (t *redisTransport) apply(topic string) {
	t.mu.Lock()
	w := t.subs[topic]
	subscribe := w != nil && !w.requested
	unsubscribe := w == nil && t.onRedis[topic]
	if subscribe {
		w.requested = true
		t.onRedis[topic] = true
	} else if unsubscribe {
		delete(t.onRedis, topic)
	}
	t.mu.Unlock()
	ctx, cancel := context.WithTimeout(t.ctx, subscribeTimeout)
	defer cancel()
	switch {
	case subscribe:
		// On failure go-redis still remembers the channel and subscribes
		// again when it reconnects; the subscriber waits for confirmation.
		if err := t.ps.Subscribe(ctx, t.prefix+topic); err != nil && t.ctx.Err() == nil {
			t.warn("live: redis subscribe failed; retrying on reconnect", err)
		}
	case unsubscribe:
		// go-redis forgets the channel even when the write fails, so a
		// reconnect does not subscribe it again.
		if err := t.ps.Unsubscribe(ctx, t.prefix+topic); err != nil && t.ctx.Err() == nil {
			t.warn("live: redis unsubscribe failed", err)
		}
	}
}

// close stops the poller, the health check and the manager, without
// waiting for the UNSUBSCRIBEs still queued: closing the subscriber
// connection drops every subscription at once.
func (t *redisTransport) close() error {
	t.cancel()
	<-t.pollDone
	<-t.checkDone
	err := t.ps.Close()
	<-t.managerDone
	<-t.done
	return err
}

// receive reads the subscriber connection until close and routes what
// comes: messages to the hub, the control channels' to interest,
// subscription confirmations to waiting subscribers. A failed read is a
// lost connection, which go-redis replaces (now or on the next read).
func (t *redisTransport) receive() {
	defer close(t.done)
	pause := reconnectPause
	for {
		ctx, cancel := context.WithTimeout(context.Background(), silenceLimit)
		m, err := t.ps.Receive(ctx)
		cancel()
		var redisErr redis.Error
		switch {
		case errors.Is(err, redis.ErrClosed):
			return
		case err != nil && t.ctx.Err() != nil:
			return // closing: the read failed as the connection closed
		case errors.As(err, &redisErr):
			t.warn("live: the redis subscriber connection answered an error", err)
		case err != nil:
			t.lost(err)
		default:
			pause = reconnectPause
			t.handle(m)
			continue
		}
		select {
		case <-t.ctx.Done():
			return
		case <-time.After(pause):
		}
		pause = min(2*pause, maxReconnectPause)
	}
}

// handle routes one thing the subscriber connection received.
func (t *redisTransport) handle(m any) {
	switch m := m.(type) {
	case *redis.Message:
		t.route(m)
	case *redis.Subscription:
		if m.Kind == "subscribe" {
			t.confirmed(strings.TrimPrefix(m.Channel, t.prefix))
		}
	}
}

// healthCheck pings on the subscriber connection every healthCheckEvery
// until close; a failed write makes go-redis reconnect, which receive sees.
func (t *redisTransport) healthCheck() {
	defer close(t.checkDone)
	tick := time.NewTicker(healthCheckEvery)
	defer tick.Stop()
	for {
		select {
		case <-t.ctx.Done():
			return
		case <-tick.C:
		}
		ctx, cancel := context.WithTimeout(t.ctx, subscribeTimeout)
		_ = t.ps.Ping(ctx)
		cancel()
	}
}

// lost handles the loss of the subscriber connection: every live topic is
// not live until its subscription is confirmed on the next connection, and
// its sinks are told, since what is published meanwhile does not reach
// them.
func (t *redisTransport) lost(err error) {
	t.mu.Lock()
	t.losses++
	var gone []string
	for name, w := range t.subs {
		if isClosed(w.ready) {
			w.ready = make(chan struct{})
			gone = append(gone, name)
		}
	}
	t.mu.Unlock()
	t.warn("live: redis subscriber connection lost; reconnecting", err)
	for _, name := range gone {
		t.hub.lose(name)
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
		id, data, ok := parsePayload(m.Payload)
		if !ok {
			t.warn("live: a malformed message on a topic's channel was dropped", nil)
			return
		}
		t.hub.deliver(name, id, data)
	}
}

// confirmed handles one subscription confirmation, first or after a
// reconnect. A topic's farm is announced each time, since polls may have
// pruned it while the connection was down; for a topic not live, the
// first announcement that succeeds makes it live.
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
	settle := w != nil && w.requested && !isClosed(w.ready)
	losses := t.losses
	t.mu.Unlock()
	if !settle {
		// A failure is left to the polls, which find the channel.
		go func() { _ = t.announceOnce(farm) }()
		return
	}
	go t.announceUntilReady(name, farm, w, losses)
}

// announceUntilReady announces farm until a PUBLISH of the announcement
// succeeds, then makes w live: until then other processes may not know
// the farm is watched, and drop its messages. It gives up once the topic
// is no longer wanted by w, the connection that confirmed it (the one
// after losses losses) is lost, or the transport closes.
func (t *redisTransport) announceUntilReady(name string, farm uuid.UUID, w *watchState, losses uint64) {
	for t.announceOnce(farm) != nil {
		select {
		case <-t.ctx.Done():
			return
		case <-time.After(announceRetry):
		}
		t.mu.Lock()
		current := t.current(name, w, losses)
		t.mu.Unlock()
		if !current {
			return
		}
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.current(name, w, losses) && !isClosed(w.ready) {
		close(w.ready)
	}
}

// current reports whether w still wants the topic name on the connection
// that confirmed it, the one after losses losses. t.mu must be held.
func (t *redisTransport) current(name string, w *watchState, losses uint64) bool {
	return t.subs[name] == w && t.losses == losses
}
