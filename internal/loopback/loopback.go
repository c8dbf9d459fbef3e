// Package loopback stands servers up on the loopback interface for the
// end-to-end tests, the measuring tools and the example receiver: free
// ports, furrow processes started on them, and certificates for HTTPS on
// 127.0.0.1. It depends on the standard library only, so that the furrow
// binary can carry it for `furrow bench`.
package loopback

import "net"

// FreeAddr returns a loopback address with a port nobody listens on.
func FreeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}
