package tcpdial

import (
	"net"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// The dialer's connections carry the keepalive and user timeout that make
// a silent peer fail within the bound.
func TestDialerSetsDeadPeerBounds(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	c, err := Dialer(time.Second, 10*time.Second).Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	raw, err := c.(*net.TCPConn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	opts := map[string][2]int{
		"TCP_USER_TIMEOUT": {unix.TCP_USER_TIMEOUT, 10000},
		"TCP_KEEPIDLE":     {unix.TCP_KEEPIDLE, 5},
		"TCP_KEEPCNT":      {unix.TCP_KEEPCNT, 4},
	}
	for name, o := range opts {
		var got int
		var gerr error
		_ = raw.Control(func(fd uintptr) { got, gerr = unix.GetsockoptInt(int(fd), syscall.IPPROTO_TCP, o[0]) })
		if gerr != nil || got != o[1] {
			t.Errorf("%s = %d (%v), want %d", name, got, gerr, o[1])
		}
	}
}
