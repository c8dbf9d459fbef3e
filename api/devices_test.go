package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/furrowhq/furrow"
	"github.com/furrowhq/furrow/internal/memstore"
)

// addDevices gives the harness farm n more devices, named in a shuffled
// order, and returns the names of all its devices in the list's order.
func addDevices(t *testing.T, h *harness, n int) []string {
	t.Helper()
	names := []string{h.device.Name, h.device2.Name}
	for _, i := range rand.Perm(n) {
		name := fmt.Sprintf("sensor-%05d", i)
		if _, _, err := h.store.CreateDevice(t.Context(), h.farm, name); err != nil {
			t.Fatal(err)
		}
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

func TestDevicesWholeListIsReadPageByPage(t *testing.T) {
	h := newHarness(t)
	want := addDevices(t, h, 2*furrow.MaxListLimit+345)
	r := h.user(h.viewer, "GET", h.farmPath("/devices"), "")
	var whole []deviceOut
	decode(t, r, &whole)
	if got := pageNames(whole); r.Status != http.StatusOK || !slices.Equal(got, want) || r.Header.Get("Furrow-Next-Cursor") != "" {
		t.Fatalf("%d: %d devices, want %d in order and no next page", r.Status, len(got), len(want))
	}
	if n := h.calls.Count("Devices"); n != 3 {
		t.Fatalf("the whole list of %d devices read the store %d times, want in 3 pages", len(want), n)
	}
	for _, d := range whole {
		if d.Status != furrow.DeviceNever || d.LastSeenMs != nil || d.ID.String() == "" {
			t.Fatalf("device %+v", d)
		}
	}
	// Byte for byte what the pages answer, in one array.
	var paged []json.RawMessage
	for _, q := range []string{"?limit=1000", "?limit=1000&cursor=", "?limit=1000&cursor="} {
		if len(paged) > 0 {
			q += encodeDeviceCursor(furrow.DevicePlace{Name: whole[len(paged)-1].Name, ID: whole[len(paged)-1].ID})
		}
		var page []json.RawMessage
		decode(t, h.user(h.viewer, "GET", h.farmPath("/devices"+q), ""), &page)
		paged = append(paged, page...)
	}
	if b, _ := json.Marshal(paged); strings.TrimSpace(r.Body) != string(b) {
		t.Fatal("the whole list is not the pages' devices in one array")
	}
	var farm furrow.Farm
	decode(t, h.user(h.owner, "POST", "/api/farms", `{"name":"Empty"}`), &farm)
	empty := h.user(h.owner, "GET", "/api/farms/"+farm.ID.String()+"/devices", "")
	if empty.Status != http.StatusOK || empty.Body != "[]\n" {
		t.Fatalf("a farm without devices: %d %q", empty.Status, empty.Body)
	}
}

func TestDevicesWholeListFailures(t *testing.T) {
	h := newHarness(t)
	addDevices(t, h, furrow.MaxListLimit+1)
	var calls atomic.Int32
	failAt := int32(0)
	h.store.Fault(func(c memstore.Call) error {
		if c.Method == "Devices" && calls.Add(1)-1 == failAt {
			return errors.New("connection to db-secret-host lost")
		}
		return nil
	})
	// Before anything is written: the usual 500.
	r := h.user(h.viewer, "GET", h.farmPath("/devices"), "")
	expectError(t, r, http.StatusInternalServerError, furrow.EINTERNAL, "")
	if strings.Contains(r.Body, "db-secret-host") {
		t.Fatal("the store's error reached the client")
	}

	// After the first page is written: the status is out, so the
	// connection is cut before the array closes.
	calls.Store(0)
	failAt = 1
	srv := httptest.NewServer(h.handler)
	defer srv.Close()
	q, _ := http.NewRequestWithContext(t.Context(), "GET", srv.URL+h.farmPath("/devices"), nil)
	q.Header.Set("Authorization", "Bearer "+h.viewer)
	resp, err := srv.Client().Do(q)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || err == nil {
		t.Fatalf("cut off after the first page: %d, read %d bytes, %v; want 200 and a failed read", resp.StatusCode, len(body), err)
	}
	if json.Valid(body) || !strings.HasPrefix(string(body), `[{"id":`) {
		t.Fatalf("the cut list reads as %.40q…, valid JSON %v", body, json.Valid(body))
	}
	// The handler's cut and the request's own line, marked, are logged.
	logs := h.logs.String()
	if !strings.Contains(logs, "devices list cut off") || !strings.Contains(logs, "msg=request") ||
		!strings.Contains(logs, "status=200") || !strings.Contains(logs, "aborted=true") {
		t.Fatalf("the cut is not logged: %s", logs)
	}
}

// The whole list gives each page the request's deadline, not the whole
// list one: three pages each slower than half the deadline are answered
// in full, while a page slower than the deadline still fails.
func TestDevicesWholeListDeadlineIsPerPage(t *testing.T) {
	h := newHarness(t)
	h.cfg.RequestTimeout = 300 * time.Millisecond
	h.rebuild()
	var before []json.RawMessage
	decode(t, h.user(h.viewer, "GET", h.farmPath("/devices"), ""), &before)
	addDevices(t, h, 2*furrow.MaxListLimit+1)
	want := len(before) + 2*furrow.MaxListLimit + 1
	var pause atomic.Int64
	pause.Store(int64(200 * time.Millisecond))
	h.store.Fault(func(c memstore.Call) error {
		if c.Method == "Devices" {
			time.Sleep(time.Duration(pause.Load()))
		}
		return nil
	})
	srv := httptest.NewServer(h.handler)
	defer srv.Close()
	get := func() (int, []byte, error) {
		q, _ := http.NewRequestWithContext(t.Context(), "GET", srv.URL+h.farmPath("/devices"), nil)
		q.Header.Set("Authorization", "Bearer "+h.viewer)
		resp, err := srv.Client().Do(q)
		if err != nil {
			return 0, nil, err
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		return resp.StatusCode, body, err
	}
	status, body, err := get()
	var all []json.RawMessage
	if err != nil || status != http.StatusOK || json.Unmarshal(body, &all) != nil || len(all) != want {
		t.Fatalf("three pages of 200 ms under a 300 ms deadline: %d, %d devices, %v; want 200 and all %d", status, len(all), err, want)
	}
	pause.Store(int64(450 * time.Millisecond))
	if status, body, err = get(); status != http.StatusInternalServerError {
		t.Fatalf("a page slower than the deadline: %d %.60s %v; want 500", status, body, err)
	}
}
