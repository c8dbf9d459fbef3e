package api

import (
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/furrowhq/furrow"
)

// rotations counts SecretRotated calls.
type rotations struct{ n atomic.Int64 }

func (r *rotations) SecretRotated() { r.n.Add(1) }

// rotated is the webhook JSON with the fields a rotation sets.
type rotated struct {
	furrow.Webhook
	UntilMs *int64 `json:"previous_secret_until_ms"`
}

func TestRotateSecret(t *testing.T) {
	h := newHarness(t)
	counted := &rotations{}
	h.deps.Metrics = counted
	h.rebuild()
	w := h.createHook(`{"url":"https://example.com/a"}`)
	if w.SecretVersion != 1 {
		t.Fatalf("a new webhook has secret_version %d, want 1", w.SecretVersion)
	}
	path := h.farmPath("/webhooks/" + w.ID.String() + "/secret/rotate")
	secrets := []string{w.Secret}

	// No body: the default overlap, from the store's clock.
	r := h.user(h.manager, "POST", path, "")
	var got rotated
	decode(t, r, &got)
	want := furrow.Millis(h.clock.Now().Add(furrow.DefaultSecretOverlap))
	if r.Status != http.StatusOK || got.SecretVersion != 2 || got.Secret == w.Secret ||
		!strings.HasPrefix(got.Secret, furrow.WebhookSecretPrefix) || got.UntilMs == nil || *got.UntilMs != want {
		t.Fatalf("rotate: %d %s; want version 2, a new secret, until %d", r.Status, r.Body, want)
	}
	secrets = append(secrets, got.Secret)
	stored, err := h.store.WebhookByID(t.Context(), w.ID)
	if err != nil || stored.Secret != got.Secret || stored.PreviousSecret != w.Secret {
		t.Fatalf("stored %q previous %q (%v)", stored.Secret, stored.PreviousSecret, err)
	}
	if strings.Contains(r.Body, w.Secret) {
		t.Fatal("the answer shows the previous secret")
	}
	var read furrow.Webhook
	decode(t, h.user(h.manager, "GET", h.farmPath("/webhooks/"+w.ID.String()), ""), &read)
	if read.Secret != got.Secret || read.SecretVersion != 2 {
		t.Fatalf("GET after rotation: %+v", read)
	}

	// Given overlaps, none included.
	for body, until := range map[string]time.Duration{
		`{"overlap":"168h"}`: 168 * time.Hour, `{"overlap":"90m"}`: 90 * time.Minute,
		`{}`: furrow.DefaultSecretOverlap, `{"overlap":null}`: furrow.DefaultSecretOverlap, `{"overlap":"0s"}`: 0,
	} {
		got = rotated{}
		r = h.user(h.manager, "POST", path, body)
		decode(t, r, &got)
		secrets = append(secrets, got.Secret)
		if r.Status != http.StatusOK || got.SecretVersion != len(secrets) {
			t.Fatalf("%s: %d %s, want version %d", body, r.Status, r.Body, len(secrets))
		}
		if until == 0 && got.UntilMs != nil || until > 0 && (got.UntilMs == nil || *got.UntilMs != furrow.Millis(h.clock.Now().Add(until))) {
			t.Fatalf("%s: previous_secret_until_ms %v, want now + %s", body, got.UntilMs, until)
		}
	}
	if n := counted.n.Load(); n != int64(len(secrets)-1) {
		t.Fatalf("%d rotations counted, want %d", n, len(secrets)-1)
	}

	// Refused: bad overlaps, roles below manager, other farms.
	var bodies []string
	for body, reason := range map[string]string{
		`{"overlap":"169h"}`: "from 0s to 168h", `{"overlap":"-1s"}`: "from 0s to 168h",
		`{"overlap":"soon"}`: "overlap must be a duration", `{"overlap":""}`: "overlap must be a duration",
		`{"overlap":86400}`: "overlap must be a string", `[]`: "JSON object", `{"overlap":`: "JSON object",
	} {
		r = h.user(h.manager, "POST", path, body)
		expectError(t, r, http.StatusBadRequest, furrow.EINVALID, reason)
		bodies = append(bodies, r.Body)
	}
	for _, c := range []struct {
		token, path string
		status      int
		code        string
	}{
		{h.operator, path, http.StatusForbidden, furrow.EFORBIDDEN},
		{h.viewer, path, http.StatusForbidden, furrow.EFORBIDDEN},
		{h.outsider, path, http.StatusNotFound, furrow.ENOTFOUND},
		{"", path, http.StatusUnauthorized, furrow.EUNAUTHORIZED},
		{h.manager, h.farmPath("/webhooks/" + uuid.NewString() + "/secret/rotate"), http.StatusNotFound, furrow.ENOTFOUND},
		{h.manager, h.farmPath("/webhooks/nope/secret/rotate"), http.StatusBadRequest, furrow.EINVALID},
	} {
		r = h.user(c.token, "POST", c.path, `{"overlap":"1h"}`)
		expectError(t, r, c.status, c.code, "")
		bodies = append(bodies, r.Body)
	}
	other := uuid.New()
	if _, err := h.store.CreateWebhook(t.Context(), furrow.Webhook{ID: other, FarmID: h.otherFarm(), Secret: "whsec_b3RoZXI="}); err != nil {
		t.Fatal(err)
	}
	expectError(t, h.user(h.manager, "POST", h.farmPath("/webhooks/"+other.String()+"/secret/rotate"), ""), http.StatusNotFound, furrow.ENOTFOUND, "")
	if o, _ := h.store.WebhookByID(t.Context(), other); o.SecretVersion != 1 || o.Secret != "whsec_b3RoZXI=" {
		t.Fatalf("another farm's webhook was rotated: %+v", o)
	}
	if cur, _ := h.store.WebhookByID(t.Context(), w.ID); cur.SecretVersion != len(secrets) {
		t.Fatalf("a refused rotation changed the secret: version %d", cur.SecretVersion)
	}
	if counted.n.Load() != int64(len(secrets)-1) {
		t.Fatal("a refused rotation was counted")
	}

	// No secret in the logs or in any error answer.
	for _, s := range secrets {
		key := strings.TrimPrefix(s, furrow.WebhookSecretPrefix)
		if strings.Contains(h.logs.String(), key) || strings.Contains(strings.Join(bodies, "\n"), key) {
			t.Fatalf("a secret appears in the logs or an error answer")
		}
	}
	if !strings.Contains(h.logs.String(), "webhook secret rotated") {
		t.Fatalf("rotations are not logged: %s", h.logs.String())
	}
}
