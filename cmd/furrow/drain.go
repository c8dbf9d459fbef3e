package main

import (
	"context"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/furrowhq/furrow/api"
)

// drain is the first step of a graceful stop: /readyz turns unavailable so
// that load balancers move on, and every response says `Connection: close`
// so that keep-alive clients reconnect (elsewhere) instead of sending their
// next request on a connection the server is about to close.
type drain struct {
	on    atomic.Bool
	ready api.Pinger
}

// Ping answers /readyz: the wrapped check, or api.ErrShuttingDown once
// draining.
func (d *drain) Ping(ctx context.Context) error {
	if d.on.Load() {
		return api.ErrShuttingDown
	}
	return d.ready.Ping(ctx)
}

// wrap adds `Connection: close` to every response while draining.
func (d *drain) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if d.on.Load() {
			w.Header().Set("Connection", "close")
		}
		h.ServeHTTP(w, r)
	})
}

// drainGrace is how long a stopping server keeps serving before it closes
// its listener: long enough for a load balancer to see /readyz fail and for
// busy keep-alive clients to be told to go, a small part of the shutdown
// timeout.
func drainGrace(shutdownTimeout time.Duration) time.Duration {
	return min(time.Second, shutdownTimeout/4)
}
