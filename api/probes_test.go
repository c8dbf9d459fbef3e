package api

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestProbesAlone: the worker's probe handler answers like the API's and
// serves nothing else.
func TestProbesAlone(t *testing.T) {
	var down bool
	h := Probes(pingFunc(func(context.Context) error {
		if down {
			return errors.New("database gone")
		}
		return nil
	}), nil)
	get := func(path string) (int, string) {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest("GET", path, nil))
		return w.Code, strings.TrimSpace(w.Body.String())
	}
	if code, body := get("/healthz"); code != http.StatusOK || body != `{"status":"ok"}` {
		t.Fatalf("healthz: %d %s", code, body)
	}
	if code, body := get("/readyz"); code != http.StatusOK || body != `{"status":"ready"}` {
		t.Fatalf("readyz: %d %s", code, body)
	}
	down = true
	if code, body := get("/readyz"); code != http.StatusServiceUnavailable || !strings.Contains(body, `"reason"`) {
		t.Fatalf("readyz with the database down: %d %s", code, body)
	}
	if code, _ := get("/api/metric-values"); code != http.StatusNotFound {
		t.Fatalf("the probe handler serves the API: %d", code)
	}
}
