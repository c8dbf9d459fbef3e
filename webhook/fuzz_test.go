package webhook

import (
	"bytes"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"
)

// FuzzParseHeader checks that any header yields either a typed error or a
// signature with a timestamp and at least one 32-byte v1 value, and that
// the parser never panics. Seeds live in f.Add and testdata/fuzz.
func FuzzParseHeader(f *testing.F) {
	good := Sign(testSecret, testTime, testBody)
	for _, seed := range []string{
		good,
		"",
		"t=1,v1=",
		"v1=00,t=1",
		good + "," + Sign("whsec_old", testTime, testBody)[len("t=1700000000123,"):],
		"t=99999999999999999999,v1=00",
		"t=1700000000123, v0=x ,v1=" + strings.Repeat("0", 64),
		",,=,=,t==",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, h string) {
		s, err := parseHeader(h)
		if err != nil {
			if !errors.Is(err, ErrMissing) && !errors.Is(err, ErrMalformed) {
				t.Fatalf("parseHeader(%q) error %v is not typed", h, err)
			}
			return
		}
		if s.ts == "" || len(s.v1) == 0 {
			t.Fatalf("parseHeader(%q) = %+v without t or v1", h, s)
		}
		for _, v := range s.v1 {
			if len(v) != 32 {
				t.Fatalf("parseHeader(%q) kept a %d-byte v1", h, len(v))
			}
		}
		// A header verifies only if one of its v1 values is the HMAC of its
		// own timestamp text and the body.
		want := mac(testSecret, s.ts, testBody)
		if Verify(testSecret, h, testBody, s.at) == nil && !slices.ContainsFunc(s.v1, func(v []byte) bool { return bytes.Equal(v, want) }) {
			t.Fatalf("header %q verified without a matching v1", h)
		}
	})
}

// FuzzSignVerify checks that every signed body verifies and that a changed
// body does not.
func FuzzSignVerify(f *testing.F) {
	f.Add("whsec_a", int64(1_700_000_000_123), []byte(`{"id":"evt_1"}`))
	f.Add("k", int64(0), []byte{})
	f.Fuzz(func(t *testing.T, secret string, ms int64, body []byte) {
		if secret == "" || ms < 0 || ms > 1e17 {
			return
		}
		at := time.UnixMilli(ms)
		h := Sign(secret, at, body)
		if err := Verify(secret, h, body, at); err != nil {
			t.Fatalf("Verify(Sign(...)) = %v", err)
		}
		if err := Verify(secret, h, append(body, 'x'), at); !errors.Is(err, ErrMismatch) {
			t.Fatalf("Verify of changed body = %v, want ErrMismatch", err)
		}
	})
}
