package testenv

import (
	"net"
	"testing"
)

// ClosedAddr returns a local address nothing listens on, for tests of what
// a client does when its server is not there.
func ClosedAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}
