package safehttp

import (
	"errors"
	"fmt"
	"net/netip"
)

// ErrForbiddenAddress is wrapped by every refusal of a non-public address,
// at dial time and in URL validation. The wrapping error names the address
// and why it was refused.
var ErrForbiddenAddress = errors.New("safehttp: forbidden address")

type rule struct {
	prefix netip.Prefix
	reason string
}

func rules(pairs ...string) []rule {
	rs := make([]rule, 0, len(pairs)/2)
	for i := 0; i < len(pairs); i += 2 {
		rs = append(rs, rule{netip.MustParsePrefix(pairs[i]), pairs[i+1]})
	}
	return rs
}

// refused4 lists the IPv4 ranges that are not publicly routable unicast
// (IANA special-purpose registry), most specific first where they overlap.
var refused4 = rules(
	"0.0.0.0/32", "unspecified",
	"0.0.0.0/8", "a this-network address",
	"10.0.0.0/8", "private",
	"100.64.0.0/10", "carrier-grade NAT shared space",
	"127.0.0.0/8", "loopback",
	"169.254.0.0/16", "link-local",
	"172.16.0.0/12", "private",
	"192.0.0.0/24", "reserved for IETF protocol assignments",
	"192.0.2.0/24", "reserved for documentation",
	"192.88.99.0/24", "a 6to4 relay anycast address",
	"192.168.0.0/16", "private",
	"198.18.0.0/15", "reserved for benchmarking",
	"198.51.100.0/24", "reserved for documentation",
	"203.0.113.0/24", "reserved for documentation",
	"224.0.0.0/4", "multicast",
	"255.255.255.255/32", "broadcast",
	"240.0.0.0/4", "reserved",
)

// refused6 lists the IPv6 ranges refused before the global unicast check;
// the IPv4-mapped and NAT64 ranges are handled apart because they embed an
// IPv4 address.
var refused6 = rules(
	"::/128", "unspecified",
	"::1/128", "loopback",
	"::/96", "an IPv4-compatible address",
	"64:ff9b:1::/48", "a local-use NAT64 address",
	"100::/64", "a discard-only address",
	"2001::/23", "reserved for IETF protocol assignments",
	"2001:db8::/32", "reserved for documentation",
	"2002::/16", "a 6to4 address",
	"3fff::/20", "reserved for documentation",
	"5f00::/16", "a segment routing identifier",
	"fc00::/7", "private (unique local)",
	"fe80::/10", "link-local",
	"fec0::/10", "site-local",
	"ff00::/8", "multicast",
)

var (
	nat64   = netip.MustParsePrefix("64:ff9b::/96")
	global6 = netip.MustParsePrefix("2000::/3")
)

// Allowed reports whether ip is a public unicast address that outgoing
// webhook connections may reach.
func Allowed(ip netip.Addr) bool { return CheckAddr(ip) == nil }

// CheckAddr returns nil when ip is a public unicast address, and otherwise
// an error wrapping ErrForbiddenAddress that names ip and the reason:
// loopback, private, link-local, CGNAT, multicast, unspecified, broadcast,
// reserved, documentation and similar ranges, in IPv4, IPv6, IPv4-mapped
// IPv6 and NAT64 forms.
func CheckAddr(ip netip.Addr) error {
	if reason := refusal(ip); reason != "" {
		return fmt.Errorf("%w: %s is %s", ErrForbiddenAddress, ip, reason)
	}
	return nil
}

// refusal returns why ip is refused, or "" when it is allowed.
func refusal(ip netip.Addr) string {
	// A zoned address never matches a prefix, so the zone must go first.
	ip = ip.WithZone("")
	switch {
	case !ip.IsValid():
		return "not a valid IP address"
	case ip.Is4():
		return match(refused4, ip)
	case ip.Is4In6():
		return tagged(match(refused4, ip.Unmap()), " (IPv4-mapped IPv6)")
	case nat64.Contains(ip):
		b := ip.As16()
		return tagged(match(refused4, netip.AddrFrom4([4]byte(b[12:]))), " (NAT64)")
	}
	if r := match(refused6, ip); r != "" {
		return r
	}
	if !global6.Contains(ip) {
		return "not a global unicast address"
	}
	return ""
}

func match(rs []rule, ip netip.Addr) string {
	for _, r := range rs {
		if r.prefix.Contains(ip) {
			return r.reason
		}
	}
	return ""
}

func tagged(reason, tag string) string {
	if reason == "" {
		return ""
	}
	return reason + tag
}
