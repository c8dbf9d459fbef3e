package live

import (
	"context"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"
	"github.com/furrowhq/furrow"
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
)

// Deps are what the WebSocket server needs. Bus is required; zero tunables
// take the defaults above.
type Deps struct {
	Bus    *Bus
	Logger *slog.Logger

	// SendBuffer is the number of messages queued per connection; a client
	// that lets it fill is disconnected with close code 1008.
	SendBuffer int
	// WriteTimeout bounds one write to a client.
	WriteTimeout time.Duration
	// PingInterval is how often the server pings; PongTimeout how long it
	// waits for the pong before closing.
	PingInterval time.Duration
	PongTimeout  time.Duration
	// OriginPatterns lists extra browser origins allowed to connect (see
	// websocket.AcceptOptions); the page's own origin is always allowed.
	OriginPatterns []string
}

// Server holds the live WebSocket connections. Create it with NewServer;
// the API authenticates each request and hands it over with Accept.
type Server struct {
	d Deps

	mu      sync.Mutex
	conns   map[*conn]struct{}
	closing bool
	wg      sync.WaitGroup

	slowClosed atomic.Uint64
}

// Stats are counters of a Server.
type Stats struct {
	// Open is the number of open connections.
	Open int
	// SlowClosed counts connections closed because their send buffer filled
	// or a pong did not come back.
	SlowClosed uint64
}

// NewServer returns the server of the WebSocket endpoint. Call Shutdown
// when the HTTP server stops: hijacked connections are not closed by
// http.Server.Shutdown.
func NewServer(d Deps) *Server {
	if d.Logger == nil {
		d.Logger = slog.Default()
	}
	d.SendBuffer = orDefault(d.SendBuffer, DefaultSendBuffer)
	d.WriteTimeout = orDefault(d.WriteTimeout, DefaultWriteTimeout)
	d.PingInterval = orDefault(d.PingInterval, DefaultPingInterval)
	d.PongTimeout = orDefault(d.PongTimeout, DefaultPongTimeout)
	return &Server{d: d, conns: make(map[*conn]struct{})}
}

func orDefault[T int | time.Duration](v, def T) T {
	if v <= 0 {
		return def
	}
	return v
}

// Stats returns the server's counters.
func (s *Server) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return Stats{Open: len(s.conns), SlowClosed: s.slowClosed.Load()}
}

// Client is an authenticated user's request for a connection: its initial
// topics, already authorized, and the check of each topic it subscribes to
// (initial ones included), which says why a topic is refused.
type Client struct {
	Topics    []Topic
	Authorize func(ctx context.Context, t Topic) error
}

// Accept upgrades the request of an authenticated client and serves the
// connection until it ends. A request that is not a WebSocket upgrade is
// an EINVALID error, returned before anything is written, for the caller
// to answer; once the upgrade is attempted Accept answers itself and
// returns nil.
func (s *Server) Accept(w http.ResponseWriter, r *http.Request, cl Client) error {
	if !isUpgrade(r) {
		return furrow.Errorf(furrow.EINVALID, "This endpoint expects a WebSocket upgrade.")
	}
	ws, err := websocket.Accept(w, r, &websocket.AcceptOptions{
		Subprotocols:   []string{Subprotocol},
		OriginPatterns: s.d.OriginPatterns,
	})
	if err != nil {
		return nil // Accept wrote the response.
	}
	c := newConn(s, ws, cl.Authorize)
	if !s.register(c) {
		ws.Close(websocket.StatusGoingAway, "server shutting down")
		return nil
	}
	defer s.unregister(c)
	c.run(cl.Topics)
	return nil
}

func isUpgrade(r *http.Request) bool {
	return r.Method == http.MethodGet && headerHasToken(r.Header, "Connection", "upgrade") &&
		headerHasToken(r.Header, "Upgrade", "websocket")
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
