package safehttp

import (
	"net/netip"
	"net/url"
	"strings"
	"testing"

	"github.com/furrowhq/furrow"
)

func TestValidateURLAccepts(t *testing.T) {
	for _, raw := range []string{
		"https://example.com/hooks/furrow",
		"https://Example.COM:8443/x?y=1",
		"HTTPS://hooks.example.org",
		"https://8.8.8.8/hook",
		"https://[2606:4700:4700::1111]/hook",
		"https://example.com./hook",
		"https://xn--bcher-kva.example/hook",
		"https://bücher.example/hook",
	} {
		if err := ValidateURL(raw, false); err != nil {
			t.Errorf("ValidateURL(%q) = %v, want nil", raw, err)
		}
	}
}

func TestValidateURLRejects(t *testing.T) {
	cases := map[string]string{
		"http://example.com/hook":           "https",
		"ftp://example.com/hook":            "https",
		"example.com/hook":                  "https",
		"//example.com/hook":                "https",
		"":                                  "https",
		"https://":                          "host",
		"https:///path":                     "host",
		"https:example.com":                 "host",
		"https://user:pass@example.com/":    "credentials",
		"https://example.com/hook#farm-1":   "fragment",
		"https://example.com/hook#":         "fragment",
		"https://example.com:0/":            "port",
		"https://example.com:65536/":        "port",
		"https://localhost/hook":            "localhost",
		"https://LOCALHOST./hook":           "localhost",
		"https://api.localhost/hook":        "localhost",
		"https://printer.local/":            "local",
		"https://metadata.google.internal/": "local",
		"https://nas.home.arpa/":            "local",
		"https://intranet/hook":             "fully qualified",
		"https://127.0.0.1/hook":            "loopback",
		"https://10.0.0.5/hook":             "private",
		"https://192.168.0.10:8443/hook":    "private",
		"https://172.20.0.1/":               "private",
		"https://169.254.169.254/latest":    "link-local",
		"https://100.64.1.1/":               "carrier-grade",
		"https://0.0.0.0/":                  "unspecified",
		"https://[::1]/hook":                "loopback",
		"https://[::]/hook":                 "unspecified",
		"https://[fe80::1%25eth0]/hook":     "link-local",
		"https://[fd00::1]/hook":            "unique local",
		"https://[::ffff:127.0.0.1]/hook":   "loopback (IPv4-mapped IPv6)",
		"https://[::ffff:192.168.1.1]/hook": "private (IPv4-mapped IPv6)",
		"https://224.0.0.1/":                "multicast",
		"https://255.255.255.255/":          "broadcast",
		"https://127.1/":                    "neither",
		"https://2130706433/":               "fully qualified",
		"https://0x7f.0x1/":                 "neither",
		// net/http dials these as 127.0.0.1, 10.0.0.1, 169.254.169.254 and
		// foo.localhost: IDNA maps full-width digits and "。".
		"https://127.0.0.１/":                  "loopback",
		"https://10.0.0.１/":                   "private",
		"https://169.254.169.２５４/":            "link-local",
		"https://foo.localhost。/":             "localhost",
		"https://ex\u00a0ample.com/":          "valid domain name",
		"https://\u00ad.com/":                 "valid domain name",
		"https://a..com/":                     "valid domain name",
		"https://10.0.0.010/":                 "neither",
		"https://exa mple.com/":               "valid URL",
		"https://example.com:port/":           "valid URL",
		"https://[::1/":                       "valid URL",
		"http://[::ffff:a9fe:a9fe]/":          "https",
		"https://[64:ff9b::a9fe:a9fe]/latest": "link-local (NAT64)",
	}
	for raw, want := range cases {
		err := ValidateURL(raw, false)
		if furrow.ErrorCode(err) != furrow.EINVALID {
			t.Errorf("ValidateURL(%q) = %v, want EINVALID", raw, err)
			continue
		}
		if msg := furrow.ErrorMessage(err); !strings.Contains(msg, want) {
			t.Errorf("ValidateURL(%q) message %q, want it to mention %q", raw, msg, want)
		}
	}
}

func TestValidateURLAllowPrivate(t *testing.T) {
	for _, raw := range []string{"http://127.0.0.1:8080/hook", "http://localhost:9000/", "https://[::1]/", "http://receiver/"} {
		if err := ValidateURL(raw, true); err != nil {
			t.Errorf("ValidateURL(%q, true) = %v, want nil", raw, err)
		}
	}
	for _, raw := range []string{"ftp://127.0.0.1/", "http://", "http://u:p@localhost/"} {
		if furrow.ErrorCode(ValidateURL(raw, true)) != furrow.EINVALID {
			t.Errorf("ValidateURL(%q, true) accepted", raw)
		}
	}
}

func TestValidateURLDoesNotEchoQuery(t *testing.T) {
	err := ValidateURL("http://example.com/hook?token=s3cr3t", false)
	if err == nil || strings.Contains(err.Error(), "s3cr3t") {
		t.Fatalf("ValidateURL error %v must exist and not echo the URL", err)
	}
}

// FuzzValidateURL checks that any input gives nil or an EINVALID error,
// never a panic or another kind of error, and that an accepted URL is
// https with a public literal address, if any. Seeds live in f.Add.
func FuzzValidateURL(f *testing.F) {
	for _, s := range []string{
		"https://example.com/hook", "http://127.0.0.1/", "https://[::ffff:10.0.0.1]/",
		"https://[fe80::1%25en0]/", "https://a.localhost/", "https://127.1/", "https://x:1/",
		"https://u@h.com/", "%", "https://[::1", "https://example.com:99999/",
	} {
		f.Add(s, false)
		f.Add(s, true)
	}
	f.Fuzz(func(t *testing.T, raw string, allowPrivate bool) {
		err := ValidateURL(raw, allowPrivate)
		if err != nil {
			if furrow.ErrorCode(err) != furrow.EINVALID {
				t.Fatalf("ValidateURL(%q) = %v, want EINVALID", raw, err)
			}
			return
		}
		if !allowPrivate && !strings.HasPrefix(strings.ToLower(raw), "https:") {
			t.Fatalf("ValidateURL(%q, false) accepted a non-https URL", raw)
		}
		u, err := url.Parse(raw)
		if err != nil {
			t.Fatalf("ValidateURL(%q) accepted an unparsable URL", raw)
		}
		if ip, err := netip.ParseAddr(u.Hostname()); err == nil && !allowPrivate && !Allowed(ip) {
			t.Fatalf("ValidateURL(%q, false) accepted non-public %s", raw, ip)
		}
	})
}
