package api

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/go-chi/chi/v5"
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

// TestHeadAnswersAsGet: HEAD on a GET route gets GET's status and
// headers, Content-Length included, and no body (RFC 9110, 9.3.2), from
// the API, bare or wrapped as furrow serve wraps it, and from the worker's
// probe handler alike; on a path without GET it is 405, and on no path
// 404, as any other method.
func TestHeadAnswersAsGet(t *testing.T) {
	var down bool
	ping := pingFunc(func(context.Context) error {
		if down {
			return errors.New("database gone")
		}
		return nil
	})
	h := newHarness(t)
	h.withLive()
	h.deps.Ready = ping
	h.rebuild()
	// As telemetry's HTTP wraps the router in furrow serve: it hands the
	// router a routing context of its own, whose router is unset.
	wrapped := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.handler.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), chi.RouteCtxKey, chi.NewRouteContext())))
	})
	for name, handler := range map[string]http.Handler{"api": h.handler, "api with a routing context": wrapped, "worker": Probes(ping, nil)} {
		srv := httptest.NewServer(handler)
		send := func(method, path, token string) (*http.Response, []byte) {
			t.Helper()
			q, err := http.NewRequest(method, srv.URL+path, nil)
			if err != nil {
				t.Fatal(err)
			}
			if token != "" {
				q.Header.Set("Authorization", "Bearer "+token)
			}
			resp, err := srv.Client().Do(q)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, err := io.ReadAll(resp.Body)
			if err != nil {
				t.Fatal(err)
			}
			if name != "worker" {
				checkContract(t, q, nil, resp, b)
			}
			return resp, b
		}
		type probe struct {
			path, token string
			down        bool
			want        int
		}
		cases := []probe{{"/healthz", "", false, http.StatusOK}, {"/readyz", "", false, http.StatusOK}, {"/readyz", "", true, http.StatusServiceUnavailable}}
		if name != "worker" {
			cases = append(cases,
				probe{"/api/openapi.json", "", false, http.StatusOK},
				probe{h.farmPath("/devices"), h.owner, false, http.StatusOK},
				probe{h.farmPath("/devices"), "", false, http.StatusUnauthorized},
				probe{"/api/live?topic=farms/" + h.farm.String() + "/readings", h.owner, false, http.StatusBadRequest},
				probe{"/nope", "", false, http.StatusNotFound})
		} else {
			cases = append(cases, probe{"/api/metric-values", "", false, http.StatusNotFound})
		}
		for _, tc := range cases {
			down = tc.down
			get, body := send(http.MethodGet, tc.path, tc.token)
			head, none := send(http.MethodHead, tc.path, tc.token)
			if get.StatusCode != tc.want || head.StatusCode != tc.want {
				t.Errorf("%s %s (database down %v): GET %d, HEAD %d; want %d", name, tc.path, tc.down, get.StatusCode, head.StatusCode, tc.want)
			}
			if len(none) != 0 {
				t.Errorf("%s HEAD %s: a body %q", name, tc.path, none)
			}
			for _, k := range []string{"Content-Type", "Content-Length"} {
				if g, hd := get.Header.Get(k), head.Header.Get(k); g != hd {
					t.Errorf("%s HEAD %s: %s %q, GET's %q", name, tc.path, k, hd, g)
				}
			}
			if cl := get.Header.Get("Content-Length"); cl != "" && cl != strconv.Itoa(len(body)) {
				t.Errorf("%s GET %s: Content-Length %q of a body of %d bytes", name, tc.path, cl, len(body))
			}
		}
		srv.Close()
	}
	r := h.do(req{method: http.MethodHead, path: "/api/metric-values"})
	if r.Status != http.StatusMethodNotAllowed || r.Header.Get("Allow") != "POST" {
		t.Errorf("HEAD /api/metric-values: %d, Allow %q; want 405, Allow POST", r.Status, r.Header.Get("Allow"))
	}
}
