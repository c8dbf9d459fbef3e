package api

import (
	"context"
	"encoding/binary"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/url"
	"runtime/debug"
	"time"

	"github.com/furrowhq/furrow"
	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"
	"github.com/google/uuid"
)

type ctxKey int

const (
	requestIDKey ctxKey = iota
	userKey
	farmKey
	roleKey
)

// RequestID returns the id given to the request by the API, or "".
func RequestID(ctx context.Context) string {
	id, _ := ctx.Value(requestIDKey).(string)
	return id
}

// requestID gives every request a fresh id, returned in X-Request-Id so that
// a client's report can be matched with the logs. A client-sent id is not
// trusted.
func requestID(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := newRequestID()
		w.Header().Set("X-Request-Id", id)
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), requestIDKey, id)))
	})
}

// newRequestID returns a random version-4 UUID from the runtime's
// generator: an id only tells requests apart, so it needs no crypto/rand
// read.
func newRequestID() string {
	var u uuid.UUID
	binary.LittleEndian.PutUint64(u[:8], rand.Uint64())
	binary.LittleEndian.PutUint64(u[8:], rand.Uint64())
	u[6] = u[6]&0x0f | 0x40 // version 4
	u[8] = u[8]&0x3f | 0x80 // RFC 4122 variant
	return u.String()
}

// logRequests logs method, path, status and duration of every request,
// and "aborted" for one whose handler cut the connection
// (http.ErrAbortHandler), with status 0 when it was cut before its status
// was sent (a body that stopped coming). It never logs headers or the
// query, where credentials could travel.
func (s *server) logRequests(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := s.Clock.Now()
		ww := middleware.NewWrapResponseWriter(w, r.ProtoMajor)
		aborted := true // until the handler returns
		defer func() {
			status := ww.Status()
			if status == 0 && !aborted {
				status = http.StatusOK
			}
			// LogAttrs: the same record as InfoContext, without boxing each value.
			attrs := []slog.Attr{slog.String("request_id", RequestID(r.Context())),
				slog.String("method", r.Method), slog.String("path", r.URL.Path), slog.Int("status", status),
				slog.Int64("duration_ms", s.Clock.Now().Sub(start).Milliseconds())}
			if aborted {
				attrs = append(attrs, slog.Bool("aborted", true))
			}
			s.Logger.LogAttrs(r.Context(), slog.LevelInfo, "request", attrs...)
		}()
		next.ServeHTTP(ww, r)
		aborted = false
	})
}

// recoverer turns a panic into an internal_error answer and a log line with
// the stack, so that a bug never drops the connection without a response.
func (s *server) recoverer(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			rec := recover()
			if rec == nil {
				return
			}
			if rec == http.ErrAbortHandler {
				panic(rec)
			}
			s.Logger.ErrorContext(r.Context(), "panic", "request_id", RequestID(r.Context()),
				"method", r.Method, "path", r.URL.Path, "panic", rec, "stack", string(debug.Stack()))
			if ww, ok := w.(middleware.WrapResponseWriter); ok && ww.Status() != 0 {
				return // the response has begun; nothing more can be said
			}
			writeJSON(w, http.StatusInternalServerError, errorBody{furrow.EINTERNAL, internalReason})
		}()
		next.ServeHTTP(w, r)
	})
}

// livePath is the WebSocket endpoint. Its request, up to the upgrade (the
// token's lookup, the farms' checks), is bounded by the request deadline
// like any other; the session after it outlives the deadline because it
// does not use the request's context (see untimed and live.Server).
const livePath = "/api/live"

// deadline gives each request's context the configured deadline, so that
// a silent PostgreSQL or Redis ends in an answer instead of a wait. Reading
// a body starts it again (readBody), so that the time a slow client takes
// to send one, bounded by the server's read timeout, is not taken from
// the work.
func (s *server) deadline(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		d := &requestDeadline{base: r.Context(), timeout: s.cfg.RequestTimeout, write: s.cfg.WriteTimeout}
		defer d.stop()
		next.ServeHTTP(w, r.WithContext(d.start(context.WithValue(r.Context(), deadlineKey{}, d))))
	})
}

// deadlineKey keys the request's *requestDeadline.
type deadlineKey struct{}

// requestDeadline is the deadline that deadline gave a request.
type requestDeadline struct {
	// base is the request's context as it was before its deadline: ended
	// when the client goes, not by time.
	base    context.Context
	timeout time.Duration
	write   time.Duration // the server's write timeout
	cancel  func()        // ends the current deadline
}

// start returns a context with ctx's values (the request id, the user,
// the farm) under a fresh deadline of d.timeout that also ends when the
// client goes. The previous deadline ends.
func (d *requestDeadline) start(ctx context.Context) context.Context {
	d.stop()
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), d.timeout)
	unwatch := context.AfterFunc(d.base, cancel)
	d.cancel = func() { unwatch(); cancel() }
	return ctx
}

// stop ends the current deadline, if any.
func (d *requestDeadline) stop() {
	if d.cancel != nil {
		d.cancel()
	}
}

// restartDeadline gives what is left of r's handling the whole request
// deadline again, and its answer the whole write timeout: the server set
// that one when the headers were in, so a body that took most of it would
// leave work done (a reading stored) with no time to say so. It changes r
// in place, so that a handler goes on with the new context without being
// handed it. A writer that cannot move its deadline (a test's) keeps its own.
func restartDeadline(w http.ResponseWriter, r *http.Request) {
	if d, ok := r.Context().Value(deadlineKey{}).(*requestDeadline); ok {
		_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(d.write))
		*r = *r.WithContext(d.start(r.Context()))
	}
}

// stepContext returns a context for one step of a response written in
// steps (a page read of the whole devices list): the request's deadline
// for that step alone, so that a long list is bounded by each step's
// progress rather than by one deadline for the whole; it still ends when
// the client goes.
func (s *server) stepContext(r *http.Request) (context.Context, context.CancelFunc) {
	base := r.Context()
	if d, ok := base.Value(deadlineKey{}).(*requestDeadline); ok {
		base = d.base
	}
	return context.WithTimeout(base, s.cfg.RequestTimeout)
}

// untimed lifts the server's read and write deadlines, which bound one
// request, for a handler that upgrades to a long-lived WebSocket session:
// the hijacked connection keeps them otherwise, and would be cut mid-session.
// The session bounds itself (pings, write timeouts).
func untimed(h http.Handler) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		rc := http.NewResponseController(w)
		_ = rc.SetReadDeadline(time.Time{})
		_ = rc.SetWriteDeadline(time.Time{})
		h.ServeHTTP(w, r)
	}
}

// wellFormedQuery refuses a query string that Go's parser would take only
// in part (a stray %, a ;): the handler would go on without a filter,
// limit or topic the client sent, and answer something else than asked.
// It runs on the routes that read a query, after their credential and
// membership checks, which come first as on every route.
func (s *server) wellFormedQuery(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.RawQuery != "" {
			if _, err := url.ParseQuery(r.URL.RawQuery); err != nil {
				s.fail(w, r, furrow.Errorf(furrow.EINVALID, "The query string is malformed: each parameter must be name=value, percent-encoded, separated by &."))
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// headAsGet routes a HEAD request that mux has no HEAD route for as GET,
// so that every GET route answers HEAD with GET's status and headers
// (RFC 9110, 9.3.2); net/http drops the body and keeps its Content-Length.
// Uptime checkers and load balancers often probe with HEAD. It asks mux
// itself, not the routing context's router: a wrapper that hands the
// router its routing context (telemetry's) leaves that router unset.
func headAsGet(mux chi.Routes) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method != http.MethodHead {
				next.ServeHTTP(w, r) // the readings' path: nothing more to ask
				return
			}
			if rctx := chi.RouteContext(r.Context()); rctx != nil && !mux.Match(chi.NewRouteContext(), http.MethodHead, routePath(r)) {
				rctx.RouteMethod = http.MethodGet
			}
			next.ServeHTTP(w, r)
		})
	}
}

// routePath is the path chi routes r by.
func routePath(r *http.Request) string {
	if r.URL.RawPath != "" {
		return r.URL.RawPath
	}
	return r.URL.Path
}
