package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/go-chi/chi/v5"
	"github.com/google/uuid"

	"github.com/furrowhq/furrow"
	"github.com/furrowhq/furrow/internal/apitest"
	"github.com/furrowhq/furrow/safehttp"
)

// contract is the validator of the embedded document, built once.
var contract = sync.OnceValues(func() (*apitest.Contract, error) { return apitest.Load(OpenAPI) })

// checkContract fails t when the exchange disagrees with the document.
func checkContract(t *testing.T, r *http.Request, reqBody []byte, resp *http.Response, respBody []byte) {
	t.Helper()
	c, err := contract()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Check(r, reqBody, resp, respBody); err != nil {
		t.Errorf("OpenAPI contract: %v", err)
	}
}

// documentRoutes returns "METHOD /path" for every operation of the
// document, path parameters as {name}.
func documentRoutes(t *testing.T) []string {
	t.Helper()
	var doc struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(OpenAPI, &doc); err != nil {
		t.Fatalf("openapi.json: %v", err)
	}
	var routes []string
	for path, item := range doc.Paths {
		for method := range item {
			switch method {
			case "get", "put", "post", "delete", "options", "head", "patch", "trace":
				routes = append(routes, strings.ToUpper(method)+" "+path)
			}
		}
	}
	slices.Sort(routes)
	return routes
}

// fullHarness is a harness with every optional handler mounted.
func fullHarness(t *testing.T) *harness {
	t.Helper()
	h := newHarness(t)
	h.withLive()
	h.deps.LivePage = http.NotFoundHandler()
	h.rebuild()
	return h
}

// chiRoutes returns "METHOD /path" for every route h's router serves, as
// its patterns spell them: a slash-ended pattern is a route of its own.
func chiRoutes(t *testing.T, h *harness) []string {
	t.Helper()
	var routes []string
	err := chi.Walk(h.handler.(chi.Routes), func(method, route string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
		routes = append(routes, method+" "+route)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(routes)
	return slices.Compact(routes)
}

// TestOpenAPIRoutes fails when a served route is missing from the document
// or the document names a route that is not served, the slash-ended form
// of a documented path included: a mounted router serves it beside its
// path, and chi.Walk lists only one of the two.
func TestOpenAPIRoutes(t *testing.T) {
	h := fullHarness(t)
	served, documented := chiRoutes(t, h), documentRoutes(t)
	param := regexp.MustCompile(`\{[a-z_]+\}`)
	for _, r := range documented {
		method, path, _ := strings.Cut(r, " ")
		path = strings.ReplaceAll(path, "{farm}", h.farm.String())
		path = param.ReplaceAllLiteralString(path, uuid.NewString())
		// Asked of the router alone: the contract's validator takes a
		// slash-ended path for the path without it. Without a token too:
		// a path that is not a route is 404 before any credential.
		for _, token := range []string{h.owner, ""} {
			w, q := httptest.NewRecorder(), httptest.NewRequest(method, path+"/", strings.NewReader("{}"))
			if token != "" {
				q.Header.Set("Authorization", "Bearer "+token)
			}
			if h.handler.ServeHTTP(w, q); w.Code != http.StatusNotFound {
				t.Errorf("%s %s/ (token %q) answers %d, not 404: a route missing from api/openapi.json", method, path, token, w.Code)
			}
		}
	}
	for _, r := range served {
		if !slices.Contains(documented, r) {
			t.Errorf("route %s is served but missing from api/openapi.json", r)
		}
	}
	for _, r := range documented {
		if !slices.Contains(served, r) {
			t.Errorf("api/openapi.json names %s, which is not served", r)
		}
	}
	if len(served) < 15 {
		t.Fatalf("walked only %d routes: %v", len(served), served)
	}
}

// TestOpenAPIDocumentValid checks that the document is valid OpenAPI 3.1
// with a webhook and an EventType value for every farm event type.
func TestOpenAPIDocumentValid(t *testing.T) {
	c, err := contract()
	if err != nil {
		t.Fatal(err)
	}
	if v := c.Document().Version; v != "3.1.0" {
		t.Fatalf("openapi = %q, want 3.1.0", v)
	}
	for _, typ := range furrow.EventTypes {
		if _, ok := c.Document().Webhooks.Get(typ); !ok {
			t.Errorf("webhooks has no %s", typ)
		}
	}
	var doc struct {
		Components struct {
			Schemas struct {
				EventType struct{ Enum []string } `json:"EventType"`
			} `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(OpenAPI, &doc); err != nil || !slices.Equal(doc.Components.Schemas.EventType.Enum, furrow.EventTypes) {
		t.Errorf("EventType enum = %v (%v), want %v", doc.Components.Schemas.EventType.Enum, err, furrow.EventTypes)
	}
}

// TestOpenAPIServed checks that the document is served as is, without a
// credential and outside the rate limit.
func TestOpenAPIServed(t *testing.T) {
	h := newHarness(t)
	for i := range furrow.RateLimit + 5 {
		r := h.do(req{method: "GET", path: "/api/openapi.json"})
		if r.Status != http.StatusOK || r.Header.Get("Content-Type") != "application/json" {
			t.Fatalf("request %d: status %d, Content-Type %q", i, r.Status, r.Header.Get("Content-Type"))
		}
		if i == 0 && !bytes.Equal([]byte(r.Body), OpenAPI) {
			t.Fatal("served document differs from api/openapi.json")
		}
	}
}

// TestOpenAPINumbers checks that the numbers the document states are the
// ones the code enforces.
func TestOpenAPINumbers(t *testing.T) {
	var doc struct {
		Paths struct {
			MetricValues struct {
				Post struct {
					Parameters []struct {
						Schema struct{ MaxLength int } `json:"schema"`
					} `json:"parameters"`
					RateLimit struct {
						Requests      int `json:"requests"`
						WindowSeconds int `json:"window_seconds"`
					} `json:"x-furrow-rate-limit"`
				} `json:"post"`
			} `json:"/api/metric-values"`
		} `json:"paths"`
		Components struct {
			Parameters struct {
				Limit struct {
					Schema struct{ Maximum, Default int } `json:"schema"`
				} `json:"limit"`
			} `json:"parameters"`
			Schemas struct {
				Name struct {
					Properties struct {
						Name struct {
							MaxLength int `json:"maxLength"`
						} `json:"name"`
					} `json:"properties"`
				} `json:"Name"`
			} `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(OpenAPI, &doc); err != nil {
		t.Fatal(err)
	}
	rl := doc.Paths.MetricValues.Post.RateLimit
	if rl.Requests != furrow.RateLimit || rl.WindowSeconds != int(furrow.RateWindow.Seconds()) {
		t.Errorf("x-furrow-rate-limit = %+v, want %d per %s", rl, furrow.RateLimit, furrow.RateWindow)
	}
	if p := doc.Paths.MetricValues.Post.Parameters; len(p) != 1 || p[0].Schema.MaxLength != furrow.MaxIdempotencyKey {
		t.Errorf("Idempotency-Key parameter = %+v, want maxLength %d", p, furrow.MaxIdempotencyKey)
	}
	if l := doc.Components.Parameters.Limit.Schema; l.Maximum != furrow.MaxListLimit || l.Default != furrow.DefaultListLimit {
		t.Errorf("limit parameter = %+v, want maximum %d default %d", l, furrow.MaxListLimit, furrow.DefaultListLimit)
	}
	if n := doc.Components.Schemas.Name.Properties.Name.MaxLength; n != maxNameChars {
		t.Errorf("name maxLength = %d, want %d", n, maxNameChars)
	}
}

// TestOpenAPIPathIDsAnswer400: every route with a {farm}, {device} or
// {webhook} in its path answers 400 to a malformed id, so its document
// must say so.
func TestOpenAPIPathIDsAnswer400(t *testing.T) {
	var doc struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(OpenAPI, &doc); err != nil {
		t.Fatal(err)
	}
	checked := 0
	for path, ops := range doc.Paths {
		if !strings.Contains(path, "{") {
			continue
		}
		for method, raw := range ops {
			var op struct {
				Responses map[string]json.RawMessage `json:"responses"`
			}
			if json.Unmarshal(raw, &op) != nil || op.Responses == nil {
				continue // the path's shared parameters
			}
			checked++
			if _, ok := op.Responses["400"]; !ok {
				t.Errorf("%s %s takes an id in its path but documents no 400", strings.ToUpper(method), path)
			}
		}
	}
	if checked < 10 {
		t.Fatalf("checked %d operations with path ids", checked)
	}
}

// TestOpenAPIWebhookNumbers: the webhook bounds the document states are
// the code's.
func TestOpenAPIWebhookNumbers(t *testing.T) {
	var doc struct {
		Paths struct {
			Redeliver struct {
				Post struct {
					Description string `json:"description"`
				} `json:"post"`
			} `json:"/api/farms/{farm}/webhooks/{webhook}/redeliver"`
		} `json:"paths"`
		Components struct {
			Schemas map[string]struct {
				Properties map[string]struct {
					MaxLength int `json:"maxLength"`
				} `json:"properties"`
			} `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(OpenAPI, &doc); err != nil {
		t.Fatal(err)
	}
	for _, schema := range []string{"WebhookIn", "WebhookPatch"} {
		if n := doc.Components.Schemas[schema].Properties["url"].MaxLength; n != safehttp.MaxURLBytes {
			t.Errorf("%s.url maxLength = %d, want %d", schema, n, safehttp.MaxURLBytes)
		}
	}
	desc := doc.Paths.Redeliver.Post.Description
	if !strings.Contains(desc, fmt.Sprintf("more than %d such events", furrow.MaxRedeliverSince)) {
		t.Errorf("the redeliver description does not state the bound of %d events: %q", furrow.MaxRedeliverSince, desc)
	}
}

// TestOpenAPIValueBoundInBytes: a string value is bounded in bytes
// (furrow.MaxValueBytes), which JSON Schema's maxLength, counting
// characters, cannot say; the document states the bound in words and
// never promises more characters than the code takes.
func TestOpenAPIValueBoundInBytes(t *testing.T) {
	var doc struct {
		Components struct {
			Schemas struct {
				ReadingIn struct {
					Properties struct {
						Value struct {
							OneOf []struct {
								Type        string `json:"type"`
								MaxLength   *int   `json:"maxLength"`
								Description string `json:"description"`
							} `json:"oneOf"`
						} `json:"value"`
					} `json:"properties"`
				} `json:"ReadingIn"`
			} `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(OpenAPI, &doc); err != nil {
		t.Fatal(err)
	}
	for _, branch := range doc.Components.Schemas.ReadingIn.Properties.Value.OneOf {
		if branch.Type != "string" {
			continue
		}
		if branch.MaxLength != nil {
			t.Errorf("the string value has maxLength %d, counted in characters; the code counts %d bytes", *branch.MaxLength, furrow.MaxValueBytes)
		}
		if !strings.Contains(branch.Description, fmt.Sprintf("At most %d bytes", furrow.MaxValueBytes)) {
			t.Errorf("the string value's description does not state the bound of %d bytes: %q", furrow.MaxValueBytes, branch.Description)
		}
		return
	}
	t.Fatal("ReadingIn.value has no string branch")
}

// An empty query value is as if it were absent (`cursor=` is the first
// page, `type=` every type), and the document says so: each request is
// held to it by the harness.
func TestEmptyQueryValuesAreAbsent(t *testing.T) {
	h := newHarness(t)
	for _, q := range []string{"/events?type=", "/events?cursor=", "/devices?limit=5&cursor=", "/readings?cursor="} {
		if r := h.user(h.manager, "GET", h.farmPath(q), ""); r.Status != http.StatusOK {
			t.Errorf("GET %s = %d %s, want 200", q, r.Status, r.Body)
		}
	}
	expectError(t, h.user(h.manager, "GET", h.farmPath("/events?type=nope"), ""), http.StatusBadRequest, furrow.EINVALID, "type")
}
