package api

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/furrowhq/furrow"
	"github.com/furrowhq/furrow/internal/memstore"
	"github.com/google/uuid"
)

func readingBody(device string, metric, value string) string {
	return fmt.Sprintf(`{"device_id":%q,"metric_id":%s,"value":%s}`, device, metric, value)
}

// post sends a reading with the device's bearer key.
func (h *harness) post(key, body string) response {
	h.t.Helper()
	return h.do(req{method: "POST", path: "/api/metric-values", body: body,
		header: map[string]string{"Authorization": "Bearer " + key, "Content-Type": "application/json"}})
}

func TestMetricValueStored(t *testing.T) {
	h := newHarness(t)
	h.subscribeAll()
	body := fmt.Sprintf(`{"device_id":%q,"metric_id":220,"value":21.50,"timestamp":"1","extra":[1]}`,
		strings.ToUpper(h.device.ID.String()))
	r := h.post(h.deviceKey, body)
	if r.Status != http.StatusCreated {
		t.Fatalf("status = %d, body %s", r.Status, r.Body)
	}
	want := fmt.Sprintf(`{"device_id":%q,"metric_id":220,"value":"21.50","timestamp":"%d"}`,
		h.device.ID.String(), furrow.Millis(h.clock.Now()))
	if strings.TrimSpace(r.Body) != want {
		t.Fatalf("body = %s, want %s", r.Body, want)
	}
	if rs := h.readings(); len(rs) != 1 || rs[0].FarmID != h.farm {
		t.Fatalf("stored %+v, want one reading of the farm", rs)
	}
	if len(h.engine.published) != 1 || h.engine.published[0].FarmID != h.farm || h.engine.published[0].Value != "21.50" {
		t.Fatalf("published %+v, want the reading with its farm", h.engine.published)
	}
	if h.engine.wakes != 1 {
		t.Fatalf("wakes = %d, want 1", h.engine.wakes)
	}
}

// An event that no webhook waits for leaves the dispatcher asleep.
func TestMetricValueWithoutWebhooksDoesNotWake(t *testing.T) {
	h := newHarness(t)
	if r := h.post(h.deviceKey, readingBody(h.device.ID.String(), "220", `"1"`)); r.Status != http.StatusCreated {
		t.Fatalf("status = %d, body %s", r.Status, r.Body)
	}
	if h.engine.wakes != 0 {
		t.Fatalf("wakes = %d, want 0", h.engine.wakes)
	}
}

func TestMetricValueStringKeptAsIs(t *testing.T) {
	h := newHarness(t)
	r := h.post(h.deviceKey, readingBody(h.device.ID.String(), "220", `"21.50"`))
	var got furrow.Reading
	decode(t, r, &got)
	if r.Status != http.StatusCreated || got.Value != "21.50" {
		t.Fatalf("status %d value %q, want 201 21.50", r.Status, got.Value)
	}
}

func TestMetricValueBadRequests(t *testing.T) {
	h := newHarness(t)
	id := h.device.ID.String()
	cases := []struct{ name, body, reason string }{
		{"not json", `{"device_id":`, "valid JSON object"},
		{"trailing garbage", readingBody(id, "220", "1") + "x", "valid JSON object"},
		{"array", `[1]`, "JSON object"},
		{"missing device", `{"metric_id":220,"value":1}`, "device_id is required"},
		{"missing metric", fmt.Sprintf(`{"device_id":%q,"value":1}`, id), "metric_id is required"},
		{"missing value", fmt.Sprintf(`{"device_id":%q,"metric_id":220}`, id), "value is required"},
		{"bad uuid", readingBody("nope", "220", "1"), "device_id must be a UUID"},
		{"metric string", readingBody(id, `"220"`, "1"), "metric_id must be an integer"},
		{"metric fraction", readingBody(id, "220.5", "1"), "metric_id must be an integer"},
		{"metric exponent", readingBody(id, "2.2e2", "1"), "metric_id must be an integer"},
		{"metric zero", readingBody(id, "0", "1"), "from 1 to 2147483647"},
		{"metric too big", readingBody(id, "2147483648", "1"), "from 1 to 2147483647"},
		{"value bool", readingBody(id, "220", "true"), "number or a string"},
		{"value null", readingBody(id, "220", "null"), "number or a string"},
		{"value object", readingBody(id, "220", `{}`), "number or a string"},
		{"value empty", readingBody(id, "220", `""`), "must not be empty"},
		{"value long", readingBody(id, "220", `"`+strings.Repeat("x", 1025)+`"`), "at most 1024 bytes"},
		{"duplicate", `{"device_id":"` + id + `","metric_id":1,"metric_id":2,"value":1}`, "more than once"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			expectError(t, h.post(h.deviceKey, c.body), http.StatusBadRequest, furrow.EINVALID, c.reason)
		})
	}
	if len(h.readings()) != 0 {
		t.Fatal("a bad request was stored")
	}
}

func TestMetricValueTooLarge(t *testing.T) {
	h := newHarness(t)
	body := fmt.Sprintf(`{"device_id":%q,"metric_id":220,"value":1,"pad":%q}`, h.device.ID, strings.Repeat("x", 64<<10))
	expectError(t, h.post(h.deviceKey, body), http.StatusRequestEntityTooLarge, furrow.ETOOLARGE, "at most 65536 bytes")
}

// A compressed body is refused with a reason that names the compression,
// not as malformed JSON; identity is no compression.
func TestMetricValueCompressedBody(t *testing.T) {
	h := newHarness(t)
	body := readingBody(h.device.ID.String(), "220", "1")
	send := func(encoding string) response {
		return h.do(req{method: "POST", path: "/api/metric-values", body: body,
			header: map[string]string{"Authorization": "Bearer " + h.deviceKey, "Content-Encoding": encoding}})
	}
	expectError(t, send("gzip"), http.StatusBadRequest, furrow.EINVALID, "must not be compressed")
	if r := send("identity"); r.Status != http.StatusCreated {
		t.Fatalf("Content-Encoding: identity: status %d, body %s", r.Status, r.Body)
	}
	if n := len(h.readings()); n != 1 {
		t.Fatalf("%d readings stored, want the identity one only", n)
	}
}

func TestMetricValueDeviceMismatch(t *testing.T) {
	h := newHarness(t)
	r := h.post(h.deviceKey, readingBody(h.device2.ID.String(), "220", "1"))
	expectError(t, r, http.StatusForbidden, furrow.EFORBIDDEN, "does not match")
}

func TestMetricValueCredentials(t *testing.T) {
	h := newHarness(t)
	body := readingBody(h.device.ID.String(), "220", "1")
	cases := []struct {
		name   string
		header map[string]string
		reason string
	}{
		{"none", nil, "missing"},
		{"unknown key", map[string]string{"Authorization": "Bearer fdk_unknown"}, "invalid"},
		{"not a device key", map[string]string{"Authorization": "Bearer nope"}, "invalid"},
		{"user token", map[string]string{"Authorization": "Bearer " + h.owner}, "The credential is a user token: readings take the device's key"},
		{"other scheme", map[string]string{"Authorization": "Basic " + h.deviceKey}, "invalid"},
		{"empty bearer", map[string]string{"Authorization": "Bearer "}, "invalid"},
		{"cert from untrusted peer only", map[string]string{certHeader: "device:" + h.device.ID.String()}, "missing"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := h.do(req{method: "POST", path: "/api/metric-values", body: body, header: c.header})
			expectError(t, r, http.StatusUnauthorized, furrow.EUNAUTHORIZED, c.reason)
		})
	}
}

// A token without the device keys' prefix is refused without a lookup; a
// key with it is looked up.
func TestMetricValueForeignTokenCostsNoLookup(t *testing.T) {
	h := newHarness(t)
	body := readingBody(h.device.ID.String(), "220", "1")
	rec := h.store.Record()
	for _, token := range []string{"nope", h.owner, "FDK_" + strings.TrimPrefix(h.deviceKey, furrow.DeviceKeyPrefix)} {
		expectError(t, h.post(token, body), http.StatusUnauthorized, furrow.EUNAUTHORIZED, "The credential is")
	}
	if calls := rec.Calls("DeviceByKey"); len(calls) != 0 {
		t.Fatalf("%d key lookups for tokens without the prefix; want none", len(calls))
	}
	expectError(t, h.post("fdk_unknown", body), http.StatusUnauthorized, furrow.EUNAUTHORIZED, "invalid")
	if calls := rec.Calls("DeviceByKey"); len(calls) != 1 {
		t.Fatalf("%d key lookups for an unknown key with the prefix; want 1", len(calls))
	}
}

func TestMetricValueRotatedKeyIsInvalid(t *testing.T) {
	h := newHarness(t)
	if _, err := h.store.RotateDeviceKey(context.Background(), h.farm, h.device.ID); err != nil {
		t.Fatal(err)
	}
	r := h.post(h.deviceKey, readingBody(h.device.ID.String(), "220", "1"))
	expectError(t, r, http.StatusUnauthorized, furrow.EUNAUTHORIZED, "invalid")
	if strings.Contains(r.Body, h.deviceKey) || strings.Contains(h.logs.String(), h.deviceKey) {
		t.Fatal("the key appears in the response or the logs")
	}
}

func TestMetricValueCertificate(t *testing.T) {
	h := newHarness(t)
	both := map[string]string{certHeader: "device:" + h.device2.ID.String(), "Authorization": "Bearer " + h.deviceKey}
	send := func(peer, device string, header map[string]string) response {
		return h.do(req{method: "POST", path: "/api/metric-values", peer: peer,
			body: readingBody(device, "220", "1"), header: header})
	}
	t.Run("trusted cert wins over bearer", func(t *testing.T) {
		if r := send(proxyPeer, h.device2.ID.String(), both); r.Status != http.StatusCreated {
			t.Fatalf("status %d, body %s", r.Status, r.Body)
		}
		expectError(t, send(proxyPeer, h.device.ID.String(), both), http.StatusForbidden, furrow.EFORBIDDEN, "does not match")
	})
	t.Run("untrusted header ignored", func(t *testing.T) {
		if r := send(untrustedPeer, h.device.ID.String(), both); r.Status != http.StatusCreated {
			t.Fatalf("status %d, body %s", r.Status, r.Body)
		}
		r := h.do(req{method: "POST", path: "/api/metric-values", peer: untrustedPeer,
			body:   readingBody(h.device2.ID.String(), "220", "1"),
			header: map[string]string{certHeader: both[certHeader], "X-Forwarded-For": "10.0.0.1"}})
		expectError(t, r, http.StatusUnauthorized, furrow.EUNAUTHORIZED, "missing")
	})
	t.Run("IPv4-mapped trusted peer", func(t *testing.T) {
		if r := send("[::ffff:10.1.2.3]:40000", h.device2.ID.String(), both); r.Status != http.StatusCreated {
			t.Fatalf("status %d, body %s", r.Status, r.Body)
		}
	})
	for name, cn := range map[string]string{
		"unknown device": "device:" + "00000000-0000-4000-8000-000000000000",
		"no prefix":      h.device.ID.String(),
		"bad uuid":       "device:xyz",
	} {
		t.Run(name, func(t *testing.T) {
			r := send(proxyPeer, h.device.ID.String(), map[string]string{certHeader: cn, "Authorization": "Bearer " + h.deviceKey})
			// A new key would not help: the reason speaks of the certificate.
			expectError(t, r, http.StatusUnauthorized, furrow.EUNAUTHORIZED, "invalid: the client certificate names no claimed device")
		})
	}
}

// recordingLimiter records the keys it is asked about and allows them all.
type recordingLimiter struct{ keys []string }

func (l *recordingLimiter) Allow(_ context.Context, key string) (furrow.RateDecision, error) {
	l.keys = append(l.keys, key)
	return furrow.RateDecision{Allowed: true}, nil
}

func TestMetricValueRateLimitKeys(t *testing.T) {
	h := newHarness(t)
	lim := &recordingLimiter{}
	h.deps.Limiter = lim
	h.rebuild()
	h.post(h.deviceKey, readingBody(h.device.ID.String(), "220", "1"))
	h.do(req{method: "POST", path: "/api/metric-values", peer: proxyPeer,
		body: readingBody(h.device2.ID.String(), "220", "1"), header: map[string]string{certHeader: "device:" + h.device2.ID.String()}})
	sum := furrow.HashSecret(h.deviceKey)
	want := []string{"key:" + hex.EncodeToString(sum[:16]), "cert:" + h.device2.ID.String()}
	if fmt.Sprint(lim.keys) != fmt.Sprint(want) {
		t.Fatalf("limiter keys = %v, want %v", lim.keys, want)
	}
}

func TestMetricValueRateLimited(t *testing.T) {
	h := newHarness(t)
	body := readingBody(h.device.ID.String(), "220", "1")
	for i := range 120 {
		if r := h.post(h.deviceKey, body); r.Status != http.StatusCreated {
			t.Fatalf("request %d: status %d", i+1, r.Status)
		}
		h.clock.Advance(100 * time.Millisecond)
	}
	h.clock.Advance(1500 * time.Millisecond) // the oldest is now 13.5 s old
	// The limit is checked before the body, so even a bad body gets 429.
	r := h.post(h.deviceKey, "not json")
	expectError(t, r, http.StatusTooManyRequests, furrow.ERATELIMITED, "retry-after")
	if got := r.Header.Get("retry-after"); got != "47" {
		t.Fatalf("retry-after = %q, want 47 (46.5 s rounded up)", got)
	}
	// Another device's credential has its own window.
	if r := h.post(h.device2Key, readingBody(h.device2.ID.String(), "220", "1")); r.Status != http.StatusCreated {
		t.Fatalf("other credential: status %d", r.Status)
	}
	// Unauthenticated requests are answered before the limit.
	expectError(t, h.post("fdk_wrong", body), http.StatusUnauthorized, furrow.EUNAUTHORIZED, "invalid")
}

func TestRetryAfterSeconds(t *testing.T) {
	for d, want := range map[time.Duration]int{0: 1, time.Millisecond: 1, time.Second: 1, 1001 * time.Millisecond: 2, 60 * time.Second: 60} {
		if got := retryAfterSeconds(d); got != want {
			t.Errorf("retryAfterSeconds(%v) = %d, want %d", d, got, want)
		}
	}
}

func TestMetricValueStoreFailure(t *testing.T) {
	h := newHarness(t)
	h.store.Fault(memstore.Fail(errors.New("pq: connection refused to db-secret-host"), "CreateReading", "CreateReadingOnce"))
	r := h.post(h.deviceKey, readingBody(h.device.ID.String(), "220", "1"))
	expectError(t, r, http.StatusInternalServerError, furrow.EINTERNAL, "retry later")
	if strings.Contains(r.Body, "db-secret-host") {
		t.Fatal("the internal error leaked to the client")
	}
	id := r.Header.Get("X-Request-Id")
	if id == "" || !strings.Contains(h.logs.String(), id) || !strings.Contains(h.logs.String(), "db-secret-host") {
		t.Fatalf("internal error not logged with request id %q:\n%s", id, h.logs.String())
	}
	if len(h.engine.published) != 0 || h.engine.wakes != 0 {
		t.Fatal("published or woke after a failed store")
	}
}

func TestPanicAnsweredAsInternalError(t *testing.T) {
	h := newHarness(t)
	h.store.Fault(func(c memstore.Call) error {
		if c.Method == "CreateReading" {
			panic("store exploded")
		}
		return nil
	})
	r := h.post(h.deviceKey, readingBody(h.device.ID.String(), "220", "1"))
	expectError(t, r, http.StatusInternalServerError, furrow.EINTERNAL, "retry later")
	if !strings.Contains(h.logs.String(), "store exploded") {
		t.Fatal("panic not logged")
	}
}

func TestLogsNeverHoldCredentials(t *testing.T) {
	h := newHarness(t)
	h.post(h.deviceKey, readingBody(h.device.ID.String(), "220", "1"))
	h.user(h.owner, "GET", h.farmPath("/devices"), "")
	logs := h.logs.String()
	if !strings.Contains(logs, "/api/metric-values") || !strings.Contains(logs, "status=201") {
		t.Fatalf("request not logged:\n%s", logs)
	}
	for _, secret := range []string{h.deviceKey, h.owner} {
		if strings.Contains(logs, secret) {
			t.Fatalf("a credential appears in the logs:\n%s", logs)
		}
	}
}

func TestUnknownRouteAndMethod(t *testing.T) {
	h := newHarness(t)
	expectError(t, h.do(req{method: "GET", path: "/nope"}), http.StatusNotFound, furrow.ENOTFOUND, "no such endpoint")
	expectError(t, h.do(req{method: "GET", path: "/api/metric-values"}), http.StatusMethodNotAllowed, furrow.EINVALID, "not allowed")
}

// A 405 lists the methods of its path in Allow (RFC 9110, 15.5.6).
func TestMethodNotAllowedListsAllow(t *testing.T) {
	h := newHarness(t)
	for _, tc := range []struct{ method, path, want string }{
		{"GET", "/api/metric-values", "POST"},
		{"GET", "/api/farms", "POST"},
		{"PUT", h.farmPath("/devices"), "GET, HEAD, POST"},
		{"PUT", h.farmPath("/webhooks/" + uuid.NewString()), "GET, HEAD, PATCH, DELETE"},
		{"GET", h.farmPath("/webhooks/" + uuid.NewString() + "/secret/rotate"), "POST"},
		{"GET", h.farmPath("/webhooks/" + uuid.NewString() + "/redeliver"), "POST"},
		{"DELETE", h.farmPath("/members"), "POST"},
	} {
		r := h.user(h.owner, tc.method, tc.path, "")
		expectError(t, r, http.StatusMethodNotAllowed, furrow.EINVALID, "not allowed")
		if got := r.Header.Values("Allow"); len(got) != 1 || got[0] != tc.want {
			t.Errorf("%s %s: Allow = %q, want %q", tc.method, tc.path, got, tc.want)
		}
	}
}

// A method no route has, on a path no route has, is 404 like any unknown
// path, not a 405 with an empty Allow.
func TestUnknownMethodOnUnknownPath(t *testing.T) {
	h := newHarness(t)
	expectError(t, h.do(req{method: "FOO", path: "/nope/at/all"}), http.StatusNotFound, furrow.ENOTFOUND, "no such endpoint")
	r := h.do(req{method: "POST", path: "/healthz"})
	expectError(t, r, http.StatusMethodNotAllowed, furrow.EINVALID, "not allowed")
	if got := r.Header.Get("Allow"); got != "GET, HEAD" {
		t.Errorf("POST /healthz: Allow = %q, want %q", got, "GET, HEAD")
	}
}
