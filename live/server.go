package live

import (
	"context"
	"encoding/base64"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"
	"github.com/furrowhq/furrow"
	"github.com/google/uuid"
)

// Subprotocol is the WebSocket subprotocol the server selects. Browsers,
// which cannot set headers on a WebSocket, offer it together with
// BearerProtocolPrefix+token.
const Subprotocol = "furrow.v1"

// BearerProtocolPrefix starts the offered subprotocol that carries a user
// token, for clients that cannot send an Authorization header.
const BearerProtocolPrefix = "furrow.bearer."

// Defaults of the tunables in Deps.
const (
	DefaultSendBuffer   = 256
	DefaultWriteTimeout = 10 * time.Second
	DefaultPingInterval = 20 * time.Second
	DefaultPongTimeout  = 10 * time.Second
	// MaxTopics bounds the topics of one connection.
	MaxTopics = 64
	// MaxConnsPerUser bounds the open connections of one user on one
	// server: each holds goroutines, a send buffer and a file descriptor,
	// and one user needs a few (a tab or device each).
	MaxConnsPerUser = 16
	// ConnLimitRetryAfter is when a user refused for MaxConnsPerUser may
	// try again: a connection is freed only when a client closes one, so
	// this is a pace for a client that reconnects in a loop, not a promise.
	ConnLimitRetryAfter = 10 * time.Second
)

// Deps are what the WebSocket server needs. Bus is required; zero tunables
// take the defaults above.
type Deps struct {
	Bus    *Bus
	Logger *slog.Logger
	// Clock times the connections' subscribe limit, remembered membership
	// checks and duplicate suppression; nil is the system clock.
	Clock furrow.Clock

	// SendBuffer is the number of messages queued per connection; a client
	// that lets it fill is disconnected with close code 1008.
	SendBuffer int
	// WriteTimeout bounds one write to a client.
	WriteTimeout time.Duration
	// PingInterval is how often the server pings; PongTimeout how long it
	// waits for the pong before closing.
	PingInterval time.Duration
	PongTimeout  time.Duration
}

// Server holds the live WebSocket connections. Create it with NewServer;
// the API authenticates each request and hands it over with Accept.
type Server struct {
	d Deps

	mu      sync.Mutex
	conns   map[*conn]struct{}
	perUser map[uuid.UUID]int // connections accepted or being accepted
	closing bool
	wg      sync.WaitGroup

	slowClosed atomic.Uint64
}

// Stats are counters of a Server.
type Stats struct {
	// Open is the number of open connections.
	Open int
	// SlowClosed counts connections closed because the client was too
	// slow: its send buffer filled, a write timed out, or a pong did not
	// come back.
	SlowClosed uint64
}

// NewServer returns the server of the WebSocket endpoint. Call Shutdown
// when the HTTP server stops: hijacked connections are not closed by
// http.Server.Shutdown.
func NewServer(d Deps) *Server {
	if d.Logger == nil {
		d.Logger = slog.Default()
	}
	if d.Clock == nil {
		d.Clock = furrow.SystemClock{}
	}
	d.SendBuffer = orDefault(d.SendBuffer, DefaultSendBuffer)
	d.WriteTimeout = orDefault(d.WriteTimeout, DefaultWriteTimeout)
	d.PingInterval = orDefault(d.PingInterval, DefaultPingInterval)
	d.PongTimeout = orDefault(d.PongTimeout, DefaultPongTimeout)
	return &Server{d: d, conns: make(map[*conn]struct{}), perUser: make(map[uuid.UUID]int)}
}

func orDefault[T int | time.Duration](v, def T) T {
	if v <= 0 {
		return def
	}
	return v
}

func (s *Server) now() time.Time { return s.d.Clock.Now() }

// Stats returns the server's counters.
func (s *Server) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return Stats{Open: len(s.conns), SlowClosed: s.slowClosed.Load()}
}

// Client is an authenticated user's request for a connection: the user,
// whose connections count against MaxConnsPerUser, its initial topics, and
// the check of each topic it subscribes to, which says why a topic is
// refused. Authorize's answer must depend on the topic's farm only: Accept
// checks one initial topic per farm, and a connection remembers a farm's
// answer (nil or a *furrow.Error) for a short while.
type Client struct {
	User      uuid.UUID
	Topics    []Topic
	Authorize func(ctx context.Context, t Topic) error
}

var (
	errNotUpgrade   = furrow.Errorf(furrow.EINVALID, "This endpoint expects a WebSocket upgrade.")
	errTooManyConns = furrow.Errorf(furrow.ERATELIMITED,
		"A user may have at most %d live connections open on one server; close one first.", MaxConnsPerUser)
)

// Accept upgrades the request of an authenticated client and serves the
// connection until it ends. Before the upgrade it checks, in this order,
// the handshake (EINVALID), the user's open connections (ERATELIMITED,
// see ConnLimitRetryAfter) and each farm of the initial topics
// (Authorize's error, with the request's context), and returns the first
// failure before anything is written, for the caller to answer. Once the
// upgrade is attempted Accept answers itself and returns nil. The session
// does not use the request's context, which may carry a deadline for the
// work before the upgrade.
func (s *Server) Accept(w http.ResponseWriter, r *http.Request, cl Client) error {
	if err := checkHandshake(w, r); err != nil {
		return err
	}
	if !s.reserve(cl.User) {
		return errTooManyConns
	}
	defer s.release(cl.User)
	checkedAt := s.now()
	var farms []uuid.UUID
	for _, t := range cl.Topics {
		if slices.Contains(farms, t.Farm) {
			continue
		}
		farms = append(farms, t.Farm)
		if err := cl.Authorize(r.Context(), t); err != nil {
			return err
		}
	}
	ws, err := websocket.Accept(w, r, &websocket.AcceptOptions{
		Subprotocols: []string{Subprotocol},
		// Any origin may connect. An origin check protects a credential
		// the browser adds by itself (a cookie); this endpoint takes none,
		// only an Authorization header or the bearer subprotocol, which a
		// page can send only if it holds the token. The check would only
		// refuse browser apps served from another origin.
		InsecureSkipVerify: true,
	})
	if err != nil {
		return nil // Accept wrote the response.
	}
	c := newConn(s, ws, cl.Authorize, farms, checkedAt)
	if !s.register(c) {
		ws.Close(websocket.StatusGoingAway, "server shutting down")
		return nil
	}
	defer s.unregister(c)
	c.run(cl.Topics)
	return nil
}

// checkHandshake refuses, as EINVALID, a request that websocket.Accept
// would answer in plain text, so that the client gets the API's JSON
// error. A wrong version also names the one supported, as RFC 6455 asks.
func checkHandshake(w http.ResponseWriter, r *http.Request) error {
	if r.Method != http.MethodGet || !headerHasToken(r.Header, "Connection", "upgrade") ||
		!headerHasToken(r.Header, "Upgrade", "websocket") {
		return errNotUpgrade
	}
	if !r.ProtoAtLeast(1, 1) {
		return furrow.Errorf(furrow.EINVALID, "A WebSocket handshake needs HTTP/1.1.")
	}
	if r.Header.Get("Sec-WebSocket-Version") != websocketVersion {
		w.Header().Set("Sec-WebSocket-Version", websocketVersion)
		return furrow.Errorf(furrow.EINVALID, "The header Sec-WebSocket-Version must be %s.", websocketVersion)
	}
	keys := r.Header.Values("Sec-WebSocket-Key")
	if len(keys) != 1 {
		return errHandshakeKey
	}
	if key, err := base64.StdEncoding.DecodeString(strings.TrimSpace(keys[0])); err != nil || len(key) != handshakeKeyLen {
		return errHandshakeKey
	}
	return nil
}

const (
	// websocketVersion is the only WebSocket version (RFC 6455).
	websocketVersion = "13"
	// handshakeKeyLen is the bytes of a Sec-WebSocket-Key nonce.
	handshakeKeyLen = 16
)

var errHandshakeKey = furrow.Errorf(furrow.EINVALID,
	"The header Sec-WebSocket-Key must be sent once, a base64-encoded %d-byte nonce.", handshakeKeyLen)

// reserve counts a connection of user, unless the user has
// MaxConnsPerUser already.
func (s *Server) reserve(user uuid.UUID) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.perUser[user] >= MaxConnsPerUser {
		return false
	}
	s.perUser[user]++
	return true
}

// release uncounts a connection reserve counted.
func (s *Server) release(user uuid.UUID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.perUser[user]--; s.perUser[user] <= 0 {
		delete(s.perUser, user)
	}
}

func headerHasToken(h http.Header, key, token string) bool {
	for _, v := range h.Values(key) {
		for _, t := range strings.Split(v, ",") {
			if strings.EqualFold(strings.TrimSpace(t), token) {
				return true
			}
		}
	}
	return false
}

func (s *Server) register(c *conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing {
		return false
	}
	s.conns[c] = struct{}{}
	s.wg.Add(1)
	return true
}

func (s *Server) unregister(c *conn) {
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
	s.wg.Done()
}

// Shutdown closes every connection with close code 1001 (going away) and
// refuses new ones; it waits for them to end until ctx is done, returning
// the context's error then.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	s.closing = true
	for c := range s.conns {
		c.fail(websocket.StatusGoingAway, "server shutting down")
	}
	s.mu.Unlock()
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
