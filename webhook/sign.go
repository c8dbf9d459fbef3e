package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"time"
)

// Sign returns the X-Service-Signature value for body sent at t:
// "t=<epoch_ms>,v1=<hex HMAC-SHA256 of "<epoch_ms>.<body>">". body must be
// the exact bytes that are sent.
func Sign(secret string, t time.Time, body []byte) string {
	ts := strconv.FormatInt(t.UnixMilli(), 10)
	return "t=" + ts + ",v1=" + hex.EncodeToString(mac(secret, ts, body))
}

// mac computes the HMAC-SHA256 of "<ts>.<body>" keyed with secret, where ts
// is the timestamp text exactly as it appears in the header.
func mac(secret, ts string, body []byte) []byte {
	h := hmac.New(sha256.New, []byte(secret))
	h.Write([]byte(ts))
	h.Write([]byte{'.'})
	h.Write(body)
	return h.Sum(nil)
}
