package api

import (
	"net/netip"
	"net/url"
	"strings"

	"github.com/furrowhq/furrow"
)

// maxURLBytes bounds a webhook address.
const maxURLBytes = 2048

// cgnat is the shared address space of RFC 6598, not reachable publicly.
var cgnat = netip.MustParsePrefix("100.64.0.0/10")

// CheckWebhookURL is the default webhook address check: https, a host, no
// credentials, no local name, and no IP literal outside public unicast
// space. Names are not resolved here; the delivery client checks every
// resolved address when it dials. It returns an EINVALID *furrow.Error.
func CheckWebhookURL(raw string) error {
	u, err := basicWebhookURL(raw)
	if err != nil {
		return err
	}
	if u.Scheme != "https" {
		return furrow.Errorf(furrow.EINVALID, "The webhook url must use https.")
	}
	host := strings.TrimSuffix(strings.ToLower(u.Hostname()), ".")
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return furrow.Errorf(furrow.EINVALID, "The webhook url must not point at localhost.")
	}
	if addr, err := netip.ParseAddr(host); err == nil && !publicAddr(addr) {
		return furrow.Errorf(furrow.EINVALID, "The webhook url must point at a public address.")
	}
	return nil
}

// basicWebhookURL checks what every webhook address needs, even where
// private addresses are allowed: an absolute http(s) URL with a host and
// no credentials.
func basicWebhookURL(raw string) (*url.URL, error) {
	if raw == "" {
		return nil, furrow.Errorf(furrow.EINVALID, "The field url is required.")
	}
	if len(raw) > maxURLBytes {
		return nil, furrow.Errorf(furrow.EINVALID, "The field url must be at most %d bytes.", maxURLBytes)
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Hostname() == "" {
		return nil, furrow.Errorf(furrow.EINVALID, "The field url must be an absolute https address.")
	}
	if u.User != nil {
		return nil, furrow.Errorf(furrow.EINVALID, "The webhook url must not carry credentials.")
	}
	return u, nil
}

// publicAddr reports whether addr is public unicast address space.
func publicAddr(addr netip.Addr) bool {
	addr = addr.Unmap()
	return addr.IsGlobalUnicast() && !addr.IsPrivate() && !cgnat.Contains(addr)
}
