package bench

import (
	"bytes"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/google/uuid"

	"github.com/furrowhq/furrow"
)

// fakeAPI answers the webhook deletions of the management API with status,
// and records the requests it got.
type fakeAPI struct {
	mu     sync.Mutex
	calls  []string
	status int
}

func (f *fakeAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	f.calls = append(f.calls, r.Method+" "+r.URL.Path+" "+r.Header.Get("Authorization"))
	f.mu.Unlock()
	w.WriteHeader(f.status)
	if f.status != http.StatusNoContent {
		_, _ = w.Write([]byte(`{"error":"internal_error","reason":"Down."}`))
	}
}

func TestLeaveDeletesTheWebhookAndNamesWhatStays(t *testing.T) {
	for _, status := range []int{http.StatusNoContent, http.StatusInternalServerError} {
		api := &fakeAPI{status: status}
		srv := httptest.NewServer(api)
		user := furrow.User{ID: uuid.New(), Email: "bench-1@furrow.invalid"}
		fl := &fleet{client: &Client{URL: srv.URL, Token: "fut_x", HTTP: srv.Client(), User: user},
			farm: "f1", devices: []Device{{ID: "d1"}, {ID: "d2"}, {}}}
		var logs bytes.Buffer
		lb := fl.leave(t.Context(), &Webhook{ID: "w1"}, slog.New(slog.NewTextHandler(&logs, nil)))
		srv.Close()
		if want := []string{"DELETE /api/farms/f1/webhooks/w1 Bearer fut_x"}; len(api.calls) != 1 || api.calls[0] != want[0] {
			t.Errorf("calls %q; want %q", api.calls, want)
		}
		if lb.User != user.Email || lb.UserID != user.ID.String() || lb.Farm != "f1" || lb.Devices != 2 {
			t.Errorf("left behind %+v; want the user, the farm and the two devices created", lb)
		}
		if deleted := lb.Webhook == ""; deleted != (status == http.StatusNoContent) {
			t.Errorf("status %d: left behind %+v; want the webhook named only when its deletion failed", status, lb)
		}
		var out bytes.Buffer
		lb.print(&out)
		if !strings.Contains(out.String(), "user bench-1@furrow.invalid") || !strings.Contains(out.String(), "farm f1 with 2 devices") ||
			!strings.Contains(logs.String(), "left on the server under test") {
			t.Errorf("printed %q, logged %q; want the user, farm and devices named", out.String(), logs.String())
		}
	}
	var none *LeftBehind
	var out bytes.Buffer
	none.print(&out)
	if out.Len() != 0 {
		t.Errorf("a run that started its own server printed %q", out.String())
	}
}

// The bare engine on the started `furrow dev` runs in its one namespace,
// whatever the namespace asked for a running server's Temporal.
func TestEngineRunsInTheStartedDevServersNamespace(t *testing.T) {
	tg := target{temporal: "127.0.0.1:1"}
	for _, c := range []struct {
		url, namespace, want string
	}{
		{"", "prod", "default"},
		{"", "", "default"},
		{"http://x", "prod", "prod"},
		{"http://x", "", "default"},
	} {
		got := engineConfig(DeliveryConfig{URL: c.url, Namespace: c.namespace}, tg, nil)
		if got.Namespace != c.want || got.TemporalAddress != tg.temporal {
			t.Errorf("url %q, namespace %q: engine on %s in %q; want %q", c.url, c.namespace, got.TemporalAddress, got.Namespace, c.want)
		}
	}
}
