//go:build !linux

package tcpdial

import (
	"syscall"
	"time"
)

// userTimeout does nothing where TCP_USER_TIMEOUT is not available; the
// keepalive probes still find a silent peer.
func userTimeout(time.Duration) func(network, address string, c syscall.RawConn) error {
	return nil
}
