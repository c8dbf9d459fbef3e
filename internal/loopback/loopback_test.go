package loopback

import (
	"net"
	"strconv"
	"testing"
)

// TestFreeAddrStaysBelowTheClusterAndEphemeralRanges checks that FreeAddr
// hands out bindable loopback ports below those of cluster.sh and of the
// kernel's ephemeral range, never the same one twice.
func TestFreeAddrStaysBelowTheClusterAndEphemeralRanges(t *testing.T) {
	high := min(ephemeralLow(), highestPort)
	seen := map[string]bool{}
	for range 50 {
		addr, err := FreeAddr()
		if err != nil {
			t.Fatal(err)
		}
		host, p, err := net.SplitHostPort(addr)
		if err != nil {
			t.Fatal(err)
		}
		port, _ := strconv.Atoi(p)
		if host != "127.0.0.1" || port < lowestPort || port >= high {
			t.Fatalf("FreeAddr = %s; want 127.0.0.1 and a port in [%d, %d)", addr, lowestPort, high)
		}
		if seen[addr] {
			t.Fatalf("FreeAddr handed out %s twice", addr)
		}
		seen[addr] = true
		l, err := net.Listen("tcp", addr)
		if err != nil {
			t.Fatalf("FreeAddr's %s cannot be bound: %v", addr, err)
		}
		l.Close()
	}
}

// TestFreeAddrSkipsABoundPort checks that a port some listener holds is
// not handed out.
func TestFreeAddrSkipsABoundPort(t *testing.T) {
	var l net.Listener
	port := lowestPort
	for ; l == nil && port < ephemeralLow(); port++ {
		l, _ = net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
	}
	if l == nil {
		t.Fatal("no port below the ephemeral range could be bound")
	}
	defer l.Close()
	if _, ok := claim(port - 1); ok {
		t.Fatalf("claim took port %d, which a listener holds", port-1)
	}
}
