package doccheck

import (
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/go-chi/chi/v5"

	"github.com/furrowhq/furrow/api"
	"github.com/furrowhq/furrow/live"
)

// observabilityPage is the operators' page on metrics and alerts.
const observabilityPage = "docs/operating/observability.md"

// anyLive stands for the live server, so that its route is mounted.
type anyLive struct{}

func (anyLive) Accept(http.ResponseWriter, *http.Request, live.Client) error { return nil }

// routePatterns returns every route pattern the API serves, written as the
// `route` label of furrow_http_requests_total holds it (chi's
// RoutePattern: no route ends in a slash), every optional route mounted.
func routePatterns(t *testing.T) map[string]bool {
	t.Helper()
	h, ok := api.New(api.Config{}, api.Deps{Live: anyLive{}, LivePage: http.NotFoundHandler()}).(chi.Routes)
	if !ok {
		t.Fatal("api.New is not a chi router")
	}
	out := map[string]bool{}
	err := chi.Walk(h, func(_, route string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
		out[route] = true
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, must := range []string{"/api/metric-values", "/readyz", "/api/farms/{farm}/readings", "/api/live", "/live"} {
		if !out[must] {
			t.Fatalf("walked %d routes but not %s: %v", len(out), must, out)
		}
	}
	return out
}

var (
	// routeExamples is where a page says what the route label holds, with
	// examples in parentheses: "`route` is the route pattern (`/api/…`)".
	routeExamples = regexp.MustCompile("`route` is[^|.(]*\\(([^)]*)\\)")
	// routeMatcher is a PromQL matcher of the route label, escaped or not
	// as in a JSON string.
	routeMatcher = regexp.MustCompile(`route=\\?"([^"\\]*)\\?"`)
)

// routeLabels returns the values of the route label that md quotes: the
// code spans of the examples given where it says what the label holds,
// and the values of route="…" matchers, code blocks included.
func routeLabels(md []byte) []string {
	var out []string
	for _, m := range routeExamples.FindAllStringSubmatch(whitespace.ReplaceAllString(string(md), " "), -1) {
		for _, span := range codeSpan.FindAllString(m[1], -1) {
			if v := strings.Trim(span, "`"); strings.HasPrefix(v, "/") {
				out = append(out, v)
			}
		}
	}
	for _, m := range routeMatcher.FindAllSubmatch(md, -1) {
		out = append(out, string(m[1]))
	}
	return out
}

func TestRouteLabels(t *testing.T) {
	md := "| `x{route}` | counter | `route` is the route pattern (`/a/{b}`, `/c`), never `/raw`. And `/d`.\n" +
		"```\nsum(rate(x{route=\"/e\",code=~\"5..\"}[2m]))\n```\n" + `{"expr": "x{route=\"/f\"}"}` + "\n"
	got := routeLabels([]byte(md))
	want := []string{"/a/{b}", "/c", "/e", "/f"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("routeLabels = %q, want %q", got, want)
	}
}

// Every route pattern the observability page, the alert rules and the
// dashboard give as a value of furrow_http_requests_total's route label is
// one the API serves, spelled as the label spells it.
func TestRouteLabelsAreServedRoutes(t *testing.T) {
	served := routePatterns(t)
	for _, page := range []string{observabilityPage, "deploy/observability/alerts.yaml", "deploy/observability/dashboard.json"} {
		labels := routeLabels(read(t, page))
		if len(labels) == 0 {
			t.Errorf("%s quotes no value of the route label: the reader is broken", page)
		}
		for _, l := range labels {
			if !served[l] {
				t.Errorf("%s gives %q as a route label, which is not a route pattern the API serves", page, l)
			}
		}
	}
}
