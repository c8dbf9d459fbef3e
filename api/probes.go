package api

import (
	"context"
	"net/http"
	"time"
)

// readyTimeout bounds the database check of /readyz.
const readyTimeout = time.Second

// healthz answers liveness without touching any dependency.
func (s *server) healthz(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

// readyz answers 200 when the database answers within a second, else 503.
func (s *server) readyz(w http.ResponseWriter, r *http.Request) {
	if s.Ready != nil {
		ctx, cancel := context.WithTimeout(r.Context(), readyTimeout)
		defer cancel()
		if err := s.Ready.Ping(ctx); err != nil {
			s.Logger.WarnContext(r.Context(), "not ready", "request_id", RequestID(r.Context()), "error", err)
			writeJSON(w, http.StatusServiceUnavailable, map[string]string{
				"status": "unavailable", "reason": "The database is not reachable.",
			})
			return
		}
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ready"})
}
