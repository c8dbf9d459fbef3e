package check

import (
	"net/netip"
	"os"
	"regexp"
	"testing"

	"github.com/furrowhq/furrow/safehttp"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
)

// guardPrefixes are the CIDR prefixes safehttp/addr.go names: the ranges
// the dial-time guard refuses, and those it treats apart (NAT64, global
// unicast). Their edges are where the guard's answer can change.
func guardPrefixes(t *testing.T) []netip.Prefix {
	t.Helper()
	src, err := os.ReadFile("../../safehttp/addr.go")
	if err != nil {
		t.Fatal(err)
	}
	var out []netip.Prefix
	for _, m := range regexp.MustCompile(`"([0-9a-fA-F:.]+/[0-9]+)"`).FindAllStringSubmatch(string(src), -1) {
		out = append(out, netip.MustParsePrefix(m[1]))
	}
	if len(out) < 20 {
		t.Fatalf("found %d prefixes in safehttp/addr.go; has it moved its ranges?", len(out))
	}
	return out
}

// publicRule is the policy's rule of public addresses, its first: ipBlocks
// alone, on every port.
func publicRule(t *testing.T, p *networkingv1.NetworkPolicy) networkingv1.NetworkPolicyEgressRule {
	t.Helper()
	if len(p.Spec.Egress) == 0 {
		t.Fatal("the NetworkPolicy has no egress rule")
	}
	r := p.Spec.Egress[0]
	blocks := len(r.Ports) == 0 && len(r.To) > 0
	for _, peer := range r.To {
		blocks = blocks && peer.IPBlock != nil && peer.PodSelector == nil && peer.NamespaceSelector == nil
	}
	if !blocks {
		t.Fatalf("the policy's first rule is not one of public addresses (ipBlocks on every port): %+v", r)
	}
	return r
}

// allows reports whether r lets a pod reach a, as a NetworkPolicy reads
// ipBlocks: inside a cidr and in none of its excepts.
func allows(t *testing.T, r networkingv1.NetworkPolicyEgressRule, a netip.Addr) bool {
	t.Helper()
	for _, peer := range r.To {
		cidr := parseCanonical(t, peer.IPBlock.CIDR)
		if !cidr.Contains(a) {
			continue
		}
		excepted := false
		for _, e := range peer.IPBlock.Except {
			ex := parseCanonical(t, e)
			if !cidr.Contains(ex.Addr()) || ex.Bits() < cidr.Bits() {
				t.Errorf("except %s lies outside its cidr %s: Kubernetes refuses the policy", ex, cidr)
			}
			excepted = excepted || ex.Contains(a)
		}
		if !excepted {
			return true
		}
	}
	return false
}

// parseCanonical parses a policy's CIDR, which must be written the one
// way Kubernetes's strict validation accepts: masked, IPv6 shortest.
func parseCanonical(t *testing.T, s string) netip.Prefix {
	t.Helper()
	p, err := netip.ParsePrefix(s)
	if err != nil {
		t.Fatalf("%q is not a CIDR: %v", s, err)
	}
	if p.Masked().String() != s {
		t.Errorf("%q is not in canonical form (%s)", s, p.Masked())
	}
	return p
}

// TestHelmEgressMatchesDialGuard: the delivery pods' policy lets through
// exactly the addresses safehttp's dial-time guard allows, so that neither
// is the only one refusing an address. Both are unions and differences of
// prefixes, so their answers are alike everywhere once they are alike at
// every prefix's first and last address and those just outside it. IPv4
// addresses mapped into IPv6 (::ffff:0:0/96) are left out: they never
// reach the network, where a connection to one is IPv4.
func TestHelmEgressMatchesDialGuard(t *testing.T) {
	for _, file := range []string{"", exampleValues} {
		c := collect(t, render(t, file))
		if len(c.policies) != 1 {
			t.Fatalf("values %q: want one NetworkPolicy, got %d", file, len(c.policies))
		}
		rule := publicRule(t, c.policies[0])
		edges := guardPrefixes(t)
		nat64 := netip.MustParsePrefix("64:ff9b::/96").Addr().As16()
		for _, p := range guardPrefixes(t) {
			if p.Addr().Is4() {
				// The guard's NAT64 answer is its IPv4 answer: the IPv4 ranges' edges embedded.
				b := nat64
				a4 := p.Addr().As4()
				copy(b[12:], a4[:])
				edges = append(edges, netip.PrefixFrom(netip.AddrFrom16(b), 96+p.Bits()))
			}
		}
		for _, peer := range rule.To {
			edges = append(edges, parseCanonical(t, peer.IPBlock.CIDR))
			for _, e := range peer.IPBlock.Except {
				edges = append(edges, parseCanonical(t, e))
			}
		}
		var probes []netip.Addr
		for _, p := range edges {
			first, last := p.Masked().Addr(), lastAddr(p)
			probes = append(probes, first, last, first.Prev(), last.Next())
		}
		probes = append(probes, netip.MustParseAddr("8.8.8.8"), netip.MustParseAddr("2606:4700::1111"), netip.MustParseAddr("64:ff9b::808:808"))
		for _, a := range probes {
			if !a.IsValid() || a.Is4In6() {
				continue
			}
			if policy, guard := allows(t, rule, a), safehttp.Allowed(a); policy != guard {
				t.Errorf("values %q: %s: the policy allows it %v, the dial-time guard %v", file, a, policy, guard)
			}
		}
	}
}

// lastAddr is the last address of p.
func lastAddr(p netip.Prefix) netip.Addr {
	b := p.Masked().Addr().AsSlice()
	for i := p.Bits(); i < len(b)*8; i++ {
		b[i/8] |= 0x80 >> (i % 8)
	}
	a, _ := netip.AddrFromSlice(b)
	return a
}

// reaches reports whether p's ipBlock rules let a pod open a TCP
// connection to a on port. Pod and namespace selectors match pods, never
// an address outside the cluster, so they are passed over.
func reaches(t *testing.T, p *networkingv1.NetworkPolicy, a netip.Addr, port int32) bool {
	t.Helper()
	for _, r := range p.Spec.Egress {
		portOK := len(r.Ports) == 0
		for _, rp := range r.Ports {
			tcp := rp.Protocol == nil || *rp.Protocol == corev1.ProtocolTCP
			portOK = portOK || (tcp && (rp.Port == nil || rp.Port.IntValue() == int(port)))
		}
		if !portOK {
			continue
		}
		for _, peer := range r.To {
			if peer.IPBlock == nil || !parseCanonical(t, peer.IPBlock.CIDR).Contains(a) {
				continue
			}
			excepted := false
			for _, e := range peer.IPBlock.Except {
				excepted = excepted || parseCanonical(t, e).Contains(a)
			}
			if !excepted {
				return true
			}
		}
	}
	return false
}

// TestHelmExternalServices: PostgreSQL, Redis or Temporal on a private
// network outside the cluster (a managed database, a VM) is refused by
// the default policy, which opens their ports to pods only; each entry of
// networkPolicy.externalServices opens its ports at its addresses, and no
// other, beside the default rules rather than in their place. An entry
// the policy cannot use fails the render, naming it.
func TestHelmExternalServices(t *testing.T) {
	db := netip.MustParseAddr("10.20.0.5")
	if c := collect(t, render(t, "")); reaches(t, c.policies[0], db, 5432) {
		t.Fatalf("the default policy reaches %s:5432; this test assumes private addresses need a value", db)
	}
	given := map[string]any{"networkPolicy": map[string]any{"externalServices": []any{
		map[string]any{"cidr": "10.20.0.5/32", "ports": []any{5432}},
		map[string]any{"cidr": "192.168.7.0/24", "ports": []any{6379, 7233}},
		map[string]any{"cidr": "fd00:10::/64", "ports": []any{5432}},
	}}}
	c := collect(t, renderValues(t, "externalServices", given))
	checkDeliveryEgress(t, c, egressRules(t, "", "internalEgress"), egressRules(t, "", "dnsEgress"), 3)
	p := c.policies[0]
	for target, want := range map[string]bool{
		"10.20.0.5:5432": true, "10.20.0.5:6379": false, "10.20.0.6:5432": false,
		"192.168.7.9:6379": true, "192.168.7.9:7233": true, "192.168.7.9:5432": false, "192.168.8.1:6379": false,
		"[fd00:10::7]:5432": true, "[fd00:11::7]:5432": false,
	} {
		ap := netip.MustParseAddrPort(target)
		if got := reaches(t, p, ap.Addr(), int32(ap.Port())); got != want {
			t.Errorf("with externalServices, serve and worker reach %s: %v, want %v", target, got, want)
		}
	}
	for _, bad := range []map[string]any{
		{"cidr": "10.20.0.5", "ports": []any{5432}},
		{"cidr": "db.internal.example.com", "ports": []any{5432}},
		{"cidr": "10.20.0.0/16"},
		{"ports": []any{5432}},
	} {
		renderFails(t, map[string]any{"networkPolicy": map[string]any{"externalServices": []any{bad}}}, "networkPolicy.externalServices[0]")
	}
}
