package live

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"
	"github.com/furrowhq/furrow"
)

// maxClientMessage bounds a message from the client; control messages are
// small.
const maxClientMessage = 4096

// subscribeWait bounds waiting for a subscription to take effect before
// the client is told that the bus is unavailable; the subscription stands
// and is confirmed once the bus is back.
const subscribeWait = 3 * time.Second

// busUnavailable is the reason of the error sent when a subscription is
// not confirmed within subscribeWait.
const busUnavailable = "The live bus is unavailable; the subscription stands and is confirmed with subscribed once the bus is back."

// busLost is the reason of the error sent when the bus loses a live
// subscription.
const busLost = "The live bus is unavailable; messages of this topic may be missed until it is back: the subscription stands, and once subscribed comes again, fill the gap from the polling API."

// conn is one WebSocket client. Its writer goroutine is the only one that
// writes messages (the pinger writes pings only), so replies and data leave
// in order; Send and Lost never block the hub.
type conn struct {
	srv       *Server
	ws        *websocket.Conn
	authorize func(context.Context, Topic) error
	send      chan []byte
	kill      chan closeReason // holds the first failure
	failed    atomic.Bool
	// requests carries the client's subscribes and unsubscribes from the
	// reader to the subscriber goroutine, which owns topics and pending
	// until it ends: a subscribe may wait seconds on the bus, and the
	// reader must go on reading meanwhile, or the pongs it reads would not
	// be, and the connection would be closed for a missing pong. pending
	// holds the wait of each topic that the client was last told the bus's
	// error for, until the bus confirms it.
	requests chan request
	topics   map[Topic]struct{}
	pending  map[Topic]pendingWatch
	// confirms carries the end of a pending wait to the subscriber
	// goroutine, which answers subscribed only if the topic still waits on
	// it: an unsubscribe carried out first is never followed by subscribed.
	confirms chan confirmation
	// lostWake tells the subscriber goroutine that the bus lost topics,
	// which lost holds.
	lostWake chan struct{}

	mu   sync.Mutex // guards lost, recent and next
	lost map[Topic]struct{}
	// recent holds the ids of the last publications sent, so that one
	// matching several of the connection's topics is sent once.
	recent [recentMessages]uint64
	next   int
}

// recentMessages bounds the duplicate check: a publication's topics are
// delivered one right after the other.
const recentMessages = 16

type closeReason struct {
	code   websocket.StatusCode
	reason string
}

// clientMessage is what a client may send.
type clientMessage struct {
	Type  string `json:"type"`
	Topic string `json:"topic"`
}

// serverMessage is a control message to the client. Data messages are the
// reading JSON instead and have no "type".
type serverMessage struct {
	Type   string `json:"type"`
	Topic  string `json:"topic,omitempty"`
	Error  string `json:"error,omitempty"`
	Reason string `json:"reason,omitempty"`
}

func newConn(s *Server, ws *websocket.Conn, authorize func(context.Context, Topic) error) *conn {
	ws.SetReadLimit(maxClientMessage)
	return &conn{
		srv: s, ws: ws, authorize: authorize,
		send:     make(chan []byte, s.d.SendBuffer),
		kill:     make(chan closeReason, 1),
		requests: make(chan request, maxRequests),
		topics:   make(map[Topic]struct{}),
		pending:  make(map[Topic]pendingWatch),
		confirms: make(chan confirmation),
		lostWake: make(chan struct{}, 1),
		lost:     make(map[Topic]struct{}),
	}
}

// request is a subscribe (or, with unsubscribe set, an unsubscribe) of
// topic that the subscriber goroutine carries out. authorized marks an
// initial topic, which Accept checked before the upgrade.
type request struct {
	topic       Topic
	unsubscribe bool
	authorized  bool
}

// maxRequests bounds the subscribes and unsubscribes a connection may have
// waiting: a client past it is closed with 1008, as one too slow to read.
const maxRequests = 2 * MaxTopics

// Send queues a data message without blocking, once even when its
// publication matches several of the connection's topics.
func (c *conn) Send(id uint64, msg []byte) {
	if !c.seen(id) {
		c.queue(msg)
	}
}

// Lost hands t to the subscriber goroutine, which tells the client. It
// never blocks, and holds at most the connection's topics.
func (c *conn) Lost(t Topic) {
	c.mu.Lock()
	c.lost[t] = struct{}{}
	c.mu.Unlock()
	select {
	case c.lostWake <- struct{}{}:
	default:
	}
}

// reasonTooManyRequests closes a client that sends subscribes faster than
// they are carried out: a policy violation, but not a slow client.
const reasonTooManyRequests = "too many subscribes waiting"

// queue hands msg to the writer, or disconnects a client too slow to take it.
func (c *conn) queue(msg []byte) {
	select {
	case c.send <- msg:
	default:
		c.fail(websocket.StatusPolicyViolation, "send buffer full: client too slow")
	}
}

// seen reports whether publication id was among the recent ones sent, and
// remembers it.
func (c *conn) seen(id uint64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, r := range c.recent {
		if r == id {
			return true
		}
	}
	c.recent[c.next] = id
	c.next = (c.next + 1) % recentMessages
	return false
}

// fail asks the writer to close the connection; the first request wins.
func (c *conn) fail(code websocket.StatusCode, reason string) {
	if c.failed.CompareAndSwap(false, true) {
		c.kill <- closeReason{code, reason}
	}
}

// run serves the connection until it ends, then drops its subscriptions.
func (c *conn) run(initial []Topic) {
	ctx, cancel := context.WithCancel(context.Background())
	for _, t := range initial { // at most MaxTopics, fewer than maxRequests
		c.requests <- request{topic: t, authorized: true}
	}
	subscriberDone := make(chan struct{})
	go func() {
		defer close(subscriberDone)
		c.subscriber(ctx)
	}()
	pingerDone := make(chan struct{})
	go func() {
		defer close(pingerDone)
		c.pinger(ctx)
	}()
	readerDone := make(chan struct{})
	go func() {
		defer close(readerDone)
		defer cancel()
		defer close(c.requests)
		c.readLoop(ctx)
	}()
	why := c.writeLoop(ctx)
	if why.code == websocket.StatusPolicyViolation && why.reason != reasonTooManyRequests {
		c.srv.slowClosed.Add(1)
	}
	// Close before cancelling: a cancelled Read would drop the connection
	// before the close frame, and with it the reason, reaches the client.
	_ = c.ws.Close(why.code, why.reason)
	cancel()
	<-readerDone
	<-subscriberDone
	<-pingerDone
	for t := range c.topics {
		c.srv.d.Bus.Unsubscribe(t, c)
	}
}

// writeLoop writes queued messages until the connection must end, and
// returns how to close it.
func (c *conn) writeLoop(ctx context.Context) closeReason {
	for {
		// A decision to close goes first, ahead of the queued messages, so
		// that the close frame is the next thing the client can read.
		select {
		case why := <-c.kill:
			return why
		default:
		}
		select {
		case msg := <-c.send:
			wctx, cancel := context.WithTimeout(ctx, c.srv.d.WriteTimeout)
			err := c.ws.Write(wctx, websocket.MessageText, msg)
			timedOut := ctx.Err() == nil && wctx.Err() != nil
			cancel()
			if timedOut {
				return closeReason{websocket.StatusPolicyViolation, "write timed out"}
			} else if err != nil {
				return closeReason{websocket.StatusNormalClosure, ""}
			}
		case why := <-c.kill:
			return why
		case <-ctx.Done():
			return closeReason{websocket.StatusNormalClosure, ""}
		}
	}
}

// pinger pings every PingInterval until ctx ends, and fails the connection
// when a pong does not come within PongTimeout. It is apart from the
// writer, which goes on writing while a pong is awaited: on a busy topic a
// client far away would otherwise let its send buffer fill.
func (c *conn) pinger(ctx context.Context) {
	tick := time.NewTicker(c.srv.d.PingInterval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		pctx, cancel := context.WithTimeout(ctx, c.srv.d.PongTimeout)
		err := c.ws.Ping(pctx)
		cancel()
		if err != nil && ctx.Err() == nil {
			c.fail(websocket.StatusPolicyViolation, "pong not received")
			return
		}
	}
}

// subscriber carries out the client's requests, and tells it of the
// topics the bus lost, until the reader ends.
func (c *conn) subscriber(ctx context.Context) {
	for {
		select {
		case r, ok := <-c.requests:
			if !ok {
				return
			}
			if ctx.Err() != nil {
				continue // drained: the connection is ending
			}
			// Losses first, so that a request is answered as the topic
			// stands now.
			c.tellLost(ctx)
			if r.unsubscribe {
				c.unsubscribe(r.topic)
			} else {
				c.subscribe(ctx, r)
			}
		case cf := <-c.confirms:
			c.confirm(cf)
		case <-c.lostWake:
			c.tellLost(ctx)
		}
	}
}

// readLoop handles the client's control messages until the connection
// ends. Reading also answers the client's pings and receives our pongs.
func (c *conn) readLoop(ctx context.Context) {
	for {
		_, data, err := c.ws.Read(ctx)
		if err != nil {
			return
		}
		var m clientMessage
		if err := json.Unmarshal(data, &m); err != nil {
			c.reply(serverMessage{Type: "error", Error: furrow.EINVALID, Reason: "A message must be a JSON object with type and topic."})
			continue
		}
		t, err := ParseTopic(m.Topic)
		if err != nil {
			c.replyError(m.Topic, err)
			continue
		}
		var r request
		switch m.Type {
		case "subscribe":
			r = request{topic: t}
		case "unsubscribe":
			r = request{topic: t, unsubscribe: true}
		default:
			c.reply(serverMessage{Type: "error", Topic: m.Topic, Error: furrow.EINVALID, Reason: "The type must be subscribe or unsubscribe."})
			continue
		}
		select {
		case c.requests <- r:
		default:
			c.fail(websocket.StatusPolicyViolation, reasonTooManyRequests)
			return
		}
	}
}

// pendingWatch is a subscription the bus has not confirmed: ready closes
// when it does, cancel ends the wait for it.
type pendingWatch struct {
	ready  <-chan struct{}
	cancel context.CancelFunc
}

// confirmation says that the wait on ready of topic ended.
type confirmation struct {
	topic Topic
	ready <-chan struct{}
}

// subscribe authorizes (unless r is an initial topic, authorized already)
// and subscribes one topic and tells the client.
func (c *conn) subscribe(ctx context.Context, r request) {
	t := r.topic
	if _, ok := c.topics[t]; ok {
		c.answerHeld(t)
		return
	}
	if len(c.topics) >= MaxTopics {
		c.replyError(t.String(), errTooManyTopics)
		return
	}
	if !r.authorized {
		if err := c.authorize(ctx, t); err != nil {
			c.replyError(t.String(), err)
			return
		}
	}
	ready := c.srv.d.Bus.Watch(t, c)
	c.topics[t] = struct{}{}
	wait := time.NewTimer(subscribeWait)
	defer wait.Stop()
	select {
	case <-ready:
		c.reply(serverMessage{Type: "subscribed", Topic: t.String()})
		return
	case <-ctx.Done():
		return
	case <-wait.C:
	}
	c.replyBusError(t, busUnavailable)
	c.await(ctx, t, ready)
}

// answerHeld answers a subscribe of a topic subscribed already as it
// stands: subscribed once the bus confirmed it, the bus's error while it
// has not, so that a client retrying after that error is not told it is
// live before it is.
func (c *conn) answerHeld(t Topic) {
	if p, waiting := c.pending[t]; waiting {
		if !isClosed(p.ready) {
			c.replyBusError(t, busUnavailable)
			return
		}
		c.settle(t) // answered here rather than when its confirmation comes
	}
	c.reply(serverMessage{Type: "subscribed", Topic: t.String()})
}

// tellLost tells the client, for each of its topics that the bus lost,
// that it may miss messages (unless the bus's error was its last word on
// the topic), and confirms the topic once the bus does.
func (c *conn) tellLost(ctx context.Context) {
	c.mu.Lock()
	lost := c.lost
	if len(lost) > 0 {
		c.lost = make(map[Topic]struct{})
	}
	c.mu.Unlock()
	for t := range lost {
		if _, ok := c.topics[t]; !ok {
			continue // unsubscribed meanwhile
		}
		if _, waiting := c.pending[t]; !waiting {
			c.replyBusError(t, busLost)
		}
		c.await(ctx, t, c.srv.d.Bus.Watch(t, c))
	}
}

// await makes t wait on ready, in place of any wait it had: once ready
// closes the subscriber goroutine is asked to confirm t.
func (c *conn) await(ctx context.Context, t Topic, ready <-chan struct{}) {
	c.settle(t)
	pctx, cancel := context.WithCancel(ctx)
	c.pending[t] = pendingWatch{ready: ready, cancel: cancel}
	go func() {
		select {
		case <-ready:
		case <-pctx.Done():
			return
		}
		select {
		case c.confirms <- confirmation{topic: t, ready: ready}:
		case <-pctx.Done():
		}
	}()
}

// confirm answers subscribed for a topic whose wait ended, if it still
// waits on it: not after an unsubscribe, nor for a wait replaced since.
func (c *conn) confirm(cf confirmation) {
	if p, ok := c.pending[cf.topic]; ok && p.ready == cf.ready {
		c.settle(cf.topic)
		c.reply(serverMessage{Type: "subscribed", Topic: cf.topic.String()})
	}
}

// settle ends the wait of t, if it has one.
func (c *conn) settle(t Topic) {
	if p, ok := c.pending[t]; ok {
		p.cancel()
		delete(c.pending, t)
	}
}

func (c *conn) unsubscribe(t Topic) {
	if _, ok := c.topics[t]; ok {
		delete(c.topics, t)
		c.settle(t)
		c.srv.d.Bus.Unsubscribe(t, c)
	}
	c.reply(serverMessage{Type: "unsubscribed", Topic: t.String()})
}

// replyBusError tells the client that the bus cannot carry t now.
func (c *conn) replyBusError(t Topic, reason string) {
	c.reply(serverMessage{Type: "error", Topic: t.String(), Error: furrow.EINTERNAL, Reason: reason})
}

// replyError tells the client why a request failed; internal errors are
// logged and reported without detail.
func (c *conn) replyError(topic string, err error) {
	var fe *furrow.Error
	if !errors.As(err, &fe) && !errors.Is(err, context.Canceled) {
		c.srv.d.Logger.Error("live: subscription failed", "topic", topic, "err", err)
	}
	c.reply(serverMessage{Type: "error", Topic: topic, Error: furrow.ErrorCode(err), Reason: furrow.ErrorMessage(err)})
}

func (c *conn) reply(m serverMessage) {
	b, err := json.Marshal(m)
	if err == nil {
		c.queue(b)
	}
}
