package api

import (
	"net/http"
	"testing"

	"github.com/furrowhq/furrow"
)

// A query string the parser would take only in part is refused whole:
// before, the filter or limit it spoiled was dropped and the answer was
// of the whole farm.
func TestMalformedQueryIsRefused(t *testing.T) {
	h := newHarness(t)
	for _, q := range []string{"/readings?limit=%zz", "/readings?limit=5;x=1", "/readings?limit=10&device_id=" + h.farm.String() + "%", "/events?type=trigger.fired%"} {
		expectError(t, h.user(h.viewer, "GET", h.farmPath(q), ""), http.StatusBadRequest, furrow.EINVALID, "query string is malformed")
	}
	if r := h.user(h.viewer, "GET", h.farmPath("/readings?limit=5"), ""); r.Status != http.StatusOK {
		t.Fatalf("a well-formed query: %d %s", r.Status, r.Body)
	}
}

// A management body whose text the decoder would change (invalid UTF-8, a
// lone surrogate escape) is refused rather than stored with U+FFFD.
func TestManagementBodyTextIsStoredAsSentOrRefused(t *testing.T) {
	h := newHarness(t)
	for _, body := range []string{"{\"name\":\"a\xffb\"}", `{"name":"\ud800"}`, `{"name":"x\udc00y"}`} {
		expectError(t, h.user(h.owner, "POST", "/api/farms", body), http.StatusBadRequest, furrow.EINVALID, "valid UTF-8")
	}
	expectError(t, h.user(h.manager, "POST", h.farmPath("/webhooks"), "{\"url\":\"https://example.com/\xff\"}"),
		http.StatusBadRequest, furrow.EINVALID, "valid UTF-8")
	if r := h.user(h.owner, "POST", "/api/farms", `{"name":"Pr\u00e9 \ud83c\udf3e"}`); r.Status != http.StatusCreated {
		t.Fatalf("a name with an escaped pair: %d %s", r.Status, r.Body)
	}
}

// The credential and membership are checked before the query: a request
// without a token is 401, a non-member's 404, whatever its query, and the
// device route, which reads no query, keeps its order of checks.
func TestMalformedQueryAfterCredentialAndMembership(t *testing.T) {
	h := newHarness(t)
	expectError(t, h.user("", "GET", h.farmPath("/readings?limit=%zz"), ""), http.StatusUnauthorized, furrow.EUNAUTHORIZED, "")
	expectError(t, h.user(h.outsider, "GET", h.farmPath("/readings?limit=%zz"), ""), http.StatusNotFound, furrow.ENOTFOUND, "")
	expectError(t, h.do(req{method: "POST", path: "/api/metric-values?x=%zz", body: `{}`}), http.StatusUnauthorized, furrow.EUNAUTHORIZED, "")
}
