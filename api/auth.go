package api

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/netip"
	"strings"

	"github.com/furrowhq/furrow"
)

// certHeader carries the verified client certificate's CN, set by the TLS
// terminating proxy.
const certHeader = "X-Client-Cert-CN"

var (
	errCredentialMissing = furrow.Errorf(furrow.EUNAUTHORIZED, "The credential is missing: send Authorization: Bearer <key>.")
	errCredentialInvalid = furrow.Errorf(furrow.EUNAUTHORIZED, "The credential is invalid; issue a new key in the app.")
)

// deviceCredential is an authenticated device and its rate-limit key.
type deviceCredential struct {
	device furrow.Device
	key    string
}

// authDevice authenticates a device by the certificate header, believed only
// from a trusted proxy, else by its bearer key. It returns errCredentialMissing
// or errCredentialInvalid, or an internal error when the lookup fails.
func (s *server) authDevice(r *http.Request) (deviceCredential, error) {
	if cn := r.Header.Get(certHeader); cn != "" && s.trustedPeer(r.RemoteAddr) {
		return s.deviceByCert(r.Context(), cn)
	}
	key, err := bearer(r)
	if err != nil {
		return deviceCredential{}, err
	}
	d, err := s.Devices.DeviceByKey(r.Context(), key)
	if err != nil {
		return deviceCredential{}, unauthorizedOr(err)
	}
	sum := sha256.Sum256([]byte(key))
	return deviceCredential{device: d, key: "key:" + hex.EncodeToString(sum[:16])}, nil
}

func (s *server) deviceByCert(ctx context.Context, cn string) (deviceCredential, error) {
	rest, ok := strings.CutPrefix(cn, "device:")
	if !ok {
		return deviceCredential{}, errCredentialInvalid
	}
	id, err := parseUUID(rest)
	if err != nil {
		return deviceCredential{}, errCredentialInvalid
	}
	d, err := s.Devices.DeviceByID(ctx, id)
	if err != nil {
		return deviceCredential{}, unauthorizedOr(err)
	}
	return deviceCredential{device: d, key: "cert:" + d.ID.String()}, nil
}

// trustedPeer reports whether the TCP peer is one of the trusted proxies.
// Forwarding headers are deliberately not consulted: anyone can set them.
func (s *server) trustedPeer(remoteAddr string) bool {
	ap, err := netip.ParseAddrPort(remoteAddr)
	if err != nil {
		return false
	}
	addr := ap.Addr().Unmap()
	for _, p := range s.cfg.TrustedProxies {
		if p.Contains(addr) {
			return true
		}
	}
	return false
}

// bearer returns the token of an Authorization: Bearer header. No header is
// errCredentialMissing; any other scheme or an empty token is
// errCredentialInvalid.
func bearer(r *http.Request) (string, error) {
	h := r.Header.Get("Authorization")
	if h == "" {
		return "", errCredentialMissing
	}
	scheme, token, ok := strings.Cut(h, " ")
	token = strings.TrimSpace(token)
	if !ok || !strings.EqualFold(scheme, "Bearer") || token == "" {
		return "", errCredentialInvalid
	}
	return token, nil
}

// unauthorizedOr maps a failed credential lookup: unknown is invalid, other
// failures stay internal.
func unauthorizedOr(err error) error {
	switch furrow.ErrorCode(err) {
	case furrow.ENOTFOUND, furrow.EUNAUTHORIZED:
		return errCredentialInvalid
	}
	return err
}
