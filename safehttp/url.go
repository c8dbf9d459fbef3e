package safehttp

import (
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"golang.org/x/net/idna"

	"github.com/furrowhq/furrow"
)

// MaxURLBytes bounds a webhook address.
const MaxURLBytes = 2048

// localSuffixes are name suffixes that never denote a public host:
// RFC 6761 localhost, mDNS .local, the private-use .internal and the home
// network .home.arpa.
var localSuffixes = []string{".localhost", ".local", ".internal", ".home.arpa"}

// ValidateURL checks a webhook endpoint address when it is registered. It
// requires an absolute https URL (http too when allowPrivate) with a host,
// no credentials, no fragment (it would never be sent) and a valid port; unless allowPrivate, it also rejects
// localhost and other local names, dotless names, and IP literals that are
// not public. Every failure is a furrow EINVALID error whose message says
// why without repeating the URL. The dial-time guard of New still applies,
// because a name may resolve to a private address later.
func ValidateURL(raw string, allowPrivate bool) error {
	if raw == "" {
		return furrow.Errorf(furrow.EINVALID, "The field url is required; it must be an absolute https address.")
	}
	if len(raw) > MaxURLBytes {
		return furrow.Errorf(furrow.EINVALID, "The field url must be at most %d bytes.", MaxURLBytes)
	}
	u, err := url.Parse(raw)
	if err != nil {
		return furrow.Errorf(furrow.EINVALID, "The webhook url is not a valid URL.")
	}
	switch scheme := strings.ToLower(u.Scheme); {
	case scheme == "https":
	case scheme == "http" && allowPrivate:
	default:
		return furrow.Errorf(furrow.EINVALID, "The webhook url must be an absolute address that uses https.")
	}
	if u.Host == "" || u.Hostname() == "" {
		return furrow.Errorf(furrow.EINVALID, "The webhook url must have a host.")
	}
	if u.User != nil {
		return furrow.Errorf(furrow.EINVALID, "The webhook url must not contain credentials; receivers authenticate deliveries by their signature.")
	}
	if u.Fragment != "" || strings.HasSuffix(raw, "#") {
		return furrow.Errorf(furrow.EINVALID, "The webhook url must not contain a fragment (#…): it is never sent to the receiver.")
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return furrow.Errorf(furrow.EINVALID, "The webhook url port must be between 1 and 65535.")
		}
	}
	host, err := asciiHost(u.Hostname())
	if err != nil {
		return err
	}
	if allowPrivate {
		return nil
	}
	return checkHost(host)
}

// asciiHost is host as net/http dials it: a name written with other than
// ASCII is mapped by IDNA, which turns full-width digits and the ideographic
// full stop into plain ones, so the checks judge the address actually used.
func asciiHost(host string) (string, error) {
	if isASCII(host) {
		return host, nil
	}
	ascii, err := idna.Lookup.ToASCII(host)
	if err != nil {
		return "", furrow.Errorf(furrow.EINVALID, "The webhook url host is not a valid domain name.")
	}
	return ascii, nil
}

func checkHost(host string) error {
	if ip, err := netip.ParseAddr(host); err == nil {
		if reason := refusal(ip); reason != "" {
			return furrow.Errorf(furrow.EINVALID, "The webhook url must point at a public address; %s is %s.", ip, reason)
		}
		return nil
	}
	name := strings.TrimSuffix(strings.ToLower(host), ".")
	if name == "localhost" || hasLocalSuffix(name) {
		return furrow.Errorf(furrow.EINVALID, "The webhook url must not point at localhost or a local network name.")
	}
	labels := strings.Split(name, ".")
	if slices.Contains(labels, "") {
		return furrow.Errorf(furrow.EINVALID, "The webhook url host is not a valid domain name.")
	}
	if len(labels) < 2 {
		return furrow.Errorf(furrow.EINVALID, "The webhook url host must be a fully qualified domain name.")
	}
	// No top-level domain is numeric, so a name like 127.1 or 0x7f.1 is an
	// IP address in a legacy form that some resolvers would accept.
	if last := labels[len(labels)-1]; isNumeric(last) {
		return furrow.Errorf(furrow.EINVALID, "The webhook url host is neither a domain name nor a standard IP address.")
	}
	return nil
}

func hasLocalSuffix(name string) bool {
	for _, s := range localSuffixes {
		if strings.HasSuffix(name, s) {
			return true
		}
	}
	return false
}

func isASCII(s string) bool {
	for i := range len(s) {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// isNumeric reports whether label is decimal digits or 0x and hex digits.
func isNumeric(label string) bool {
	if hex, ok := strings.CutPrefix(label, "0x"); ok {
		return strings.Trim(hex, "0123456789abcdef") == ""
	}
	return label != "" && strings.Trim(label, "0123456789") == ""
}
