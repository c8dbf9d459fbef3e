package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/furrowhq/furrow/internal/testenv"
)

// TestShutdownFinishesReadingsWhileSocketsClose stops furrow while a live
// socket never reads (so its close handshake waits the library's full
// timeout) and a reading's body is still arriving: the reading is answered
// 201, because closing sockets does not use up the requests' time.
func TestShutdownFinishesReadingsWhileSocketsClose(t *testing.T) {
	testenv.SkipShort(t, "the furrow binary (furrow dev, embedded Temporal server)")
	e := newDevEnv(t, "FURROW_SHUTDOWN_TIMEOUT", "3s")
	u, err := url.Parse(e.f.URL)
	if err != nil {
		t.Fatal(err)
	}

	// A live socket that is upgraded and then never read again.
	ws, err := net.Dial("tcp", u.Host)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	fmt.Fprintf(ws, "GET /api/live?topic=farms/%s/readings HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"+
		"Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nAuthorization: Bearer %s\r\n\r\n", e.fx.FarmID, u.Host, e.fx.Token)
	resp, err := http.ReadResponse(bufio.NewReader(ws), nil)
	if err != nil || resp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("upgrade: %v %v", resp, err)
	}

	// A reading whose body is sent in two halves, across the stop.
	body, _ := json.Marshal(reading(e.fx.DeviceID, 7.5))
	post, err := net.Dial("tcp", u.Host)
	if err != nil {
		t.Fatal(err)
	}
	defer post.Close()
	fmt.Fprintf(post, "POST /api/metric-values HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s",
		u.Host, e.fx.Key, len(body), body[:len(body)/2])

	if err := syscall.Kill(e.f.p.Pid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	// Past the drain grace (a quarter of the timeout, at most 1 s), once
	// the HTTP shutdown is under way, the rest of the body arrives.
	time.Sleep(1500 * time.Millisecond)
	if _, err := post.Write(body[len(body)/2:]); err != nil {
		t.Fatalf("the reading's connection was closed during the shutdown: %v", err)
	}
	_ = post.SetReadDeadline(time.Now().Add(10 * time.Second))
	answer, err := http.ReadResponse(bufio.NewReader(post), nil)
	if err != nil {
		t.Fatalf("no answer to a reading in flight at shutdown: %v\n%s", err, e.f.Logs())
	}
	if answer.StatusCode != http.StatusCreated {
		t.Fatalf("a reading in flight at shutdown answered %d, want 201", answer.StatusCode)
	}
	if strings.Contains(e.f.Logs(), "panic") {
		t.Fatalf("furrow panicked while stopping:\n%s", e.f.Logs())
	}
}
