package webhook

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
)

// DefaultMaxBody bounds the request body VerifyRequest reads.
const DefaultMaxBody int64 = 1 << 20

// ErrTooLarge means the request body exceeds the verifier's MaxBody.
var ErrTooLarge = errors.New("webhook: request body too large")

// VerifyRequest reads r's raw body (at most DefaultMaxBody bytes) and
// verifies it against r's X-Service-Signature header and secret at the
// current time with DefaultTolerance. It returns the body, which is also put
// back into r.Body for later handlers. Errors are those of Verify, plus
// ErrTooLarge and errors from reading the body.
func VerifyRequest(r *http.Request, secret string) ([]byte, error) {
	return Verifier{}.VerifyRequest(r, secret)
}

// VerifyRequestAny is VerifyRequest accepting a signature by any one of
// secrets, as while a secret is rotated.
func VerifyRequestAny(r *http.Request, secrets []string) ([]byte, error) {
	return Verifier{}.VerifyRequestAny(r, secrets)
}

// VerifyRequest is the package-level VerifyRequest with v's tolerance,
// clock and body bound.
func (v Verifier) VerifyRequest(r *http.Request, secret string) ([]byte, error) {
	return v.VerifyRequestAny(r, []string{secret})
}

// VerifyRequestAny is the package-level VerifyRequestAny with v's
// tolerance, clock and body bound.
func (v Verifier) VerifyRequestAny(r *http.Request, secrets []string) ([]byte, error) {
	if err := checkSecrets(secrets); err != nil {
		return nil, err
	}
	// The header is parsed first so that unsigned requests cost no body
	// read.
	sig, err := parseHeader(r.Header.Get(SignatureHeader))
	if err != nil {
		return nil, err
	}
	body, err := readBody(r, v.maxBody())
	if err != nil {
		return nil, err
	}
	if err := sig.check(secrets, body, v.now(), v.tolerance()); err != nil {
		return nil, err
	}
	return body, nil
}

func (v Verifier) maxBody() int64 {
	if v.MaxBody <= 0 {
		return DefaultMaxBody
	}
	return v.MaxBody
}

func readBody(r *http.Request, limit int64) ([]byte, error) {
	if r.Body == nil {
		r.Body = http.NoBody
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, limit+1))
	if err != nil {
		return nil, fmt.Errorf("webhook: reading body: %w", err)
	}
	if int64(len(body)) > limit {
		return nil, fmt.Errorf("%w: more than %d bytes", ErrTooLarge, limit)
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	return body, nil
}

// Middleware returns a handler that verifies every request with
// VerifyRequest before calling next, which can read the verified body from
// r.Body. Rejected requests get the status Status gives (413 for
// ErrTooLarge, 401 for a mismatched or stale signature, 500 for an empty
// secret, which Furrow retries, and 400 otherwise), with a short
// plain-text reason.
func Middleware(secret string, next http.Handler) http.Handler {
	return Verifier{}.Middleware(secret, next)
}

// MiddlewareAny is Middleware accepting a signature by any one of secrets,
// as while a secret is rotated.
func MiddlewareAny(secrets []string, next http.Handler) http.Handler {
	return Verifier{}.MiddlewareAny(secrets, next)
}

// Middleware is the package-level Middleware with v's settings.
func (v Verifier) Middleware(secret string, next http.Handler) http.Handler {
	return v.MiddlewareAny([]string{secret}, next)
}

// MiddlewareAny is the package-level MiddlewareAny with v's settings.
func (v Verifier) MiddlewareAny(secrets []string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := v.VerifyRequestAny(r, secrets); err != nil {
			http.Error(w, err.Error(), Status(err))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// Status maps a verification error to the HTTP status a receiver should
// answer with: 413 for ErrTooLarge, 401 for ErrMismatch and ErrTooOld, 500
// for ErrNoSecret and 400 for anything else. Furrow does not retry the 4xx
// answers; it retries the 500, so deliveries survive a receiver whose
// secret is not configured yet.
func Status(err error) int {
	switch {
	case errors.Is(err, ErrTooLarge):
		return http.StatusRequestEntityTooLarge
	case errors.Is(err, ErrMismatch), errors.Is(err, ErrTooOld):
		return http.StatusUnauthorized
	case errors.Is(err, ErrNoSecret):
		return http.StatusInternalServerError
	}
	return http.StatusBadRequest
}
