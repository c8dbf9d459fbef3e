// Package tcpdial makes the TCP dialer of Furrow's PostgreSQL and Redis
// clients, so that a peer that goes silent (packets dropped, not refused) is
// found by the kernel within a bound instead of after the operating
// system's default of many minutes.
package tcpdial

import (
	"net"
	"time"
)

// Dialer returns a dialer whose connect attempts end after connect and
// whose connections are declared dead once the peer has been silent for
// about dead: keepalive probes start after dead/2 of idleness and give up
// after dead, and where the platform has it (Linux), TCP_USER_TIMEOUT
// drops a connection whose sent data stays unacknowledged for dead.
func Dialer(connect, dead time.Duration) *net.Dialer {
	probes := 4
	interval := max(dead/2/time.Duration(probes), time.Second)
	return &net.Dialer{
		Timeout: connect,
		KeepAliveConfig: net.KeepAliveConfig{
			Enable:   true,
			Idle:     max(dead/2, time.Second),
			Interval: interval,
			Count:    probes,
		},
		Control: userTimeout(dead),
	}
}
