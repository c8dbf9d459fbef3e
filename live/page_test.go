package live

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestPageIsSelfContained(t *testing.T) {
	rec := httptest.NewRecorder()
	PageHandler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/live", nil))
	body := rec.Body.String()
	if rec.Code != http.StatusOK || !strings.HasPrefix(rec.Header().Get("Content-Type"), "text/html") {
		t.Fatalf("status %d, type %q", rec.Code, rec.Header().Get("Content-Type"))
	}
	for _, want := range []string{"<canvas", "/api/live", Subprotocol, BearerProtocolPrefix} {
		if !strings.Contains(body, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	for _, bad := range []string{"http://", "https://", "<script src", "<link"} {
		if strings.Contains(body, bad) {
			t.Errorf("page loads something from elsewhere: %q", bad)
		}
	}
	if !strings.Contains(rec.Header().Get("Content-Security-Policy"), "default-src 'none'") {
		t.Errorf("no restrictive CSP: %q", rec.Header().Get("Content-Security-Policy"))
	}
	rec = httptest.NewRecorder()
	PageHandler().ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/live", nil))
	if rec.Code != http.StatusMethodNotAllowed {
		t.Errorf("POST: %d", rec.Code)
	}
}
