// Package receiverpython holds the test of the Python example receiver,
// receiver.py: it runs the receiver and sends it requests over raw
// connections, well-formed and not, so that the example stays safe to copy.
// (TestVectorsPythonReceiver in webhook/ checks its verdicts against the
// signature vectors.)
package receiverpython

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/furrowhq/furrow/internal/testenv"
	"github.com/furrowhq/furrow/webhook"
)

const secret = "whsec_AQIDBAUGBwgJCgsMDQ4PEBESExQVFhcYGRobHB0eHyA="

// timeout is receiver.py's TIMEOUT: how long a read or write on a
// connection may wait.
const timeout = 10 * time.Second

// receiver runs receiver.py on a free port and returns its address, once it
// accepts connections, and its standard error.
func receiver(t *testing.T) (string, *testenv.Buffer) {
	t.Helper()
	return testenv.PythonReceiver(t, "receiver.py", secret)
}

// post sends a POST of body with the given header lines (each "Name: value")
// over a new connection, and returns the answer's status, or an error
// when there is none.
func post(addr string, headers []string, body string) (int, error) {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(timeout / 2)) // every answer here comes at once
	req := "POST /hook HTTP/1.1\r\nHost: " + addr + "\r\n" + strings.Join(append(headers, ""), "\r\n") + "\r\n" + body
	if _, err := io.WriteString(c, req); err != nil {
		return 0, err
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return 0, fmt.Errorf("no answer: %w", err)
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}

// signed returns the header lines of a delivery of body signed with
// X-Service-Signature, its v1 value passed through edit.
func signed(body string, edit func(v1 string) string) []string {
	h := webhook.Sign(secret, time.Now(), []byte(body))
	i := strings.Index(h, "v1=") + len("v1=")
	return []string{
		"Content-Type: application/json",
		"Content-Length: " + strconv.Itoa(len(body)),
		webhook.SignatureHeader + ": " + h[:i] + edit(h[i:]),
	}
}

func unchanged(v1 string) string { return v1 }

func event(n int) string {
	return fmt.Sprintf(`{"id":"evt_0b8a4f0e-2d7c-4a36-9b8e-3f1c2a5d6e%02d","type":"metric.value","data":{"value":"21.50"}}`, n)
}

// TestPythonReceiverRefusesBadRequests: a Content-Length that is missing,
// not a number or negative is 400 and one above the bound 413, answered at
// once (never a dropped connection, a traceback or a read to the end of
// the stream); a v1 signature with blanks among its hex digits is
// malformed, as the Go verifier says; a signed body that is not an event
// is 400; and a client that stops sending loses its connection after the
// receiver's timeout instead of holding a thread.
func TestPythonReceiverRefusesBadRequests(t *testing.T) {
	addr, stderr := receiver(t)

	// Silent clients, started first since they take the timeout: one sends
	// nothing, one stops in the middle of its body.
	silent := map[string]string{
		"nothing sent":   "",
		"body cut short": "POST /hook HTTP/1.1\r\nHost: " + addr + "\r\nContent-Length: 10\r\n\r\nab",
	}
	problems := make(chan string, len(silent))
	for name, sent := range silent {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		if _, err := io.WriteString(c, sent); err != nil {
			t.Fatal(err)
		}
		go func() {
			start := time.Now()
			_ = c.SetReadDeadline(start.Add(timeout + 10*time.Second))
			_, err := io.ReadAll(c)
			var netErr net.Error
			switch took := time.Since(start); {
			case errors.As(err, &netErr) && netErr.Timeout():
				problems <- fmt.Sprintf("%s: the receiver still held the connection after %s", name, took.Round(time.Second))
			case took < timeout/2:
				problems <- fmt.Sprintf("%s: the connection ended after %s, before the timeout (%v)", name, took, err)
			default:
				problems <- ""
			}
		}()
	}

	valid := func(body string) int {
		got, err := post(addr, signed(body, unchanged), body)
		if err != nil {
			t.Errorf("a valid delivery: %v", err)
		}
		return got
	}
	if got := valid(event(1)); got != http.StatusNoContent {
		t.Fatalf("a valid delivery: %d, want 204\n%s", got, stderr)
	}

	body := event(2)
	sig := signed(body, unchanged)[2]
	for _, tc := range []struct {
		name    string
		headers []string
		body    string
		want    int
	}{
		{"Content-Length missing", []string{sig}, "", http.StatusBadRequest},
		{"Content-Length abc", []string{"Content-Length: abc", sig}, body, http.StatusBadRequest},
		{"Content-Length -1", []string{"Content-Length: -1", sig}, body, http.StatusBadRequest},
		{"Content-Length +5", []string{"Content-Length: +5", sig}, body, http.StatusBadRequest},
		{"Content-Length 1_0", []string{"Content-Length: 1_0", sig}, body, http.StatusBadRequest},
		{"Content-Length empty", []string{"Content-Length: ", sig}, body, http.StatusBadRequest},
		{"two Content-Lengths", []string{"Content-Length: 3", "Content-Length: " + strconv.Itoa(len(body)), sig}, body, http.StatusBadRequest},
		{"Content-Length over 1 MiB", []string{"Content-Length: 1048577", sig}, "", http.StatusRequestEntityTooLarge},
		{"Content-Length of 30 digits", []string{"Content-Length: " + strings.Repeat("9", 30), sig}, "", http.StatusRequestEntityTooLarge},
		{"signed body not JSON", signed("not json", unchanged), "not json", http.StatusBadRequest},
		{"signed JSON not an event", signed(`[1]`, unchanged), `[1]`, http.StatusBadRequest},
	} {
		if got, err := post(addr, tc.headers, tc.body); got != tc.want {
			t.Errorf("%s: %d, want %d (%v)", tc.name, got, tc.want, err)
		}
	}

	// Blanks among the hex digits: bytes.fromhex reads the same 32 bytes,
	// the Go verifier refuses the header as malformed, and so must the
	// example.
	for name, edit := range map[string]func(string) string{
		"a space in v1": func(v1 string) string { return v1[:32] + " " + v1[32:] },
		"a tab in v1":   func(v1 string) string { return v1[:2] + "\t" + v1[2:] },
		"spaces in v1":  spaced,
	} {
		body := event(3)
		headers := signed(body, edit)
		header := strings.TrimPrefix(headers[2], webhook.SignatureHeader+": ")
		if err := webhook.Verify(secret, header, []byte(body), time.Now()); !errors.Is(err, webhook.ErrMalformed) {
			t.Errorf("%s: the Go verifier says %v, want malformed", name, err)
		}
		if got, err := post(addr, headers, body); got != http.StatusBadRequest {
			t.Errorf("%s: %d, want 400 (malformed) (%v)", name, got, err)
		}
	}
	if got := valid(event(4)); got != http.StatusNoContent {
		t.Errorf("a valid delivery after the bad requests: %d, want 204", got)
	}

	for range silent {
		if p := <-problems; p != "" {
			t.Error(p)
		}
	}
	if out := stderr.String(); strings.Contains(out, "Traceback") {
		t.Errorf("receiver.py printed a traceback:\n%s", out)
	}
}

// spaced writes hex as bytes.fromhex's documentation shows it: pairs of
// digits separated by spaces.
func spaced(hex string) string {
	var b strings.Builder
	for i := 0; i < len(hex); i += 2 {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(hex[i : i+2])
	}
	return b.String()
}
