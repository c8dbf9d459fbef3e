package devserver

import (
	"net"
	"net/netip"
	"strconv"
	"testing"

	"github.com/furrowhq/furrow"
)

// FuzzSplitAddr checks that any address text is either refused with
// EINVALID or parsed into an IP and a port that survive a round trip.
func FuzzSplitAddr(f *testing.F) {
	for _, seed := range []string{
		"127.0.0.1:7233", "localhost:8233", ":0", "[::1]:7233", "0.0.0.0:65535",
		"127.0.0.1", "example.com:80", "127.0.0.1:-1", "127.0.0.1:65536", "[::1", "",
		"127.0.0.1:+80", "[fe80::1%eth0]:1", "1.2.3.4:0x10",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, addr string) {
		ip, port, err := splitAddr("test", addr)
		if err != nil {
			if furrow.ErrorCode(err) != furrow.EINVALID {
				t.Fatalf("splitAddr(%q) error %v has code %q; want %q", addr, err, furrow.ErrorCode(err), furrow.EINVALID)
			}
			return
		}
		if _, perr := netip.ParseAddr(ip); perr != nil {
			t.Fatalf("splitAddr(%q) ip %q does not parse: %v", addr, ip, perr)
		}
		if port < 0 || port > 65535 {
			t.Fatalf("splitAddr(%q) port %d out of range", addr, port)
		}
		ip2, port2, err := splitAddr("test", net.JoinHostPort(ip, strconv.Itoa(port)))
		if err != nil || ip2 != ip || port2 != port {
			t.Fatalf("round trip of %q gave %q %d %v; want %q %d", addr, ip2, port2, err, ip, port)
		}
	})
}
