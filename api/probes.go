package api

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"
)

// readyTimeout bounds the database check of /readyz.
const readyTimeout = time.Second

// ErrShuttingDown is what a Pinger returns once its process is stopping:
// /readyz then says so, and logs nothing, since a stop is not a fault.
var ErrShuttingDown = errors.New("shutting down")

// healthz answers liveness without touching any dependency.
func (s *server) healthz(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

// readyz answers 200 when the database answers within a second, else 503:
// the database is not reachable, or the process is shutting down.
func (s *server) readyz(w http.ResponseWriter, r *http.Request) {
	if s.Ready != nil {
		ctx, cancel := context.WithTimeout(r.Context(), readyTimeout)
		defer cancel()
		if err := s.Ready.Ping(ctx); err != nil {
			reason := "The process is shutting down."
			if !errors.Is(err, ErrShuttingDown) {
				reason = "The database is not reachable."
				s.Logger.WarnContext(r.Context(), "not ready", "request_id", RequestID(r.Context()), "error", err)
			}
			writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "unavailable", "reason": reason})
			return
		}
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ready"})
}

// Probes serves /healthz and /readyz alone, with the API's answers, for a
// process without the API (furrow worker), so that orchestrators probe
// every process the same way.
func Probes(ready Pinger, log *slog.Logger) http.Handler {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &server{Deps: Deps{Ready: ready, Logger: log}}
	r := chi.NewRouter()
	r.Use(headAsGet(r))
	r.Get("/healthz", s.healthz)
	r.Get("/readyz", s.readyz)
	return r
}
