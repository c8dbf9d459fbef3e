package api

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/furrowhq/furrow"
	"github.com/furrowhq/furrow/api/ratelimit"
	"github.com/furrowhq/furrow/telemetry"
)

// A key seen once is not looked up again; the store still checks it on
// every reading.
func TestCachedKeySkipsLookup(t *testing.T) {
	h := newHarness(t)
	for range 3 {
		if r := h.post(h.deviceKey, readingBody(h.device.ID.String(), "1", `"1"`)); r.Status != http.StatusCreated {
			t.Fatalf("status = %d, body %s", r.Status, r.Body)
		}
	}
	lookups, checks := h.calls.Count("DeviceByKey"), h.calls.Count("CreateReading", "CreateReadingOnce")
	if lookups != 1 || checks != 3 {
		t.Fatalf("lookups = %d, store checks = %d; want 1 and 3", lookups, checks)
	}
}

// A revoked key is refused at once even though it is cached (over the
// limit, once keyRecheckEvery has passed since the key was last confirmed),
// with 401 whatever else is wrong with the request, and is then forgotten.
func TestCachedKeyRevokedIsRefusedAtOnce(t *testing.T) {
	cases := map[string]struct {
		prepare func(h *harness)
		body    func(h *harness) string
	}{
		"good request": {body: func(h *harness) string { return readingBody(h.device.ID.String(), "1", `"1"`) }},
		"bad body":     {body: func(*harness) string { return `{"device_id":` }},
		"other device": {body: func(h *harness) string { return readingBody(h.device2.ID.String(), "1", `"1"`) }},
		"over the limit": {
			prepare: func(h *harness) {
				for range 119 {
					h.post(h.deviceKey, readingBody(h.device.ID.String(), "1", `"1"`))
				}
				h.clock.Advance(keyRecheckEvery) // a 429 rechecks only this often
			},
			body: func(h *harness) string { return readingBody(h.device.ID.String(), "1", `"1"`) },
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			h := newHarness(t)
			if r := h.post(h.deviceKey, readingBody(h.device.ID.String(), "1", `"1"`)); r.Status != http.StatusCreated {
				t.Fatalf("first post: status = %d, body %s", r.Status, r.Body)
			}
			if tc.prepare != nil {
				tc.prepare(h)
			}
			if _, err := h.store.RotateDeviceKey(context.Background(), h.farm, h.device.ID); err != nil {
				t.Fatal(err)
			}
			stored := len(h.readings())
			r := h.post(h.deviceKey, tc.body(h))
			expectError(t, r, http.StatusUnauthorized, furrow.EUNAUTHORIZED, "invalid")
			if r.Header.Get("Retry-After") != "" {
				t.Fatalf("401 carries retry-after %q", r.Header.Get("Retry-After"))
			}
			if len(h.readings()) != stored {
				t.Fatalf("a reading of the revoked key was stored")
			}
			lookups := h.calls.Count("DeviceByKey")
			r = h.post(h.deviceKey, tc.body(h))
			expectError(t, r, http.StatusUnauthorized, furrow.EUNAUTHORIZED, "invalid")
			if n := h.calls.Count("DeviceByKey"); n != lookups+1 {
				t.Fatalf("the revoked key was not forgotten: lookups %d -> %d", lookups, n)
			}
		})
	}
}

// A cached key that is still valid keeps the answer it earned.
func TestCachedKeyValidKeepsItsRefusal(t *testing.T) {
	h := newHarness(t)
	h.post(h.deviceKey, readingBody(h.device.ID.String(), "1", `"1"`))
	r := h.post(h.deviceKey, `{"device_id":`)
	expectError(t, r, http.StatusBadRequest, furrow.EINVALID, "")
	r = h.post(h.deviceKey, readingBody(h.device2.ID.String(), "1", `"1"`))
	expectError(t, r, http.StatusForbidden, furrow.EFORBIDDEN, "device_id")
}

func TestKeyCacheBounded(t *testing.T) {
	c := newKeyCache(2)
	sum := furrow.HashSecret
	for _, k := range []string{"a", "b", "c"} {
		c.put(sum(k), furrow.Device{ID: uuid.New(), Name: k}, time.Time{}, 0)
	}
	if len(c.entries) != 2 {
		t.Fatalf("cache holds %d entries, want 2", len(c.entries))
	}
	if d, ok := c.get(sum("c")); !ok || d.Name != "c" {
		t.Fatalf("the newest entry is missing")
	}
	c.forget(sum("c"))
	if _, ok := c.get(sum("c")); ok {
		t.Fatalf("forget kept the entry")
	}
}

// A device's new key replaces its old one in the cache, and forgetDevice
// forgets it.
func TestKeyCacheOneKeyPerDevice(t *testing.T) {
	c := newKeyCache(10)
	d := furrow.Device{ID: uuid.New()}
	c.put(furrow.HashSecret("old"), d, time.Time{}, 0)
	c.put(furrow.HashSecret("new"), d, time.Time{}, 0)
	if _, ok := c.get(furrow.HashSecret("old")); ok || len(c.entries) != 1 {
		t.Fatalf("the old key cached beside the new (%d entries)", len(c.entries))
	}
	since := c.revocation()
	c.forgetDevice(d.ID)
	if _, ok := c.get(furrow.HashSecret("new")); ok || len(c.byDevice) != 0 {
		t.Fatalf("forgetDevice kept the key (%d devices)", len(c.byDevice))
	}
	// A lookup that began before the revocation is not cached after it.
	c.put(furrow.HashSecret("new"), d, time.Time{}, since)
	if _, ok := c.get(furrow.HashSecret("new")); ok {
		t.Fatal("a key read before a revocation was cached after it")
	}
	c.put(furrow.HashSecret("new"), d, time.Time{}, c.revocation())
	if _, ok := c.get(furrow.HashSecret("new")); !ok {
		t.Fatal("a key read after the revocation was not cached")
	}
}

// A device looping over its rate limit costs a lookup of its cached key
// at most once per keyRecheckEvery, not one per 429; once the key is
// revoked, its 429s turn into 401 within keyRecheckEvery.
func TestRateLimitedCachedKeyRechecksBounded(t *testing.T) {
	h := newHarness(t)
	body := readingBody(h.device.ID.String(), "1", `"1"`)
	const posts, every = 200, 10 * time.Millisecond // 2 s of a firmware loop
	refused := 0
	for range posts {
		if h.post(h.deviceKey, body).Status == http.StatusTooManyRequests {
			refused++
		}
		h.clock.Advance(every)
	}
	if refused != posts-furrow.RateLimit {
		t.Fatalf("%d of %d posts refused, want %d", refused, posts, posts-furrow.RateLimit)
	}
	// The first lookup, and one per keyRecheckEvery of 429s at most.
	if n, most := h.calls.Count("DeviceByKey"), 1+int(posts*every/keyRecheckEvery); n > most {
		t.Fatalf("DeviceByKey called %d times for %d refusals, want at most %d", n, refused, most)
	}
	if _, err := h.store.RotateDeviceKey(context.Background(), h.farm, h.device.ID); err != nil {
		t.Fatal(err)
	}
	revoked := h.clock.Now()
	for {
		r := h.post(h.deviceKey, body)
		if r.Status == http.StatusUnauthorized {
			break
		}
		if r.Status != http.StatusTooManyRequests {
			t.Fatalf("a revoked key over the limit got %d, want 429 then 401", r.Status)
		}
		if h.clock.Now().Sub(revoked) > keyRecheckEvery {
			t.Fatalf("a revoked key still gets 429 %s after its revocation", h.clock.Now().Sub(revoked))
		}
		h.clock.Advance(every)
	}
}

// A device over its limit whose key is rotated through this instance gets
// 401 for the old key at once, not a 429 until its next recheck.
func TestRotatedKeyOverTheLimitIsRefusedAtOnce(t *testing.T) {
	h := newHarness(t)
	body := readingBody(h.device.ID.String(), "1", `"1"`)
	for range furrow.RateLimit {
		h.post(h.deviceKey, body)
	}
	if r := h.post(h.deviceKey, body); r.Status != http.StatusTooManyRequests {
		t.Fatalf("past the limit: %d, want 429", r.Status)
	}
	if r := h.user(h.manager, "POST", h.farmPath("/devices/"+h.device.ID.String()+"/keys"), ""); r.Status != http.StatusCreated {
		t.Fatalf("rotate: %d %s", r.Status, r.Body)
	}
	r := h.post(h.deviceKey, body)
	expectError(t, r, http.StatusUnauthorized, furrow.EUNAUTHORIZED, "invalid")
	if ra := r.Header.Get("Retry-After"); ra != "" {
		t.Fatalf("401 carries retry-after %q", ra)
	}
}

// furrow_ratelimit_rejected_total counts the requests answered 429: not a
// refusal answered 401 because the cached key was found revoked.
func TestRateLimitedCountedOnlyWhenAnswered429(t *testing.T) {
	h := newHarness(t)
	m := telemetry.New()
	h.deps.Limiter = m.Limiter(ratelimit.NewMemory(furrow.RateLimit, furrow.RateWindow, h.clock))
	h.rebuild()
	body := readingBody(h.device.ID.String(), "1", `"1"`)
	for range furrow.RateLimit {
		h.post(h.deviceKey, body)
	}
	expectError(t, h.post(h.deviceKey, body), http.StatusTooManyRequests, furrow.ERATELIMITED, "")
	if n := rejectedTotal(t, m); n != 1 {
		t.Fatalf("furrow_ratelimit_rejected_total = %v after one 429, want 1", n)
	}
	if _, err := h.store.RotateDeviceKey(context.Background(), h.farm, h.device.ID); err != nil {
		t.Fatal(err)
	}
	h.clock.Advance(keyRecheckEvery)
	expectError(t, h.post(h.deviceKey, body), http.StatusUnauthorized, furrow.EUNAUTHORIZED, "invalid")
	if n := rejectedTotal(t, m); n != 1 {
		t.Fatalf("furrow_ratelimit_rejected_total = %v after a 429 and a 401, want 1", n)
	}
}

// rejectedTotal reads furrow_ratelimit_rejected_total from m.
func rejectedTotal(t *testing.T, m *telemetry.Metrics) float64 {
	t.Helper()
	fams, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() == "furrow_ratelimit_rejected_total" {
			return f.GetMetric()[0].GetCounter().GetValue()
		}
	}
	t.Fatal("furrow_ratelimit_rejected_total is not registered")
	return 0
}
