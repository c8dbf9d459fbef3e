package telemetry

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"
)

// unmatchedRoute labels requests that matched no route, so that probing
// random paths cannot grow the number of series.
const unmatchedRoute = "unmatched"

// HTTP wraps a chi router so that every request answered is counted and
// timed by its route pattern (never the raw path), method and status code;
// one whose handler panicked before writing got no answer and is left out
// (see answerOf). It must wrap the router itself: it hands the router the
// routing context and reads the matched pattern from it afterwards. A nil
// m returns next unchanged.
func (m *Metrics) HTTP(next http.Handler) http.Handler {
	if m == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		ctx := r.Context()
		rctx := routeContext(&ctx)
		ww := middleware.NewWrapResponseWriter(w, r.ProtoMajor)
		returned := false
		// Deferred, so that a response cut off after its status
		// (http.ErrAbortHandler) is counted too.
		defer func() {
			if code, ok := answerOf(ww, returned); ok {
				m.observeHTTP(routeOf(rctx), methodLabel(r.Method), code, time.Since(start))
			}
		}()
		next.ServeHTTP(ww, r.WithContext(ctx))
		returned = true
	})
}

func (m *Metrics) observeHTTP(route, method string, code int, took time.Duration) {
	m.httpRequests.WithLabelValues(route, method, strconv.Itoa(code)).Inc()
	m.httpDuration.WithLabelValues(route, method).Observe(took.Seconds())
}

// answerOf returns the status code a request was answered with: the one
// written, else 200 when the handler returned, as net/http then answers.
// ok is false when the handler panicked before writing anything: net/http
// then closes the connection and the client gets no answer at all.
func answerOf(ww middleware.WrapResponseWriter, returned bool) (code int, ok bool) {
	if code := ww.Status(); code != 0 {
		return code, true
	}
	return http.StatusOK, returned
}

func routeOf(rctx *chi.Context) string {
	if p := rctx.RoutePattern(); p != "" && p != "/*" {
		return p
	}
	return unmatchedRoute
}

// methodLabel keeps the label bounded: a client may send any method name.
func methodLabel(m string) string {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodOptions:
		return m
	}
	return "OTHER"
}

// routeContext returns the chi routing context of *ctx, adding a fresh one
// when there is none, so that whoever wraps the router can read the
// matched pattern after it ran.
func routeContext(ctx *context.Context) *chi.Context {
	if rctx := chi.RouteContext(*ctx); rctx != nil {
		return rctx
	}
	rctx := chi.NewRouteContext()
	*ctx = context.WithValue(*ctx, chi.RouteCtxKey, rctx)
	return rctx
}
