package live

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
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
)

// Deps are what the WebSocket handler needs. Users, Farms and Bus are
// required; zero tunables take the defaults above.
type Deps struct {
	Users  furrow.UserService
	Farms  furrow.FarmService
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

// Server serves GET /api/live. Create it with Handler.
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

// Handler returns the WebSocket handler for GET /api/live?topic=T (topic
// optional and repeatable). Its errors before the upgrade are JSON
// {error, reason}: 401 unauthorized for a missing or invalid user token,
// 400 bad_request for a bad topic or a request that is not a WebSocket
// upgrade, 403 forbidden when the user is not a member of a topic's farm.
// Call Shutdown when the HTTP server stops: hijacked connections are not
// closed by http.Server.Shutdown.
func Handler(d Deps) *Server {
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

// ServeHTTP authenticates, authorizes the topics, upgrades and serves the
// connection until it ends.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	user, err := s.authenticate(r)
	if err != nil {
		s.writeError(w, err)
		return
	}
	topics, err := s.initialTopics(r.Context(), r, user)
	if err != nil {
		s.writeError(w, err)
		return
	}
	if !isUpgrade(r) {
		s.writeError(w, furrow.Errorf(furrow.EINVALID, "this endpoint expects a WebSocket upgrade"))
		return
	}
	ws, err := websocket.Accept(w, r, &websocket.AcceptOptions{
		Subprotocols:   []string{Subprotocol},
		OriginPatterns: s.d.OriginPatterns,
	})
	if err != nil {
		return // Accept wrote the response.
	}
	c := newConn(s, ws, user.ID)
	if !s.register(c) {
		ws.Close(websocket.StatusGoingAway, "server shutting down")
		return
	}
	defer s.unregister(c)
	c.run(topics)
}

// initialTopics parses and authorizes the topic query parameters.
func (s *Server) initialTopics(ctx context.Context, r *http.Request, user furrow.User) ([]Topic, error) {
	raw := r.URL.Query()["topic"]
	if len(raw) > MaxTopics {
		return nil, furrow.Errorf(furrow.EINVALID, "at most %d topics per connection", MaxTopics)
	}
	topics := make([]Topic, 0, len(raw))
	for _, q := range raw {
		t, err := ParseTopic(q)
		if err != nil {
			return nil, err
		}
		topics = append(topics, t)
	}
	for _, t := range topics {
		if err := s.authorize(ctx, user.ID, t); err != nil {
			return nil, err
		}
	}
	return topics, nil
}

// authenticate finds the user of the request's token: the Authorization
// header, else the bearer subprotocol. It returns an EUNAUTHORIZED error
// when there is none or it is unknown.
func (s *Server) authenticate(r *http.Request) (furrow.User, error) {
	token := bearerToken(r)
	if token == "" {
		return furrow.User{}, furrow.Errorf(furrow.EUNAUTHORIZED,
			"credential missing: send Authorization: Bearer <user token> or offer the subprotocol %s<user token>", BearerProtocolPrefix)
	}
	u, err := s.d.Users.UserByToken(r.Context(), token)
	switch code := furrow.ErrorCode(err); code {
	case "":
		return u, nil
	case furrow.EUNAUTHORIZED, furrow.ENOTFOUND:
		return furrow.User{}, furrow.Errorf(furrow.EUNAUTHORIZED, "credential invalid: the user token is unknown or revoked")
	default:
		return furrow.User{}, err
	}
}

func bearerToken(r *http.Request) string {
	if h := r.Header.Get("Authorization"); h != "" {
		scheme, tok, ok := strings.Cut(h, " ")
		if ok && strings.EqualFold(scheme, "Bearer") {
			return strings.TrimSpace(tok)
		}
		return ""
	}
	for _, v := range r.Header.Values("Sec-WebSocket-Protocol") {
		for _, p := range strings.Split(v, ",") {
			if tok, ok := strings.CutPrefix(strings.TrimSpace(p), BearerProtocolPrefix); ok {
				return tok
			}
		}
	}
	return ""
}

// authorize checks that the user is at least a viewer of the topic's farm;
// otherwise it returns an EFORBIDDEN error (the same for a farm that does
// not exist, so that existence does not leak).
func (s *Server) authorize(ctx context.Context, user uuid.UUID, t Topic) error {
	role, err := s.d.Farms.MemberRole(ctx, t.Farm, user)
	if furrow.ErrorCode(err) == furrow.ENOTFOUND || (err == nil && role < furrow.RoleViewer) {
		return furrow.Errorf(furrow.EFORBIDDEN, "not a member of the farm of topic %s", t)
	}
	return err
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

var statusOf = map[string]int{
	furrow.EINVALID:      http.StatusBadRequest,
	furrow.EUNAUTHORIZED: http.StatusUnauthorized,
	furrow.EFORBIDDEN:    http.StatusForbidden,
	furrow.ENOTFOUND:     http.StatusNotFound,
}

// writeError writes err as {error, reason}; errors that are not a
// *furrow.Error are logged and answered 500 internal_error.
func (s *Server) writeError(w http.ResponseWriter, err error) {
	code := furrow.ErrorCode(err)
	status, ok := statusOf[code]
	if !ok {
		status = http.StatusInternalServerError
		var fe *furrow.Error
		if !errors.As(err, &fe) {
			s.d.Logger.Error("live: request failed", "err", err)
		}
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(errorBody{Error: code, Reason: furrow.ErrorMessage(err)})
}

type errorBody struct {
	Error  string `json:"error"`
	Reason string `json:"reason,omitempty"`
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
