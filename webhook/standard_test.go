package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"net/http"
	"strconv"
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

// standardHeaders returns the Standard Webhooks headers of body sent as
// event id at t, signed with each of secrets.
func standardHeaders(id string, at time.Time, body []byte, secrets ...string) http.Header {
	sigs := make([]string, len(secrets))
	for i, s := range secrets {
		sigs[i] = SignStandard(s, id, at, body)
	}
	h := http.Header{}
	h.Set(IDHeader, id)
	h.Set(TimestampHeader, strconv.FormatInt(at.Unix(), 10))
	h.Set(StandardSignatureHeader, strings.Join(sigs, " "))
	return h
}

// TestSignStandardFormat checks the signature against an HMAC computed
// independently from the standard's rule: base64 HMAC-SHA256 of
// "<id>.<seconds>.<raw body>" keyed with the secret's base64 after whsec_.
func TestSignStandardFormat(t *testing.T) {
	const secret = "whsec_AQIDBAUGBwgJCgsMDQ4PEBESExQVFhcYGRobHB0eHyA="
	key, _ := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	h := hmac.New(sha256.New, key)
	h.Write([]byte("evt_1.1700000000." + string(testBody)))
	want := "v1," + base64.StdEncoding.EncodeToString(h.Sum(nil))
	if got := SignStandard(secret, "evt_1", testTime, testBody); got != want {
		t.Fatalf("SignStandard = %q, want %q", got, want)
	}
}

func TestVerifyStandardRoundTrip(t *testing.T) {
	h := standardHeaders("evt_1", testTime, testBody, testSecret)
	if err := VerifyStandard(testSecret, h, testBody, testTime); err != nil {
		t.Fatalf("webhook-signature: %v", err)
	}
	v := Verifier{Tolerance: time.Second}
	if err := v.VerifyStandard(testSecret, h, testBody); !errors.Is(err, ErrTooOld) {
		t.Fatalf("years later: %v, want ErrTooOld", err)
	}
	if err := VerifyStandard(testSecret, h, testBody, testTime.AddDate(-300, 0, 0)); !errors.Is(err, ErrTooOld) {
		t.Fatalf("three centuries early: %v, want ErrTooOld", err)
	}
}

func TestVerifyStandardRejects(t *testing.T) {
	good := standardHeaders("evt_1", testTime, testBody, testSecret)
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

// TestVerifyStandardAny checks rotation in both directions: a header with
// several signatures verifies with any one secret, and a receiver holding
// several secrets verifies a header signed with any one of them.
func TestVerifyStandardAny(t *testing.T) {
	both := standardHeaders("evt_1", testTime, testBody, "whsec_old", testSecret)
	if err := VerifyStandard(testSecret, both, testBody, testTime); err != nil {
		t.Errorf("two signatures, the second matching: %v", err)
	}
	if err := VerifyStandard("whsec_old", both, testBody, testTime); err != nil {
		t.Errorf("two signatures, the first matching: %v", err)
	}
	one := standardHeaders("evt_1", testTime, testBody, testSecret)
	if err := VerifyStandardAny([]string{"whsec_new", testSecret}, one, testBody, testTime); err != nil {
		t.Errorf("second of two secrets: %v", err)
	}
	if err := VerifyStandardAny([]string{"whsec_new", "whsec_old"}, one, testBody, testTime); !errors.Is(err, ErrMismatch) {
		t.Errorf("neither secret: %v, want ErrMismatch", err)
	}
	if err := VerifyStandardAny(nil, one, testBody, testTime); !errors.Is(err, ErrNoSecret) {
		t.Errorf("no secret: %v, want ErrNoSecret", err)
	}
	v := Verifier{Clock: clockFunc(func() time.Time { return testTime.Add(time.Hour) })}
	if err := v.VerifyStandardAny([]string{"whsec_new", testSecret}, one, testBody); !errors.Is(err, ErrTooOld) {
		t.Errorf("an hour later: %v, want ErrTooOld", err)
	}
}
