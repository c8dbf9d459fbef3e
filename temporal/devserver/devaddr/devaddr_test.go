package devaddr

import (
	"strings"
	"testing"
)

func TestSplit(t *testing.T) {
	for addr, want := range map[string]struct {
		ip   string
		port int
	}{
		"127.0.0.1:7233": {"127.0.0.1", 7233},
		"localhost:8233": {"127.0.0.1", 8233},
		":0":             {"127.0.0.1", 0},
		"[::1]:7233":     {"::1", 7233},
		"0.0.0.0:65535":  {"0.0.0.0", 65535},
	} {
		ip, port, err := Split(addr)
		if err != nil || ip != want.ip || port != want.port {
			t.Errorf("Split(%q) = %q, %d, %v; want %q, %d", addr, ip, port, err, want.ip, want.port)
		}
	}
	for addr, says := range map[string]string{
		"127.0.0.1":        "is not ip:port",
		"http://1.2.3.4:1": "is not ip:port",
		"example.com:80":   "must be an IP address",
		"127.0.0.1:-1":     "from 0 to 65535",
		"127.0.0.1:65536":  "from 0 to 65535",
		"127.0.0.1:http":   "from 0 to 65535",
	} {
		if _, _, err := Split(addr); err == nil || !strings.Contains(err.Error(), says) || !strings.Contains(err.Error(), addr) {
			t.Errorf("Split(%q): %v; want an error quoting it and saying %q", addr, err, says)
		}
	}
}
