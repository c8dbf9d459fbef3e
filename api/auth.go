package api

import (
	"context"
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
	// errCertificateInvalid refuses a verified certificate whose CN names
	// no device: a new key would not help, a certificate for a claimed
	// device would.
	errCertificateInvalid = furrow.Errorf(furrow.EUNAUTHORIZED, "The credential is invalid: the client certificate names no claimed device (its CN must be device:<device uuid>).")
	// errUserTokenForDevice refuses a user token where a device key goes:
	// no lookup could find it, and the reason names the mix-up.
	errUserTokenForDevice = furrow.Errorf(furrow.EUNAUTHORIZED, "The credential is a user token: readings take the device's key (Authorization: Bearer fdk_…).")
)

// deviceCredential is an authenticated device and its rate-limit key.
type deviceCredential struct {
	device furrow.Device
	key    string
	// keyHash is the hash of the device key presented, nil for a
	// certificate; the store checks it again when it stores the reading.
	keyHash *furrow.SecretHash
	// cached means the device came from the key cache, unchecked so far.
	cached bool
}

// authDevice authenticates a device by the certificate header, believed only
// from a trusted proxy, else by its bearer key. It returns errCredentialMissing,
// errCredentialInvalid or errUserTokenForDevice, or an internal error when the
// lookup fails.
func (s *server) authDevice(r *http.Request) (deviceCredential, error) {
	if cn := r.Header.Get(certHeader); cn != "" && s.trustedPeer(r.RemoteAddr) {
		return s.deviceByCert(r.Context(), cn)
	}
	key, err := bearer(r)
	if err != nil {
		return deviceCredential{}, err
	}
	// Every device key ever issued has the prefix: a token without it
	// costs no lookup, and a key with it one comparison.
	if !strings.HasPrefix(key, furrow.DeviceKeyPrefix) {
		if strings.HasPrefix(key, furrow.UserTokenPrefix) {
			return deviceCredential{}, errUserTokenForDevice
		}
		return deviceCredential{}, errCredentialInvalid
	}
	sum := furrow.HashSecret(key)
	cred := deviceCredential{key: "key:" + hex.EncodeToString(sum[:16]), keyHash: &sum}
	if d, ok := s.keys.get(sum); ok {
		cred.device, cred.cached = d, true
		return cred, nil
	}
	since := s.keys.revocation()
	d, err := s.Devices.DeviceByKey(r.Context(), sum)
	if err != nil {
		return deviceCredential{}, unauthorizedOr(err, errCredentialInvalid)
	}
	s.keys.put(sum, d, s.Clock.Now(), since)
	cred.device = d
	return cred, nil
}

// recheckKey is called when a request with a cached key is refused for
// another reason than its key (rate limit, body, device match, store): if
// the key was revoked meanwhile, the answer must be 401 instead, as if the
// key had been looked up. A 429 rechecks at most once per keyRecheckEvery
// (see keyCache). It returns refusal otherwise.
func (s *server) recheckKey(w http.ResponseWriter, r *http.Request, cred deviceCredential, refusal error) error {
	if furrow.ErrorCode(refusal) == furrow.EUNAUTHORIZED {
		if cred.keyHash != nil {
			s.keys.forget(*cred.keyHash)
		}
		return errCredentialInvalid
	}
	if !cred.cached || !s.recheckDue(cred, refusal) {
		return refusal
	}
	_, err := s.Devices.DeviceByKey(r.Context(), *cred.keyHash)
	if furrow.ErrorCode(err) != furrow.ENOTFOUND {
		return refusal // Still valid, or the lookup failed: the refusal stands.
	}
	s.keys.forget(*cred.keyHash)
	w.Header().Del("Retry-After")
	return errCredentialInvalid
}

// recheckDue says whether refusal of a cached key calls for its lookup:
// always, except for a 429 when the key was confirmed less than
// keyRecheckEvery ago.
func (s *server) recheckDue(cred deviceCredential, refusal error) bool {
	return furrow.ErrorCode(refusal) != furrow.ERATELIMITED || s.keys.recheckDue(*cred.keyHash, s.Clock.Now())
}

func (s *server) deviceByCert(ctx context.Context, cn string) (deviceCredential, error) {
	rest, ok := strings.CutPrefix(cn, "device:")
	if !ok {
		return deviceCredential{}, errCertificateInvalid
	}
	id, err := furrow.ParseUUID(rest)
	if err != nil {
		return deviceCredential{}, errCertificateInvalid
	}
	d, err := s.Devices.DeviceByID(ctx, id)
	if err != nil {
		return deviceCredential{}, unauthorizedOr(err, errCertificateInvalid)
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

// unauthorizedOr maps a failed credential lookup: unknown is invalid (the
// credential's own refusal), other failures stay internal.
func unauthorizedOr(err, invalid error) error {
	switch furrow.ErrorCode(err) {
	case furrow.ENOTFOUND, furrow.EUNAUTHORIZED:
		return invalid
	}
	return err
}
