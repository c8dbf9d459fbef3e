// Package loopback stands servers up on the loopback interface for the
// end-to-end tests, the measuring tools and the example receiver: free
// ports, furrow processes started on them, and certificates for HTTPS on
// 127.0.0.1. It depends on the standard library only, so that the furrow
// binary can carry it for `furrow bench`.
package loopback

import (
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
)

// FreeAddr hands out ports from lowestPort up to, not including,
// highestPort: above the well-known ports of the services a machine may
// run, and below the ports deploy/local/cluster.sh draws (20000 to 31999),
// so that a test's server and a topology started beside it never pick the
// same port.
const (
	lowestPort  = 10000
	highestPort = 20000
)

var (
	takenMu sync.Mutex
	taken   = map[int]bool{} // ports handed out by this process
)

// FreeAddr returns a loopback address with a port nobody listens on and
// that no earlier call of this process handed out. The port lies below the
// kernel's ephemeral range: between this call and the server's bind, a
// port of that range may be given to an outgoing connection or to a
// listener on port 0, even of the very process that is to bind it.
func FreeAddr() (string, error) {
	high := min(ephemeralLow(), highestPort)
	for range 200 {
		port := lowestPort + rand.IntN(high-lowestPort)
		if addr, ok := claim(port); ok {
			return addr, nil
		}
	}
	// Every try taken: let the kernel choose, as a last resort.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// claim reports whether port is free now and was not handed out before,
// and takes it.
func claim(port int) (string, bool) {
	takenMu.Lock()
	defer takenMu.Unlock()
	if taken[port] {
		return "", false
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return "", false
	}
	l.Close()
	taken[port] = true
	return addr, true
}

// ephemeralLow is the first port of the kernel's ephemeral range, 32768
// when it cannot be read (Linux's default, and below most systems' range).
func ephemeralLow() int {
	const fallback = 32768
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return fallback
	}
	fields := strings.Fields(string(b))
	if len(fields) == 0 {
		return fallback
	}
	low, err := strconv.Atoi(fields[0])
	if err != nil || low <= lowestPort+1000 {
		return fallback
	}
	return low
}
