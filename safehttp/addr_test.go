package safehttp

import (
	"errors"
	"net/netip"
	"strings"
	"testing"
)

func TestCheckAddrRefuses(t *testing.T) {
	cases := map[string]string{
		"127.0.0.1":                "loopback",
		"127.255.255.254":          "loopback",
		"10.1.2.3":                 "private",
		"172.16.0.1":               "private",
		"172.31.255.255":           "private",
		"192.168.1.1":              "private",
		"169.254.169.254":          "link-local",
		"100.64.0.1":               "carrier-grade NAT",
		"100.127.255.255":          "carrier-grade NAT",
		"224.0.0.1":                "multicast",
		"239.255.255.250":          "multicast",
		"0.0.0.0":                  "unspecified",
		"0.1.2.3":                  "this-network",
		"255.255.255.255":          "broadcast",
		"240.0.0.1":                "reserved",
		"192.0.0.8":                "IETF",
		"192.0.2.1":                "documentation",
		"198.18.0.1":               "benchmarking",
		"198.19.255.255":           "benchmarking",
		"::":                       "unspecified",
		"::1":                      "loopback",
		"fc00::1":                  "unique local",
		"fd12:3456::1":             "unique local",
		"fe80::1":                  "link-local",
		"fe80::1%eth0":             "link-local",
		"ff02::1":                  "multicast",
		"ff0e::1":                  "multicast",
		"::ffff:127.0.0.1":         "loopback (IPv4-mapped IPv6)",
		"::ffff:10.0.0.1":          "private (IPv4-mapped IPv6)",
		"::ffff:169.254.169.254":   "link-local (IPv4-mapped IPv6)",
		"::ffff:0.0.0.0":           "unspecified (IPv4-mapped IPv6)",
		"::ffff:100.64.0.1":        "carrier-grade NAT",
		"::127.0.0.1":              "IPv4-compatible",
		"64:ff9b::192.168.0.1":     "private (NAT64)",
		"64:ff9b::7f00:1":          "loopback (NAT64)",
		"64:ff9b:1::1":             "local-use NAT64",
		"2001:db8::1":              "documentation",
		"2002:7f00:1::1":           "6to4",
		"100::1":                   "discard-only",
		"fec0::1":                  "site-local",
		"4000::1":                  "not a global unicast",
		"2001:0:4136:e378::1":      "IETF",
		"3fff::1":                  "documentation",
		"5f00::1":                  "segment routing",
		"::2":                      "IPv4-compatible",
		"1::1":                     "not a global unicast",
		"fe80::ffff:7f00:1%lo":     "link-local",
		"::ffff:255.255.255.255":   "broadcast",
		"::ffff:224.0.0.1":         "multicast",
		"64:ff9b::ffff:ffff":       "broadcast (NAT64)",
		"64:ff9b::a9fe:a9fe":       "link-local (NAT64)",
		"2002::1":                  "6to4",
		"::ffff:198.18.0.1":        "benchmarking",
		"::ffff:192.0.0.1":         "IETF",
		"::ffff:240.0.0.1":         "reserved",
		"::ffff:172.16.0.1":        "private",
		"::ffff:192.168.0.1":       "private",
		"::ffff:0.1.2.3":           "this-network",
		"::ffff:203.0.113.9":       "documentation",
		"::ffff:198.51.100.9":      "documentation",
		"::ffff:192.88.99.1":       "6to4 relay",
		"64:ff9b::a00:1":           "private (NAT64)",
		"64:ff9b::6440:1":          "carrier-grade NAT shared space (NAT64)",
		"64:ff9b::e000:1":          "multicast (NAT64)",
		"64:ff9b::":                "unspecified (NAT64)",
		"ff00::":                   "multicast",
		"fc00::":                   "unique local",
		"febf:ffff:ffff:ffff::1":   "link-local",
		"::ffff:127.0.0.1%eth0":    "loopback",
		"2001:db8:ffff:ffff::ffff": "documentation",
	}
	for s, reason := range cases {
		ip := netip.MustParseAddr(s)
		err := CheckAddr(ip)
		if !errors.Is(err, ErrForbiddenAddress) {
			t.Errorf("CheckAddr(%s) = %v, want ErrForbiddenAddress", s, err)
			continue
		}
		if !strings.Contains(err.Error(), reason) {
			t.Errorf("CheckAddr(%s) = %q, want reason containing %q", s, err, reason)
		}
		if Allowed(ip) {
			t.Errorf("Allowed(%s) = true", s)
		}
	}
}

func TestCheckAddrAllows(t *testing.T) {
	for _, s := range []string{
		"8.8.8.8", "1.1.1.1", "93.184.215.14", "172.15.255.255", "172.32.0.1",
		"100.63.255.255", "100.128.0.1", "192.169.0.1", "198.20.0.1", "223.255.255.254",
		"2606:4700:4700::1111", "2a00:1450:4001:80b::200e", "::ffff:8.8.8.8",
		"64:ff9b::808:808", "2001:200::1",
	} {
		ip := netip.MustParseAddr(s)
		if err := CheckAddr(ip); err != nil || !Allowed(ip) {
			t.Errorf("CheckAddr(%s) = %v, want allowed", s, err)
		}
	}
}

func TestCheckAddrInvalid(t *testing.T) {
	if err := CheckAddr(netip.Addr{}); !errors.Is(err, ErrForbiddenAddress) {
		t.Fatalf("CheckAddr(zero) = %v, want ErrForbiddenAddress", err)
	}
}

func TestErrorNamesAddress(t *testing.T) {
	err := CheckAddr(netip.MustParseAddr("10.9.8.7"))
	if err == nil || !strings.Contains(err.Error(), "10.9.8.7") {
		t.Fatalf("CheckAddr error %v does not name the address", err)
	}
}
