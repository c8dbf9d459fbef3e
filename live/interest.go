package live

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
)

const (
	// interestPoll is how often a Redis bus reads which channels are
	// subscribed anywhere. Announcements add a farm at once; the poll
	// learns the set after a reconnect and prunes farms nobody watches any
	// more, after two polls in a row without them.
	interestPoll = 5 * time.Second
	// announceTimeout bounds how long a new subscription waits for every
	// process to acknowledge its farm before it counts as ready anyway.
	announceTimeout = time.Second
	// announceRetry is how long a new subscription whose announcement
	// could not be published waits before announcing again.
	announceRetry = time.Second
	// interestChannel and ackChannel follow the bus's prefix; topics all
	// start with "farms/", so neither can be a topic's channel.
	interestChannel = "interest"
	ackChannel      = "interest-ack/"
)

// farmSet is a set of farm ids.
type farmSet map[uuid.UUID]struct{}

// interest is what a Redis bus knows of the farms that some socket, on any
// process sharing the Redis, watches: a reading of a farm nobody watches is
// neither encoded nor sent, and most readings have no watcher.
//
// A process that subscribes a topic announces its farm on the interest
// channel and counts the subscription ready only once the announcement is
// published and every process listening there has added the farm and
// acknowledged (or announceTimeout passed), so a socket misses nothing
// published after it is ready. Polls of the subscribed channels
// learn the set when a process starts or reconnects, and prune it. Until
// its control subscription is confirmed and one poll has followed, a
// process does not know the set, and sends everything.
type interest struct {
	known atomic.Pointer[farmSet] // nil: unknown, send everything

	mu        sync.Mutex
	gen       uint64                  // control (re)subscriptions so far
	announced map[uuid.UUID]time.Time // farms announced, with when
	lastPoll  farmSet                 // the previous poll's farms
	waits     map[string]*ackWait     // announcements waiting for acks, by nonce
	kick      chan struct{}           // asks the poller to poll now
}

// ackWait counts the acknowledgements of one announcement.
type ackWait struct {
	need, got int64 // need is -1 until the announcement's PUBLISH answered
	done      chan struct{}
}

func newInterest() *interest {
	return &interest{
		announced: make(map[uuid.UUID]time.Time),
		waits:     make(map[string]*ackWait),
		kick:      make(chan struct{}, 1),
	}
}

// wants reports whether a message of farm may have a watcher.
func (in *interest) wants(farm uuid.UUID) bool {
	set := in.known.Load()
	if set == nil {
		return true
	}
	_, ok := (*set)[farm]
	return ok
}

// controlSubscribed records a (re)confirmed control subscription: what was
// known may have missed announcements, so everything is sent again until
// the next poll, which is asked for now.
func (in *interest) controlSubscribed() {
	in.mu.Lock()
	in.gen++
	in.known.Store(nil)
	in.mu.Unlock()
	in.poke()
}

func (in *interest) poke() {
	select {
	case in.kick <- struct{}{}:
	default:
	}
}

// generation returns the control subscription's generation; 0 means it
// was never confirmed.
func (in *interest) generation() uint64 {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.gen
}

// add records an announced farm.
func (in *interest) add(farm uuid.UUID, now time.Time) {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.announced[farm] = now
	if set := in.known.Load(); set != nil {
		if _, ok := (*set)[farm]; !ok {
			next := make(farmSet, len(*set)+1)
			for f := range *set {
				next[f] = struct{}{}
			}
			next[farm] = struct{}{}
			in.known.Store(&next)
		}
	}
}

// polled makes the set what a poll under control generation gen found,
// with the previous poll's farms and every farm announced since the
// previous poll began (prevStart). A reconnect since the poll began leaves
// the set unknown.
func (in *interest) polled(found farmSet, prevStart time.Time, gen uint64) {
	in.mu.Lock()
	defer in.mu.Unlock()
	next := make(farmSet, len(found)+len(in.lastPoll))
	for f := range found {
		next[f] = struct{}{}
	}
	for f := range in.lastPoll {
		next[f] = struct{}{}
	}
	for f, at := range in.announced {
		if at.Before(prevStart) {
			delete(in.announced, f)
			continue
		}
		next[f] = struct{}{}
	}
	in.lastPoll = found
	if gen == in.gen && gen > 0 {
		in.known.Store(&next)
	}
}

// forget makes the set unknown after a failed poll.
func (in *interest) forget() { in.known.Store(nil) }

// expect registers an announcement's nonce before it is published.
func (in *interest) expect(nonce string) *ackWait {
	w := &ackWait{need: -1, done: make(chan struct{})}
	in.mu.Lock()
	in.waits[nonce] = w
	in.mu.Unlock()
	return w
}

// need records how many processes received the announcement.
func (in *interest) need(nonce string, n int64) {
	in.mu.Lock()
	defer in.mu.Unlock()
	if w := in.waits[nonce]; w != nil {
		w.need = n
		w.check()
	}
}

// acked counts one acknowledgement of nonce.
func (in *interest) acked(nonce string) {
	in.mu.Lock()
	defer in.mu.Unlock()
	if w := in.waits[nonce]; w != nil {
		w.got++
		w.check()
	}
}

// release forgets an announcement once its waiting is over.
func (in *interest) release(nonce string) {
	in.mu.Lock()
	delete(in.waits, nonce)
	in.mu.Unlock()
}

func (w *ackWait) check() {
	if w.need >= 0 && w.got >= w.need {
		select {
		case <-w.done:
		default:
			close(w.done)
		}
	}
}

// farmOfChannel returns the farm of a topic's channel name without the
// bus's prefix.
func farmOfChannel(topic string) (uuid.UUID, bool) {
	t, err := ParseTopic(topic)
	if err != nil {
		return uuid.Nil, false
	}
	return t.Farm, true
}

// globEscape quotes the characters a Redis glob pattern treats specially.
func globEscape(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`*?[]\`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// pollLoop polls the subscribed channels every interval, and at once when
// asked, until ctx ends.
func (t *redisTransport) pollLoop(ctx context.Context, every time.Duration) {
	defer close(t.pollDone)
	tick := time.NewTicker(every)
	defer tick.Stop()
	var prevStart time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		case <-t.in.kick:
		}
		gen := t.in.generation()
		if gen == 0 {
			continue
		}
		start := time.Now()
		found, err := t.subscribedFarms(ctx)
		if err != nil {
			t.in.forget()
			t.warn("live: reading Redis subscriptions failed; publishing every message", err)
			continue
		}
		t.in.polled(found, prevStart, gen)
		prevStart = start
	}
}

func (t *redisTransport) subscribedFarms(ctx context.Context) (farmSet, error) {
	ctx, cancel := context.WithTimeout(ctx, subscribeTimeout)
	defer cancel()
	channels, err := t.client.PubSubChannels(ctx, globEscape(t.prefix)+"farms/*").Result()
	if err != nil {
		return nil, err
	}
	found := make(farmSet)
	for _, ch := range channels {
		if f, ok := farmOfChannel(strings.TrimPrefix(ch, t.prefix)); ok {
			found[f] = struct{}{}
		}
	}
	return found, nil
}

// announcement is one announcement of a farm in flight; err is its
// result once done is closed.
type announcement struct {
	done chan struct{}
	err  error
}

// announceOnce announces farm, or waits for its announcement in flight
// (after a reconnect every topic is confirmed again, many of one farm),
// and returns the announcement's result.
func (t *redisTransport) announceOnce(farm uuid.UUID) error {
	t.mu.Lock()
	if a, ok := t.announcing[farm]; ok {
		t.mu.Unlock()
		<-a.done
		return a.err
	}
	a := &announcement{done: make(chan struct{})}
	t.announcing[farm] = a
	t.mu.Unlock()
	a.err = t.announce(farm)
	t.mu.Lock()
	delete(t.announcing, farm)
	t.mu.Unlock()
	close(a.done)
	return a.err
}

// announce tells every process that farm has a watcher, and returns once
// each has acknowledged or announceTimeout passed. It fails only when the
// announcement could not be published: then no process may know the farm.
func (t *redisTransport) announce(farm uuid.UUID) error {
	nonce := uuid.NewString()
	w := t.in.expect(nonce)
	defer t.in.release(nonce)
	ctx, cancel := context.WithTimeout(context.Background(), announceTimeout)
	defer cancel()
	n, err := t.client.Publish(ctx, t.prefix+interestChannel, farm.String()+" "+t.id+" "+nonce).Result()
	if err != nil {
		t.warn("live: announcing a watched farm failed", err)
		return err
	}
	t.in.need(nonce, n)
	select {
	case <-w.done:
	case <-ctx.Done():
		t.warn("live: not every process acknowledged a watched farm in time", nil)
	}
	return nil
}

// onAnnounce adds an announced farm, then acknowledges it to the announcer.
func (t *redisTransport) onAnnounce(payload string) {
	parts := strings.Fields(payload)
	if len(parts) != 3 {
		return
	}
	farm, err := uuid.Parse(parts[0])
	if err != nil {
		return
	}
	t.in.add(farm, time.Now())
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), announceTimeout)
		defer cancel()
		if err := t.client.Publish(ctx, t.prefix+ackChannel+parts[1], parts[2]).Err(); err != nil {
			t.warn("live: acknowledging a watched farm failed", err)
		}
	}()
}

// warn logs a control-plane warning, at most one per warnEvery: during a
// Redis outage every poll and announcement fails.
func (t *redisTransport) warn(msg string, err error) {
	if ok, suppressed := t.warns.allow(); ok {
		t.log.Warn(msg, "err", err, "suppressed_warnings", suppressed)
	}
}
