package api

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/furrowhq/furrow"
)

// Bounds of the slow-body tests: a body sent slowLag after its headers
// arrives after the request's deadline (slowRequestTimeout) but inside
// the server's read timeout (slowReadTimeout), and one sent cutLag after
// them is cut by the read timeout.
const (
	slowRequestTimeout = time.Second
	slowReadTimeout    = 5 * time.Second
	slowLag            = 2500 * time.Millisecond
	cutLag             = 6 * time.Second
)

// slowServer serves h over TCP with slowReadTimeout and h's request
// timeout set to slowRequestTimeout.
func slowServer(t *testing.T, h *harness) string {
	t.Helper()
	h.cfg.RequestTimeout = slowRequestTimeout
	h.rebuild()
	srv := httptest.NewUnstartedServer(h.handler)
	srv.Config.ReadTimeout = slowReadTimeout
	srv.Start()
	t.Cleanup(srv.Close)
	return srv.Listener.Addr().String()
}

// sendSlowly sends a POST to path with header lines extra, its body lag
// after the headers, and returns what the server answered before closing
// the connection ("" for nothing).
func sendSlowly(t *testing.T, addr, path, extra, body string, lag time.Duration) string {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(lag + 10*time.Second))
	fmt.Fprintf(c, "POST %s HTTP/1.1\r\nHost: furrow\r\nConnection: close\r\nContent-Type: application/json\r\n%sContent-Length: %d\r\n\r\n",
		path, extra, len(body))
	time.Sleep(lag)
	_, _ = io.WriteString(c, body) // the server may have closed already
	answer, err := io.ReadAll(c)
	if errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("the server neither answered nor closed the connection; got %q", answer)
	}
	return string(answer)
}

// A body that arrives after the request's deadline has passed, but within
// the server's read timeout, leaves the request's work its whole deadline
// with every value the middlewares put in its context: the reading, and a
// device created on the farm of the path by the user of the token, are
// stored.
func TestSlowBodyGetsTheWholeDeadline(t *testing.T) {
	h := newHarness(t)
	addr := slowServer(t, h)
	cases := map[string]struct{ path, extra, body string }{
		"reading": {"/api/metric-values", "Authorization: Bearer " + h.deviceKey + "\r\n",
			readingBody(h.device.ID.String(), "220", "1")},
		"management": {h.farmPath("/devices"), "Authorization: Bearer " + h.manager + "\r\n", `{"name":"slow"}`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			answer := sendSlowly(t, addr, tc.path, tc.extra, tc.body, slowLag)
			if !strings.HasPrefix(answer, "HTTP/1.1 201 ") || !strings.Contains(answer, "X-Request-Id: ") {
				t.Fatalf("a body sent %s late got %q, want 201", slowLag, answer)
			}
		})
	}
}

// A body that stops coming is not a bad request: cut by the read timeout,
// or by the client's connection ending before its Content-Length, the
// request ends without an answer, which a device retries, and nothing is
// stored.
func TestCutBodyIsNotABadRequest(t *testing.T) {
	h := newHarness(t)
	addr := slowServer(t, h)
	auth := "Authorization: Bearer " + h.deviceKey + "\r\n"
	body := readingBody(h.device.ID.String(), "220", "1")
	t.Run("read timeout", func(t *testing.T) {
		if answer := sendSlowly(t, addr, "/api/metric-values", auth, body, cutLag); answer != "" {
			t.Fatalf("a body past the read timeout got %q, want the connection closed without an answer", answer)
		}
	})
	t.Run("connection ended", func(t *testing.T) {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(10 * time.Second))
		fmt.Fprintf(c, "POST /api/metric-values HTTP/1.1\r\nHost: furrow\r\n%sContent-Length: %d\r\n\r\n%s", auth, len(body), body[:10])
		_ = c.(*net.TCPConn).CloseWrite()
		if answer, _ := io.ReadAll(c); len(answer) != 0 {
			t.Fatalf("a body cut short by its client got %q, want no answer", answer)
		}
	})
	if n := len(h.readings()); n != 0 {
		t.Errorf("%d readings stored from cut bodies", n)
	}
	if logs := h.logs.String(); !strings.Contains(logs, "status=0 duration_ms") || !strings.Contains(logs, "aborted=true") {
		t.Errorf("a cut body is not logged as aborted before its status:\n%s", logs)
	}
}

// A body too large keeps its 413, and a malformed one its 400, however
// late it came.
func TestSlowBadBodyKeepsItsAnswer(t *testing.T) {
	h := newHarness(t)
	addr := slowServer(t, h)
	auth := "Authorization: Bearer " + h.deviceKey + "\r\n"
	for body, want := range map[string]int{
		"not json": http.StatusBadRequest,
		strings.Repeat(" ", DefaultMaxBodyBytes+1): http.StatusRequestEntityTooLarge,
	} {
		t.Run(fmt.Sprint(want), func(t *testing.T) {
			t.Parallel()
			answer := sendSlowly(t, addr, "/api/metric-values", auth, body, slowLag)
			if !strings.HasPrefix(answer, fmt.Sprintf("HTTP/1.1 %d ", want)) {
				t.Fatalf("got %.60q, want %d", answer, want)
			}
		})
	}
}

// slowReadings stores a reading after d: a PostgreSQL that takes a
// moment, well inside the request's deadline.
type slowReadings struct {
	furrow.ReadingService
	d time.Duration
}

func (s slowReadings) CreateReading(ctx context.Context, r furrow.Reading, k *furrow.SecretHash) (furrow.Reading, furrow.OutboxEvent, error) {
	time.Sleep(s.d)
	return s.ReadingService.CreateReading(ctx, r, k)
}

// A body that took most of the server's write timeout, then a store that
// takes a moment, still gets its answer written: the reading is stored,
// so a device left without its 201 would send it again.
func TestSlowBodyStillGetsItsAnswer(t *testing.T) {
	h := newHarness(t)
	h.cfg.RequestTimeout = 2 * time.Second
	h.cfg.WriteTimeout = slowReadTimeout
	h.deps.Readings = slowReadings{h.deps.Readings, 1500 * time.Millisecond}
	h.rebuild()
	srv := httptest.NewUnstartedServer(h.handler)
	srv.Config.ReadTimeout = slowReadTimeout
	srv.Config.WriteTimeout = slowReadTimeout
	srv.Start()
	t.Cleanup(srv.Close)
	answer := sendSlowly(t, srv.Listener.Addr().String(), "/api/metric-values",
		"Authorization: Bearer "+h.deviceKey+"\r\n", readingBody(h.device.ID.String(), "220", "1"), 4*time.Second)
	if n := len(h.readings()); !strings.HasPrefix(answer, "HTTP/1.1 201 ") || n != 1 {
		t.Fatalf("%d readings stored, the device got %q; want one stored and its 201", n, answer)
	}
}
