package main

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/furrowhq/furrow/api"
)

type pingFunc func(context.Context) error

func (f pingFunc) Ping(ctx context.Context) error { return f(ctx) }

func TestDrainTurnsReadinessOffAndClosesConnections(t *testing.T) {
	d := &drain{ready: pingFunc(func(context.Context) error { return nil })}
	h := d.wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
	if err := d.Ping(context.Background()); err != nil || rec.Header().Get("Connection") != "" {
		t.Fatalf("before draining: ping %v, Connection %q", err, rec.Header().Get("Connection"))
	}
	d.on.Store(true)
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
	if err := d.Ping(context.Background()); !errors.Is(err, api.ErrShuttingDown) || rec.Header().Get("Connection") != "close" {
		t.Fatalf("draining: ping %v, Connection %q", err, rec.Header().Get("Connection"))
	}
}
