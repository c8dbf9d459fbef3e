package webhook

import (
	"crypto/hmac"
	"errors"
	"fmt"
	"time"
)

// DefaultTolerance is how far a signature's timestamp may lie from now, in
// either direction, before it is rejected as a possible replay.
const DefaultTolerance = 5 * time.Minute

// Errors of verification. Verify wraps one of them with a short reason;
// test with errors.Is. No message ever contains a secret or an expected
// signature.
var (
	// ErrMissing means the signature header is absent or empty.
	ErrMissing = errors.New("webhook: signature header missing")
	// ErrMalformed means the signature header does not have the form
	// t=<epoch_ms>,v1=<hex>.
	ErrMalformed = errors.New("webhook: signature header malformed")
	// ErrTooOld means the signature's timestamp is outside the tolerance:
	// too old, or too far in the future.
	ErrTooOld = errors.New("webhook: signature timestamp outside tolerance")
	// ErrMismatch means no v1 value matches the body and secret.
	ErrMismatch = errors.New("webhook: signature mismatch")
	// ErrNoSecret means the verifier was given no secret or an empty one,
	// which would make every signature forgeable.
	ErrNoSecret = errors.New("webhook: signing secret is empty")
)

// Verifier checks signatures with a configurable tolerance and clock. The
// zero value uses DefaultTolerance, the system clock and DefaultMaxBody.
type Verifier struct {
	// Tolerance is the allowed distance between the signature's timestamp
	// and now; zero or negative means DefaultTolerance.
	Tolerance time.Duration
	// Clock tells now; nil means the system clock.
	Clock interface{ Now() time.Time }
	// MaxBody bounds the body VerifyRequest reads; zero or negative means
	// DefaultMaxBody.
	MaxBody int64
}

// Verify checks header (the X-Service-Signature value) against the raw body
// and secret at now with DefaultTolerance. It returns nil when one of the
// header's v1 values matches, and otherwise an error wrapping ErrNoSecret,
// ErrMissing, ErrMalformed, ErrMismatch or ErrTooOld.
func Verify(secret string, header string, body []byte, now time.Time) error {
	return VerifyAny([]string{secret}, header, body, now)
}

// VerifyAny is Verify accepting a signature by any one of secrets, as while
// a secret is rotated. Every secret must be non-empty.
func VerifyAny(secrets []string, header string, body []byte, now time.Time) error {
	return verify(secrets, header, body, now, DefaultTolerance)
}

// Verify checks header against the raw body and secret at the verifier's
// now; its errors are those of the package-level Verify.
func (v Verifier) Verify(secret string, header string, body []byte) error {
	return v.VerifyAny([]string{secret}, header, body)
}

// VerifyAny is the package-level VerifyAny at the verifier's now and
// tolerance.
func (v Verifier) VerifyAny(secrets []string, header string, body []byte) error {
	return verify(secrets, header, body, v.now(), v.tolerance())
}

func (v Verifier) now() time.Time {
	if v.Clock == nil {
		return time.Now()
	}
	return v.Clock.Now()
}

func (v Verifier) tolerance() time.Duration {
	if v.Tolerance <= 0 {
		return DefaultTolerance
	}
	return v.Tolerance
}

func verify(secrets []string, header string, body []byte, now time.Time, tolerance time.Duration) error {
	if err := checkSecrets(secrets); err != nil {
		return err
	}
	sig, err := parseHeader(header)
	if err != nil {
		return err
	}
	return sig.check(secrets, body, now, tolerance)
}

// checkSecrets refuses an empty list and an empty secret, with which anyone
// could sign.
func checkSecrets(secrets []string) error {
	if len(secrets) == 0 {
		return ErrNoSecret
	}
	for _, s := range secrets {
		if s == "" {
			return ErrNoSecret
		}
	}
	return nil
}

// check verifies the signature before the timestamp so that ErrTooOld
// means an authentic but stale delivery, which points at clock skew or a
// replay.
func (s signature) check(secrets []string, body []byte, now time.Time, tolerance time.Duration) error {
	matched := false
	for _, secret := range secrets {
		if anyEqual(mac(secret, s.ts, body), s.v1) {
			matched = true
		}
	}
	if !matched {
		return ErrMismatch
	}
	return checkAge(s.at, now, tolerance)
}

// anyEqual reports whether one of got equals expected. Every value is
// compared in constant time, even after a match, so the time taken reveals
// neither the expected value nor which one matched.
func anyEqual(expected []byte, got [][]byte) bool {
	matched := false
	for _, g := range got {
		if hmac.Equal(expected, g) {
			matched = true
		}
	}
	return matched
}

// checkAge returns ErrTooOld when at is further than tolerance from now, in
// either direction.
func checkAge(at, now time.Time, tolerance time.Duration) error {
	// Compared as instants: now.Sub(at) saturates for a time centuries
	// away, and negating the saturated minimum would overflow.
	if at.Before(now.Add(-tolerance)) {
		return fmt.Errorf("%w: timestamp is %s old, tolerance is %s", ErrTooOld, now.Sub(at).Round(time.Second), tolerance)
	}
	if at.After(now.Add(tolerance)) {
		return fmt.Errorf("%w: timestamp is %s in the future, tolerance is %s", ErrTooOld, at.Sub(now).Round(time.Second), tolerance)
	}
	return nil
}
