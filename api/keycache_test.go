package api

import (
	"context"
	"net/http"
	"testing"

	"github.com/furrowhq/furrow"
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

// A revoked key is refused at once even though it is cached, with 401
// whatever else is wrong with the request, and is then forgotten.
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
		c.put(sum(k), furrow.Device{Name: k})
	}
	if len(c.devices) != 2 {
		t.Fatalf("cache holds %d entries, want 2", len(c.devices))
	}
	if d, ok := c.get(sum("c")); !ok || d.Name != "c" {
		t.Fatalf("the newest entry is missing")
	}
	c.forget(sum("c"))
	if _, ok := c.get(sum("c")); ok {
		t.Fatalf("forget kept the entry")
	}
}
