package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strings"
	"testing"
	"time"
)

const testSecret = "whsec_test_secret_value"

var (
	testTime = time.UnixMilli(1_700_000_000_123)
	testBody = []byte(`{"id":"evt_1","type":"metric.value"}`)
)

// clockFunc is a Verifier clock that tells what its function says.
type clockFunc func() time.Time

func (f clockFunc) Now() time.Time { return f() }

// TestSignFormat checks the header against an HMAC computed independently
// from the rule of X-Service-Signature: hex HMAC-SHA256 of "<t>.<raw body>".
func TestSignFormat(t *testing.T) {
	h := hmac.New(sha256.New, []byte(testSecret))
	h.Write([]byte("1700000000123." + string(testBody)))
	want := "t=1700000000123,v1=" + hex.EncodeToString(h.Sum(nil))
	if got := Sign(testSecret, testTime, testBody); got != want {
		t.Fatalf("Sign = %q, want %q", got, want)
	}
}

func TestVerifyRoundTrip(t *testing.T) {
	header := Sign(testSecret, testTime, testBody)
	if err := Verify(testSecret, header, testBody, testTime.Add(2*time.Minute)); err != nil {
		t.Fatalf("Verify: %v", err)
	}
}

func TestVerifyRejects(t *testing.T) {
	good := Sign(testSecret, testTime, testBody)
	tampered := append([]byte{}, testBody...)
	tampered[len(tampered)-2] = 'X'
	cases := []struct {
		name   string
		secret string
		header string
		body   []byte
		now    time.Time
		want   error
	}{
		{"tampered body", testSecret, good, tampered, testTime, ErrMismatch},
		{"extra byte", testSecret, good, append(append([]byte{}, testBody...), ' '), testTime, ErrMismatch},
		{"wrong secret", "whsec_other", good, testBody, testTime, ErrMismatch},
		{"empty secret", "", good, testBody, testTime, ErrNoSecret},
		{"too old", testSecret, good, testBody, testTime.Add(DefaultTolerance + time.Millisecond), ErrTooOld},
		{"too far in the future", testSecret, good, testBody, testTime.Add(-DefaultTolerance - time.Millisecond), ErrTooOld},
		// Past the range of a Duration, where now.Sub saturates.
		{"centuries in the future", testSecret, good, testBody, testTime.AddDate(-300, 0, 0), ErrTooOld},
		{"centuries old", testSecret, good, testBody, testTime.AddDate(300, 0, 0), ErrTooOld},
		{"timestamp changed", testSecret, strings.Replace(good, "t=1700000000123", "t=1700000000124", 1), testBody, testTime, ErrMismatch},
		{"empty header", testSecret, "", testBody, testTime, ErrMissing},
		{"blank header", testSecret, "  ", testBody, testTime, ErrMissing},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := Verify(c.secret, c.header, c.body, c.now)
			if !errors.Is(err, c.want) {
				t.Fatalf("Verify = %v, want %v", err, c.want)
			}
		})
	}
}

func TestVerifyToleranceEdges(t *testing.T) {
	header := Sign(testSecret, testTime, testBody)
	for _, now := range []time.Time{testTime.Add(DefaultTolerance), testTime.Add(-DefaultTolerance)} {
		if err := Verify(testSecret, header, testBody, now); err != nil {
			t.Errorf("Verify at %v from t: %v", now.Sub(testTime), err)
		}
	}
}

func TestVerifyMalformed(t *testing.T) {
	sig := hex.EncodeToString(make([]byte, sha256.Size))
	headers := map[string]string{
		"no v1":             "t=1700000000123",
		"no t":              "v1=" + sig,
		"no equals":         "t=1700000000123,v1",
		"negative t":        "t=-1700000000123,v1=" + sig,
		"signed t":          "t=+1700000000123,v1=" + sig,
		"t not a number":    "t=soon,v1=" + sig,
		"t too long":        "t=1234567890123456789,v1=" + sig,
		"empty t":           "t=,v1=" + sig,
		"two t":             "t=1,t=2,v1=" + sig,
		"v1 not hex":        "t=1700000000123,v1=zz" + sig[2:],
		"v1 short":          "t=1700000000123,v1=" + sig[:10],
		"v1 long":           "t=1700000000123,v1=" + sig + "00",
		"only commas":       ",,,",
		"semicolons":        "t=1700000000123;v1=" + sig,
		"header too long":   "t=1700000000123,v1=" + sig + strings.Repeat(",x=y", maxHeaderLen),
		"spaces inside key": "t =1700000000123,v1=" + sig,
	}
	for name, h := range headers {
		t.Run(name, func(t *testing.T) {
			err := Verify(testSecret, h, testBody, testTime)
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("Verify(%q) = %v, want ErrMalformed", h, err)
			}
		})
	}
}

func TestVerifyFlexibleHeader(t *testing.T) {
	good := Sign(testSecret, testTime, testBody)
	tPart, v1Part, _ := strings.Cut(good, ",")
	other := Sign("whsec_old", testTime, testBody)
	_, oldV1, _ := strings.Cut(other, ",")
	headers := map[string]string{
		"reversed":          v1Part + "," + tPart,
		"spaces":            " " + tPart + " , " + v1Part + " ",
		"unknown parts":     "v0=abc," + tPart + ",scheme=x," + v1Part + ",v2=zz",
		"rotation old last": tPart + "," + v1Part + "," + oldV1,
		"rotation new last": tPart + "," + oldV1 + "," + v1Part,
		"trailing comma":    good + ",",
	}
	for name, h := range headers {
		t.Run(name, func(t *testing.T) {
			if err := Verify(testSecret, h, testBody, testTime); err != nil {
				t.Fatalf("Verify(%q): %v", h, err)
			}
		})
	}
}

// TestErrorsKeepSecrets checks that no error text reveals the secret or the
// signature the verifier expected.
func TestErrorsKeepSecrets(t *testing.T) {
	header := Sign(testSecret, testTime, testBody)
	_, expected, _ := strings.Cut(header, "v1=")
	forged := "t=1700000000123,v1=" + strings.Repeat("ab", sha256.Size)
	for _, c := range []struct {
		header string
		body   []byte
		now    time.Time
	}{
		{forged, testBody, testTime},
		{header, []byte("other"), testTime},
		{header, testBody, testTime.Add(time.Hour)},
		{"t=x,v1=" + expected, testBody, testTime},
	} {
		err := Verify(testSecret, c.header, c.body, c.now)
		if err == nil {
			t.Fatalf("Verify(%q) succeeded", c.header)
		}
		msg := err.Error()
		if strings.Contains(msg, testSecret) || strings.Contains(msg, expected) {
			t.Fatalf("error %q leaks the secret or expected signature", msg)
		}
	}
}

func TestVerifierClockAndTolerance(t *testing.T) {
	header := Sign(testSecret, testTime, testBody)
	now := testTime.Add(10 * time.Minute)
	v := Verifier{Clock: clockFunc(func() time.Time { return now })}
	if err := v.Verify(testSecret, header, testBody); !errors.Is(err, ErrTooOld) {
		t.Fatalf("default tolerance: Verify = %v, want ErrTooOld", err)
	}
	v.Tolerance = 15 * time.Minute
	if err := v.Verify(testSecret, header, testBody); err != nil {
		t.Fatalf("15m tolerance: Verify = %v", err)
	}
	v.Tolerance = time.Second
	now = testTime.Add(2 * time.Second)
	if err := v.Verify(testSecret, header, testBody); !errors.Is(err, ErrTooOld) {
		t.Fatalf("1s tolerance: Verify = %v, want ErrTooOld", err)
	}
}

func TestVerifierSystemClock(t *testing.T) {
	body := []byte("{}")
	if err := (Verifier{}).Verify(testSecret, Sign(testSecret, time.Now(), body), body); err != nil {
		t.Fatalf("Verify with system clock: %v", err)
	}
	if err := (Verifier{}).Verify(testSecret, Sign(testSecret, time.Now().Add(-time.Hour), body), body); !errors.Is(err, ErrTooOld) {
		t.Fatalf("hour-old signature: Verify = %v, want ErrTooOld", err)
	}
}

// TestVerifyAny checks that a delivery signed with any one of the secrets
// verifies, whatever its place in the list, and that a list without the
// signing secret, an empty list or an empty secret in it does not.
func TestVerifyAny(t *testing.T) {
	header := Sign(testSecret, testTime, testBody)
	for _, secrets := range [][]string{
		{testSecret},
		{testSecret, "whsec_old"},
		{"whsec_new", testSecret},
		{"whsec_a", "whsec_b", testSecret},
	} {
		if err := VerifyAny(secrets, header, testBody, testTime); err != nil {
			t.Errorf("VerifyAny(%d secrets): %v", len(secrets), err)
		}
	}
	cases := []struct {
		name    string
		secrets []string
		want    error
	}{
		{"other secrets", []string{"whsec_a", "whsec_b"}, ErrMismatch},
		{"no secret", nil, ErrNoSecret},
		{"an empty secret", []string{testSecret, ""}, ErrNoSecret},
	}
	for _, c := range cases {
		if err := VerifyAny(c.secrets, header, testBody, testTime); !errors.Is(err, c.want) {
			t.Errorf("%s: VerifyAny = %v, want %v", c.name, err, c.want)
		}
	}
	stale := testTime.Add(DefaultTolerance + time.Second)
	if err := VerifyAny([]string{"whsec_a", testSecret}, header, testBody, stale); !errors.Is(err, ErrTooOld) {
		t.Errorf("stale: VerifyAny = %v, want ErrTooOld", err)
	}
}

// TestVerifyAnyRotatedSender checks every pairing of a sender that signs
// with one or both of an old and a new secret and a receiver that holds
// one or both: any shared secret verifies.
func TestVerifyAnyRotatedSender(t *testing.T) {
	const oldSecret, newSecret = "whsec_old", "whsec_new"
	tPart, oldV1, _ := strings.Cut(Sign(oldSecret, testTime, testBody), ",")
	_, newV1, _ := strings.Cut(Sign(newSecret, testTime, testBody), ",")
	senders := map[string]string{
		"old":  tPart + "," + oldV1,
		"new":  tPart + "," + newV1,
		"both": tPart + "," + oldV1 + "," + newV1,
	}
	receivers := map[string][]string{
		"old":  {oldSecret},
		"new":  {newSecret},
		"both": {newSecret, oldSecret},
	}
	for sn, header := range senders {
		for rn, secrets := range receivers {
			want := sn == "both" || rn == "both" || sn == rn
			if got := (Verifier{Clock: clockFunc(func() time.Time { return testTime })}).VerifyAny(secrets, header, testBody) == nil; got != want {
				t.Errorf("sender signs with %s, receiver holds %s: verified %v, want %v", sn, rn, got, want)
			}
		}
	}
}
