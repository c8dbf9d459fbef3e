// Package devaddr reads the listen addresses of the embedded Temporal
// server of `furrow dev`. It stands apart from the server so that the
// production build, which leaves the server out, checks the settings
// naming them by the same rule.
package devaddr

import (
	"fmt"
	"net"
	"net/netip"
	"strconv"
)

// Split parses addr as ip:port. The server needs an IP to bind and to
// advertise, so an empty host or "localhost" is read as 127.0.0.1 and other
// names are refused; port 0 picks a free port.
func Split(addr string) (ip string, port int, err error) {
	host, portText, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, fmt.Errorf("%q is not ip:port, such as 127.0.0.1:7233", addr)
	}
	if host == "localhost" || host == "" {
		host = "127.0.0.1"
	}
	a, err := netip.ParseAddr(host)
	if err != nil {
		return "", 0, fmt.Errorf("%q: the host must be an IP address (or localhost)", addr)
	}
	port, err = strconv.Atoi(portText)
	if err != nil || port < 0 || port > 65535 {
		return "", 0, fmt.Errorf("%q: the port must be a number from 0 to 65535", addr)
	}
	return a.String(), port, nil
}
