package devserver

import (
	"net"
	"strconv"
	"strings"
	"testing"
)

// TestResolvePicksDistinctPorts checks that the ports chosen for the
// frontend, the internal services and the UI are all different, and free
// again once chosen.
func TestResolvePicksDistinctPorts(t *testing.T) {
	for range 20 {
		r, err := resolve(Options{FrontendAddr: "127.0.0.1:0", UIAddr: "127.0.0.1:0"})
		if err != nil {
			t.Fatal(err)
		}
		_, uiPort, err := net.SplitHostPort(r.uiAddr)
		if err != nil {
			t.Fatal(err)
		}
		ports := map[string]string{strconv.Itoa(r.frontendPort): "frontend", uiPort: "ui"}
		for svc, p := range r.servicePorts {
			ports[strconv.Itoa(p)] = svc
		}
		if len(ports) != 2+len(r.servicePorts) {
			t.Fatalf("ports %v: two of frontend %d, UI %s and services %v are the same", ports, r.frontendPort, uiPort, r.servicePorts)
		}
		for p := range ports {
			l, err := net.Listen("tcp", "127.0.0.1:"+p)
			if err != nil {
				t.Fatalf("port %s (%s) is still held after resolve: %v", p, ports[p], err)
			}
			l.Close()
		}
	}
}

// TestResolveRefusesOnePortTwice checks that a UI asked on the frontend's
// port is refused at once with the address in the error.
func TestResolveRefusesOnePortTwice(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	if _, err := resolve(Options{FrontendAddr: addr, UIAddr: addr}); err == nil || !strings.Contains(err.Error(), "UI address") {
		t.Fatalf("resolve with the UI on the frontend's port: err = %v, want a UI address error", err)
	}
}
