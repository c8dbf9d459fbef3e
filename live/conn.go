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
	"github.com/google/uuid"
	"golang.org/x/time/rate"
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

const (
	// subscribeBurst and subscribeEvery are a connection's token bucket of
	// subscribes: subscribeBurst at once, then one every subscribeEvery.
	// Each subscribe may cost a membership check, a Redis SUBSCRIBE and an
	// announcement that every process acknowledges, so a client must not
	// repeat them at will; the burst lets it fill its MaxTopics topics at
	// once, and the rate lets it replace all of them in about half a minute.
	subscribeBurst = MaxTopics
	subscribeEvery = 500 * time.Millisecond
	// farmCheckTTL is how long a connection remembers that its user may
	// watch a farm, so that subscribing to more topics of the farm does not
	// check again. It bounds how long a member removed from a farm may
	// still subscribe to its topics on a connection open before.
	farmCheckTTL = time.Minute
)

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
	// requests carries the client's messages from the reader to the
	// subscriber goroutine, which answers them in order and owns topics,
	// pending and farms until it ends: a subscribe may wait seconds on the
	// bus, and the reader must go on reading meanwhile, or the pongs it
	// reads would not be, and the connection would be closed for a missing
	// pong. pending holds the wait of each topic that the client was last
	// told the bus's error for, until the bus confirms it.
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

	// subscribes is the reader's token bucket of subscribe messages.
	subscribes *rate.Limiter
	// farms holds the farms the user may watch, each until its check
	// expires, at most MaxTopics of them.
	farms map[uuid.UUID]time.Time

	mu   sync.Mutex // guards lost and sent
	lost map[Topic]struct{}
	// sent remembers the publications sent, so that one matching several
	// of the connection's topics is sent once.
	sent recentIDs
}

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

// newConn returns the connection of ws, whose farms Accept found
// authorized at checkedAt.
func newConn(s *Server, ws *websocket.Conn, authorize func(context.Context, Topic) error, farms []uuid.UUID, checkedAt time.Time) *conn {
	ws.SetReadLimit(maxClientMessage)
	c := &conn{
		srv: s, ws: ws, authorize: authorize,
		send:       make(chan []byte, s.d.SendBuffer),
		kill:       make(chan closeReason, 1),
		requests:   make(chan request, maxRequests),
		topics:     make(map[Topic]struct{}),
		pending:    make(map[Topic]pendingWatch),
		confirms:   make(chan confirmation),
		lostWake:   make(chan struct{}, 1),
		subscribes: rate.NewLimiter(rate.Every(subscribeEvery), subscribeBurst),
		farms:      make(map[uuid.UUID]time.Time),
		lost:       make(map[Topic]struct{}),
	}
	for _, f := range farms {
		c.remember(f, checkedAt)
	}
	return c
}

// request is one client message for the subscriber goroutine to answer:
// a subscribe (or, with unsubscribe set, an unsubscribe) of topic to carry
// out, or, when refused is set, a message the reader refused, answered
// with refused. authorized marks an initial topic, which Accept checked
// before the upgrade.
type request struct {
	topic       Topic
	unsubscribe bool
	authorized  bool
	refused     *serverMessage
}

// maxRequests bounds the client messages a connection may have waiting to
// be answered: a client past it is closed with 1008, as one too slow to
// read.
const maxRequests = 2 * MaxTopics

// Errors refusing a client message before it is carried out.
var (
	errMalformed     = furrow.Errorf(furrow.EINVALID, "A message must be a JSON object with type and topic.")
	errBadType       = furrow.Errorf(furrow.EINVALID, "The type must be subscribe or unsubscribe.")
	errSubscribeRate = furrow.Errorf(furrow.ERATELIMITED,
		"A connection may send %d subscribes at once, then one every %v; wait, then subscribe again.", subscribeBurst, subscribeEvery)
)

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

// reasonTooManyRequests closes a client that sends messages faster than
// they are answered: a policy violation, but not a slow client.
const reasonTooManyRequests = "too many subscribes waiting"

// queue hands msg to the writer, or disconnects a client too slow to take it.
func (c *conn) queue(msg []byte) {
	select {
	case c.send <- msg:
	default:
		c.fail(websocket.StatusPolicyViolation, "send buffer full: client too slow")
	}
}

// seen reports whether publication id was sent already (see recentIDs),
// and remembers it.
func (c *conn) seen(id uint64) bool {
	now := c.srv.now()
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sent.seen(id, now)
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
			switch {
			case r.refused != nil:
				c.reply(*r.refused)
			case r.unsubscribe:
				c.unsubscribe(r.topic)
			default:
				c.subscribe(ctx, r)
			}
		case cf := <-c.confirms:
			c.confirm(cf)
		case <-c.lostWake:
			c.tellLost(ctx)
		}
	}
}

// readLoop hands the client's control messages to the subscriber
// goroutine until the connection ends, refused ones too, so that every
// message is answered in the order it came. Reading also answers the
// client's pings and receives our pongs.
func (c *conn) readLoop(ctx context.Context) {
	for {
		_, data, err := c.ws.Read(ctx)
		if err != nil {
			return
		}
		select {
		case c.requests <- c.parse(data):
		default:
			c.fail(websocket.StatusPolicyViolation, reasonTooManyRequests)
			return
		}
	}
}

// parse returns the request of a client message. A refused message's
// error names its topic when it has one: json.Unmarshal fills the members
// it can even when another has the wrong type.
func (c *conn) parse(data []byte) request {
	var m clientMessage
	if err := json.Unmarshal(data, &m); err != nil {
		return refusal(m.Topic, errMalformed)
	}
	t, err := ParseTopic(m.Topic)
	if err != nil {
		return refusal(m.Topic, err)
	}
	switch m.Type {
	case "subscribe":
		// Only subscribes are counted: an unsubscribe undoes one, and of a
		// topic not held it costs nothing.
		if !c.subscribes.AllowN(c.srv.now(), 1) {
			return refusal(m.Topic, errSubscribeRate)
		}
		return request{topic: t}
	case "unsubscribe":
		return request{topic: t, unsubscribe: true}
	}
	return refusal(m.Topic, errBadType)
}

// refusal is the request that answers a message about topic with err.
func refusal(topic string, err error) request {
	m := errorMessage(topic, err)
	return request{refused: &m}
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
		if err := c.mayWatch(ctx, t); err != nil {
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

// mayWatch checks that the client may watch t: by the remembered grant of
// t's farm while it holds, else with authorize.
func (c *conn) mayWatch(ctx context.Context, t Topic) error {
	now := c.srv.now()
	if until, ok := c.farms[t.Farm]; ok && now.Before(until) {
		return nil
	}
	err := c.authorize(ctx, t)
	// Only a grant is remembered: a refusal's reason names its own topic,
	// and a user added to the farm meanwhile is let in at once; a failed
	// check (the store's error, a timeout) says nothing of the farm.
	// Refusals are paced by the subscribe limit instead.
	if err == nil {
		c.remember(t.Farm, now)
	}
	return err
}

// remember keeps the grant of farm checked at, dropping expired ones to
// make room; with MaxTopics farms remembered still, it is not kept: the
// connection cannot hold topics of more farms than that.
func (c *conn) remember(farm uuid.UUID, at time.Time) {
	if _, ok := c.farms[farm]; !ok && len(c.farms) >= MaxTopics {
		for f, until := range c.farms {
			if !at.Before(until) {
				delete(c.farms, f)
			}
		}
		if len(c.farms) >= MaxTopics {
			return
		}
	}
	c.farms[farm] = at.Add(farmCheckTTL)
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
	c.reply(errorMessage(topic, err))
}

// errorMessage is the error message about topic ("" for none) that err
// tells the client.
func errorMessage(topic string, err error) serverMessage {
	return serverMessage{Type: "error", Topic: topic, Error: furrow.ErrorCode(err), Reason: furrow.ErrorMessage(err)}
}

func (c *conn) reply(m serverMessage) {
	b, err := json.Marshal(m)
	if err == nil {
		c.queue(b)
	}
}
