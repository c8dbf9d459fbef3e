package live

import (
	"context"
	"encoding/json"
	"errors"
	"hash/maphash"
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

// conn is one WebSocket client. Its writer goroutine is the only one that
// writes, so replies and data leave in order; Send never blocks the hub.
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
	// holds the wait of each topic whose confirmation did not come in time.
	requests chan request
	topics   map[Topic]struct{}
	pending  map[Topic]pendingWatch
	// recent holds the hashes of the last data messages sent, so that a
	// reading matching several of the connection's topics is sent once;
	// hashes, not copies, since an event's message may be 64 KiB and every
	// connection would hold sixteen.
	mu     sync.Mutex
	recent [recentMessages]uint64
	next   int
}

// recentMessages bounds the duplicate check: a reading's topics are
// published one right after the other.
const recentMessages = 16

// recentSeed seeds the hashes of recent messages, one per process: two
// different messages share a 64-bit hash about once in 2^64 pairs.
var recentSeed = maphash.MakeSeed()

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

// Send queues a data message without blocking, once even when it matches
// several of the connection's topics.
func (c *conn) Send(msg []byte) {
	if !c.seen(msg) {
		c.queue(msg)
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

// seen reports whether msg was among the recent data messages, and
// remembers it.
func (c *conn) seen(msg []byte) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	h := maphash.Bytes(recentSeed, msg)
	for _, r := range c.recent {
		if r == h {
			return true
		}
	}
	c.recent[c.next] = h
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
		for r := range c.requests {
			if ctx.Err() != nil {
				continue // drained: the connection is ending
			}
			if r.unsubscribe {
				c.unsubscribe(r.topic)
			} else {
				c.subscribe(ctx, r)
			}
		}
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
	for t := range c.topics {
		c.srv.d.Bus.Unsubscribe(t, c)
	}
}

// writeLoop writes queued messages and pings until the connection must
// end, and returns how to close it.
func (c *conn) writeLoop(ctx context.Context) closeReason {
	ping := time.NewTicker(c.srv.d.PingInterval)
	defer ping.Stop()
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
		case <-ping.C:
			pctx, cancel := context.WithTimeout(ctx, c.srv.d.PongTimeout)
			err := c.ws.Ping(pctx)
			cancel()
			if err != nil && ctx.Err() == nil {
				return closeReason{websocket.StatusPolicyViolation, "pong not received"}
			}
		case why := <-c.kill:
			return why
		case <-ctx.Done():
			return closeReason{websocket.StatusNormalClosure, ""}
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

// pendingWatch is a subscription the bus has not confirmed in time: ready
// closes when it does, cancel ends the wait for it.
type pendingWatch struct {
	ready  <-chan struct{}
	cancel context.CancelFunc
}

// subscribe authorizes (unless r is an initial topic, authorized already)
// and subscribes one topic and tells the client. A topic subscribed
// already is answered as it stands: subscribed once the bus confirmed it,
// the bus's error while it has not, so that a client retrying after that
// error is not told it is live before it is.
func (c *conn) subscribe(ctx context.Context, r request) {
	t := r.topic
	if _, ok := c.topics[t]; ok {
		if p, waiting := c.pending[t]; waiting {
			select {
			case <-p.ready:
			default:
				c.reply(serverMessage{Type: "error", Topic: t.String(), Error: furrow.EINTERNAL, Reason: busUnavailable})
				return
			}
		}
		c.reply(serverMessage{Type: "subscribed", Topic: t.String()})
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
	c.reply(serverMessage{Type: "error", Topic: t.String(), Error: furrow.EINTERNAL, Reason: busUnavailable})
	pctx, cancel := context.WithCancel(ctx)
	c.pending[t] = pendingWatch{ready: ready, cancel: cancel}
	go func() {
		select {
		case <-ready:
			c.reply(serverMessage{Type: "subscribed", Topic: t.String()})
		case <-pctx.Done():
		}
	}()
}

func (c *conn) unsubscribe(t Topic) {
	if _, ok := c.topics[t]; ok {
		delete(c.topics, t)
		if p, ok := c.pending[t]; ok {
			p.cancel()
			delete(c.pending, t)
		}
		c.srv.d.Bus.Unsubscribe(t, c)
	}
	c.reply(serverMessage{Type: "unsubscribed", Topic: t.String()})
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
