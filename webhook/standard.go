package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/furrowhq/furrow"
)

// Standard Webhooks headers (https://www.standardwebhooks.com), sent on
// every delivery beside Furrow's own X-Service-Signature and
// X-Service-Delivery, so that any of that standard's libraries verifies a
// delivery unchanged.
const (
	// IDHeader carries the event id: the same on every retry.
	IDHeader = "webhook-id"
	// TimestampHeader carries the attempt's time in epoch seconds.
	TimestampHeader = "webhook-timestamp"
	// StandardSignatureHeader carries "v1,<base64>", several separated by
	// spaces when more than one key signs.
	StandardSignatureHeader = "webhook-signature"
)

// StandardKey returns the HMAC key of the Standard Webhooks signature for a
// secret: the standard base64 decoding of the text after the whsec_ prefix,
// as that standard defines. Every secret Furrow issues decodes: new ones are
// whsec_ and the base64 of 32 random bytes, and the older whsec_ and 64 hex
// digits are valid base64 too (a 48-byte key). A secret that is not base64,
// which Furrow never issued, is keyed with its whole text, like
// X-Service-Signature; the standard's libraries cannot verify those.
func StandardKey(secret string) []byte {
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, furrow.WebhookSecretPrefix))
	if err != nil || len(key) == 0 {
		return []byte(secret)
	}
	return key
}

// SignStandard returns the webhook-signature value for body sent with the
// message id at t: "v1," and the standard base64 HMAC-SHA256 of
// "<id>.<epoch seconds>.<body>" keyed with StandardKey(secret).
func SignStandard(secret, id string, t time.Time, body []byte) string {
	return "v1," + base64.StdEncoding.EncodeToString(standardMAC(StandardKey(secret), id, strconv.FormatInt(t.Unix(), 10), body))
}

func standardMAC(key []byte, id, ts string, body []byte) []byte {
	h := hmac.New(sha256.New, key)
	h.Write([]byte(id))
	h.Write([]byte{'.'})
	h.Write([]byte(ts))
	h.Write([]byte{'.'})
	h.Write(body)
	return h.Sum(nil)
}

// DeliveryHeaders returns every header of a delivery of the event eventID
// as attempt deliveryID, sent at t with exactly body: Furrow's own four and
// the three of Standard Webhooks.
func DeliveryHeaders(secret, eventID, deliveryID string, t time.Time, body []byte) http.Header {
	h := make(http.Header, 7)
	h.Set("Content-Type", "application/json")
	h.Set("User-Agent", UserAgent)
	h.Set(SignatureHeader, Sign(secret, t, body))
	h.Set(DeliveryHeader, deliveryID)
	h.Set(IDHeader, eventID)
	h.Set(TimestampHeader, strconv.FormatInt(t.Unix(), 10))
	h.Set(StandardSignatureHeader, SignStandard(secret, eventID, t, body))
	return h
}

// VerifyStandard checks the Standard Webhooks headers of h against the raw
// body and secret at now with DefaultTolerance. It returns nil when one of
// the v1 signatures matches, and otherwise an error wrapping ErrNoSecret,
// ErrMissing, ErrMalformed, ErrMismatch or ErrTooOld.
func VerifyStandard(secret string, h http.Header, body []byte, now time.Time) error {
	return verifyStandard(secret, h, body, now, DefaultTolerance)
}

// VerifyStandard is the package-level VerifyStandard at the verifier's now
// and tolerance.
func (v Verifier) VerifyStandard(secret string, h http.Header, body []byte) error {
	return verifyStandard(secret, h, body, v.now(), v.tolerance())
}

func verifyStandard(secret string, h http.Header, body []byte, now time.Time, tolerance time.Duration) error {
	if secret == "" {
		return ErrNoSecret
	}
	id, ts, sigs := h.Get(IDHeader), h.Get(TimestampHeader), h.Get(StandardSignatureHeader)
	if id == "" || ts == "" || sigs == "" {
		return fmt.Errorf("%w: %s, %s and %s are all needed", ErrMissing, IDHeader, TimestampHeader, StandardSignatureHeader)
	}
	if len(sigs) > maxHeaderLen {
		return fmt.Errorf("%w: longer than %d bytes", ErrMalformed, maxHeaderLen)
	}
	sec, err := parseSeconds(ts)
	if err != nil {
		return err
	}
	// The seconds are signed in their canonical form, as the standard's
	// libraries do.
	expected := standardMAC(StandardKey(secret), id, strconv.FormatInt(sec, 10), body)
	matched := false
	for _, s := range strings.Split(sigs, " ") {
		version, value, ok := strings.Cut(s, ",")
		if !ok || version != "v1" {
			continue
		}
		got, err := base64.StdEncoding.DecodeString(value)
		// Every value is compared so the time taken does not reveal which
		// one matched.
		if err == nil && hmac.Equal(expected, got) {
			matched = true
		}
	}
	if !matched {
		return ErrMismatch
	}
	return checkAge(time.Unix(sec, 0), now, tolerance)
}

// parseSeconds accepts only plain decimal digits: no sign, no spaces.
func parseSeconds(v string) (int64, error) {
	if len(v) > maxTimestampDigits || strings.Trim(v, "0123456789") != "" {
		return 0, fmt.Errorf("%w: %s must be epoch seconds", ErrMalformed, TimestampHeader)
	}
	return strconv.ParseInt(v, 10, 64)
}
