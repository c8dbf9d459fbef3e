package webhook

import (
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestStandardKey(t *testing.T) {
	cases := map[string]int{
		"whsec_" + strings.Repeat("ab", 32):                  48, // older secrets: 64 hex digits are base64 too
		"whsec_AQIDBAUGBwgJCgsMDQ4PEBESExQVFhcYGRobHB0eHyA=": 32,
		"whsec_not base64!":                                  len("whsec_not base64!"),
		"whsec_":                                             len("whsec_"),
	}
	for secret, want := range cases {
		if got := len(StandardKey(secret)); got != want {
			t.Errorf("StandardKey(%q) has %d bytes, want %d", secret, got, want)
		}
	}
}

func TestDeliveryHeadersVerify(t *testing.T) {
	h := DeliveryHeaders(testSecret, "evt_1", "d-1", testTime, testBody)
	if h.Get(DeliveryHeader) != "d-1" || h.Get(IDHeader) != "evt_1" || h.Get(TimestampHeader) != "1700000000" || h.Get("User-Agent") != UserAgent {
		t.Fatalf("headers %v", h)
	}
	if err := Verify(testSecret, h.Get(SignatureHeader), testBody, testTime); err != nil {
		t.Fatalf("X-Service-Signature: %v", err)
	}
	if err := VerifyStandard(testSecret, h, testBody, testTime); err != nil {
		t.Fatalf("webhook-signature: %v", err)
	}
	v := Verifier{Tolerance: time.Second}
	if err := v.VerifyStandard(testSecret, h, testBody); !errors.Is(err, ErrTooOld) {
		t.Fatalf("years later: %v, want ErrTooOld", err)
	}
}

func TestVerifyStandardRejects(t *testing.T) {
	good := DeliveryHeaders(testSecret, "evt_1", "d-1", testTime, testBody)
	with := func(name, value string) http.Header {
		h := good.Clone()
		h.Set(name, value)
		return h
	}
	cases := []struct {
		name   string
		secret string
		h      http.Header
		want   error
	}{
		{"empty secret", "", good, ErrNoSecret},
		{"no signature", testSecret, with(StandardSignatureHeader, ""), ErrMissing},
		{"timestamp not digits", testSecret, with(TimestampHeader, "-1"), ErrMalformed},
		{"other id", testSecret, with(IDHeader, "evt_2"), ErrMismatch},
		{"other version", testSecret, with(StandardSignatureHeader, strings.Replace(good.Get(StandardSignatureHeader), "v1,", "v2,", 1)), ErrMismatch},
		{"too long", testSecret, with(StandardSignatureHeader, strings.Repeat("v1,x ", maxHeaderLen)), ErrMalformed},
	}
	for _, c := range cases {
		if err := VerifyStandard(c.secret, c.h, testBody, testTime); !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
	}
}
