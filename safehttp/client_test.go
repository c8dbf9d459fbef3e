package safehttp

import (
	"encoding/pem"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/furrowhq/furrow"
)

func newClient(t *testing.T, opts Options) *http.Client {
	t.Helper()
	c, err := New(opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return c
}

// okServer answers 204 and counts the requests that reached it.
func okServer(t *testing.T) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(srv.Close)
	return srv, &hits
}

func TestGuardRefusesInternalTargets(t *testing.T) {
	srv, hits := okServer(t)
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	c := newClient(t, Options{})
	targets := map[string]string{
		"IPv4 loopback":      "http://127.0.0.1:" + port + "/",
		"IPv6 loopback":      "http://[::1]:" + port + "/",
		"IPv4-mapped IPv6":   "http://[::ffff:127.0.0.1]:" + port + "/",
		"name to loopback":   "http://localhost:" + port + "/",
		"private":            "http://10.0.0.1:" + port + "/",
		"link-local":         "http://169.254.169.254/latest/meta-data/",
		"unspecified":        "http://0.0.0.0:" + port + "/",
		"IPv6 unspecified":   "http://[::]:" + port + "/",
		"IPv6 unique local":  "https://[fd00::1]/",
		"CGNAT over https":   "https://100.64.0.1/",
		"mapped link-local":  "http://[::ffff:169.254.169.254]/",
		"NAT64 to loopback":  "http://[64:ff9b::7f00:1]:" + port + "/",
		"decimal IPv4 guise": "http://2130706433:" + port + "/",
	}
	for name, target := range targets {
		t.Run(name, func(t *testing.T) {
			resp, err := c.Get(target)
			if err == nil {
				resp.Body.Close()
				t.Fatalf("GET %s succeeded with %d", target, resp.StatusCode)
			}
			// A name that does not resolve never reaches the guard; it must
			// still fail, and must not reach the server.
			if name != "decimal IPv4 guise" && !errors.Is(err, ErrForbiddenAddress) {
				t.Fatalf("GET %s: %v, want ErrForbiddenAddress", target, err)
			}
		})
	}
	if n := hits.Load(); n != 0 {
		t.Fatalf("server was reached %d times through the guard", n)
	}
}

func TestGuardErrorNamesAddress(t *testing.T) {
	c := newClient(t, Options{})
	_, err := c.Get("http://127.0.0.1:9/")
	if !errors.Is(err, ErrForbiddenAddress) || !strings.Contains(err.Error(), "127.0.0.1") || !strings.Contains(err.Error(), "loopback") {
		t.Fatalf("error %v should wrap ErrForbiddenAddress and name 127.0.0.1 as loopback", err)
	}
}

func TestControlChecksDialedAddress(t *testing.T) {
	refused := []string{"127.0.0.1:443", "[::1]:443", "[::ffff:10.0.0.1]:443", "[fe80::1%lo]:443", "not-an-address"}
	for _, a := range refused {
		if err := control("tcp", a, nil); !errors.Is(err, ErrForbiddenAddress) {
			t.Errorf("control(%q) = %v, want ErrForbiddenAddress", a, err)
		}
	}
	for _, a := range []string{"93.184.215.14:443", "[2606:4700:4700::1111]:443"} {
		if err := control("tcp", a, nil); err != nil {
			t.Errorf("control(%q) = %v, want nil", a, err)
		}
	}
}

func TestAllowPrivateReachesLoopback(t *testing.T) {
	srv, hits := okServer(t)
	resp, err := newClient(t, Options{AllowPrivate: true}).Get(srv.URL)
	if err != nil {
		t.Fatalf("GET with AllowPrivate: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent || hits.Load() != 1 {
		t.Fatalf("status %d, hits %d; want 204 and 1", resp.StatusCode, hits.Load())
	}
}

func TestRedirectNotFollowed(t *testing.T) {
	target, hits := okServer(t)
	srv := httptest.NewServer(http.RedirectHandler(target.URL, http.StatusFound))
	t.Cleanup(srv.Close)
	resp, err := newClient(t, Options{AllowPrivate: true}).Post(srv.URL, "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatalf("POST: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusFound {
		t.Fatalf("status = %d, want the 302 itself", resp.StatusCode)
	}
	if resp.Header.Get("Location") != target.URL {
		t.Fatalf("Location = %q, want %q", resp.Header.Get("Location"), target.URL)
	}
	if hits.Load() != 0 {
		t.Fatalf("redirect target was reached %d times", hits.Load())
	}
}

func TestCAFileTrust(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "ok")
	}))
	t.Cleanup(srv.Close)

	if _, err := newClient(t, Options{AllowPrivate: true}).Get(srv.URL); err == nil {
		t.Fatal("GET of a self-signed server without its CA succeeded")
	}

	caFile := filepath.Join(t.TempDir(), "ca.pem")
	block := &pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}
	if err := os.WriteFile(caFile, pem.EncodeToMemory(block), 0o600); err != nil {
		t.Fatal(err)
	}
	resp, err := newClient(t, Options{AllowPrivate: true, CAFile: caFile}).Get(srv.URL)
	if err != nil {
		t.Fatalf("GET with CAFile: %v", err)
	}
	defer resp.Body.Close()
	if body, _ := io.ReadAll(resp.Body); string(body) != "ok" {
		t.Fatalf("body = %q, want ok", body)
	}
}

func TestCAFileErrors(t *testing.T) {
	dir := t.TempDir()
	garbage := filepath.Join(dir, "garbage.pem")
	if err := os.WriteFile(garbage, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	for name, file := range map[string]string{
		"missing":  filepath.Join(dir, "absent.pem"),
		"no certs": garbage,
	} {
		if c, err := New(Options{CAFile: file}); err == nil || c != nil {
			t.Errorf("%s: New = %v, %v; want an error", name, c, err)
		}
	}
}

func TestTimeout(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(release) })

	c := newClient(t, Options{AllowPrivate: true, Timeout: 50 * time.Millisecond})
	_, err := c.Get(srv.URL)
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("GET of a silent server = %v, want a timeout error", err)
	}
}

func TestResponseHeadIsBounded(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("X-Big", strings.Repeat("a", MaxResponseHeaderBytes))
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(srv.Close)
	resp, err := newClient(t, Options{AllowPrivate: true}).Get(srv.URL)
	if err == nil {
		resp.Body.Close()
		t.Fatalf("an answer with a head over %d bytes was read: status %d", MaxResponseHeaderBytes, resp.StatusCode)
	}
}

func TestDefaults(t *testing.T) {
	c := newClient(t, Options{})
	if c.Timeout != furrow.DeliveryTimeout {
		t.Fatalf("Timeout = %v, want %v", c.Timeout, furrow.DeliveryTimeout)
	}
	tr, ok := c.Transport.(*http.Transport)
	if !ok || tr.Proxy != nil {
		t.Fatalf("transport %T must not use a proxy", c.Transport)
	}
}
