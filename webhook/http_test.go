package webhook

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func signedRequest(t *testing.T, secret string, at time.Time, body []byte) *http.Request {
	t.Helper()
	r := httptest.NewRequest(http.MethodPost, "/hook", bytes.NewReader(body))
	r.Header.Set(SignatureHeader, Sign(secret, at, body))
	return r
}

func TestVerifyRequest(t *testing.T) {
	r := signedRequest(t, testSecret, time.Now(), testBody)
	body, err := VerifyRequest(r, testSecret)
	if err != nil {
		t.Fatalf("VerifyRequest: %v", err)
	}
	if !bytes.Equal(body, testBody) {
		t.Fatalf("body = %q, want %q", body, testBody)
	}
	again, err := io.ReadAll(r.Body)
	if err != nil || !bytes.Equal(again, testBody) {
		t.Fatalf("r.Body after verification = %q, %v; want the body again", again, err)
	}
}

func TestVerifyRequestRejects(t *testing.T) {
	big := bytes.Repeat([]byte("a"), 100)
	noHeader := httptest.NewRequest(http.MethodPost, "/hook", bytes.NewReader(testBody))
	tampered := signedRequest(t, testSecret, time.Now(), testBody)
	tampered.Body = io.NopCloser(strings.NewReader(string(testBody) + " "))
	cases := []struct {
		name string
		v    Verifier
		r    *http.Request
		want error
	}{
		{"no header", Verifier{}, noHeader, ErrMissing},
		{"tampered", Verifier{}, tampered, ErrMismatch},
		{"wrong secret", Verifier{}, signedRequest(t, "whsec_other", time.Now(), testBody), ErrMismatch},
		{"old", Verifier{}, signedRequest(t, testSecret, time.Now().Add(-time.Hour), testBody), ErrTooOld},
		{"too large", Verifier{MaxBody: 99}, signedRequest(t, testSecret, time.Now(), big), ErrTooLarge},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if _, err := c.v.VerifyRequest(c.r, testSecret); !errors.Is(err, c.want) {
				t.Fatalf("VerifyRequest = %v, want %v", err, c.want)
			}
		})
	}
	exact := signedRequest(t, testSecret, time.Now(), big)
	if _, err := (Verifier{MaxBody: 100}).VerifyRequest(exact, testSecret); err != nil {
		t.Fatalf("body of exactly MaxBody: %v", err)
	}
}

func TestVerifyRequestAny(t *testing.T) {
	secrets := []string{"whsec_new", testSecret}
	body, err := VerifyRequestAny(signedRequest(t, testSecret, time.Now(), testBody), secrets)
	if err != nil || !bytes.Equal(body, testBody) {
		t.Fatalf("VerifyRequestAny = %q, %v; want the body", body, err)
	}
	if _, err := VerifyRequestAny(signedRequest(t, "whsec_other", time.Now(), testBody), secrets); !errors.Is(err, ErrMismatch) {
		t.Fatalf("VerifyRequestAny of another secret = %v, want ErrMismatch", err)
	}
	if _, err := VerifyRequestAny(signedRequest(t, testSecret, time.Now(), testBody), nil); !errors.Is(err, ErrNoSecret) {
		t.Fatalf("VerifyRequestAny without secrets = %v, want ErrNoSecret", err)
	}
}

func TestMiddlewareAny(t *testing.T) {
	h := MiddlewareAny([]string{"whsec_new", testSecret}, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusNoContent)
	}))
	for secret, want := range map[string]int{testSecret: http.StatusNoContent, "whsec_new": http.StatusNoContent, "whsec_other": http.StatusUnauthorized} {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, signedRequest(t, secret, time.Now(), testBody))
		if w.Code != want {
			t.Errorf("signed with %s: status %d, want %d", secret, w.Code, want)
		}
	}
}

func TestVerifyRequestDefaultBound(t *testing.T) {
	body := bytes.Repeat([]byte("a"), int(DefaultMaxBody)+1)
	_, err := VerifyRequest(signedRequest(t, testSecret, time.Now(), body), testSecret)
	if !errors.Is(err, ErrTooLarge) {
		t.Fatalf("VerifyRequest of %d bytes = %v, want ErrTooLarge", len(body), err)
	}
}

func TestMiddleware(t *testing.T) {
	now := testTime
	v := Verifier{Clock: clockFunc(func() time.Time { return now })}
	var seen []byte
	h := v.Middleware(testSecret, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen, _ = io.ReadAll(r.Body)
		w.WriteHeader(http.StatusNoContent)
	}))
	cases := []struct {
		name string
		r    *http.Request
		want int
	}{
		{"valid", signedRequest(t, testSecret, now, testBody), http.StatusNoContent},
		{"unsigned", httptest.NewRequest(http.MethodPost, "/hook", bytes.NewReader(testBody)), http.StatusBadRequest},
		{"wrong secret", signedRequest(t, "whsec_other", now, testBody), http.StatusUnauthorized},
		{"stale", signedRequest(t, testSecret, now.Add(-time.Hour), testBody), http.StatusUnauthorized},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			seen = nil
			w := httptest.NewRecorder()
			h.ServeHTTP(w, c.r)
			if w.Code != c.want {
				t.Fatalf("status = %d, want %d (%s)", w.Code, c.want, w.Body)
			}
			if passed := seen != nil; passed != (c.want == http.StatusNoContent) {
				t.Fatalf("next handler called = %v for status %d", passed, c.want)
			}
			if seen != nil && !bytes.Equal(seen, testBody) {
				t.Fatalf("next handler read %q, want the verified body", seen)
			}
			if strings.Contains(w.Body.String(), testSecret) {
				t.Fatalf("response %q leaks the secret", w.Body)
			}
		})
	}
}

func TestStatus(t *testing.T) {
	cases := map[error]int{
		ErrMissing:               http.StatusBadRequest,
		ErrMalformed:             http.StatusBadRequest,
		ErrMismatch:              http.StatusUnauthorized,
		ErrTooOld:                http.StatusUnauthorized,
		ErrTooLarge:              http.StatusRequestEntityTooLarge,
		ErrNoSecret:              http.StatusInternalServerError,
		errors.New("read error"): http.StatusBadRequest,
	}
	for err, want := range cases {
		if got := Status(err); got != want {
			t.Errorf("Status(%v) = %d, want %d", err, got, want)
		}
	}
}
