package furrow

import (
	"errors"
	"fmt"
)

// Error codes. They are the `error` field of every error body; the API maps
// each to one HTTP status.
const (
	EINVALID      = "bad_request"
	EUNAUTHORIZED = "unauthorized"
	EFORBIDDEN    = "forbidden"
	ENOTFOUND     = "not_found"
	ECONFLICT     = "conflict"
	ETOOLARGE     = "payload_too_large"
	ERATELIMITED  = "rate_limited"
	EINTERNAL     = "internal_error"
)

// Error is the one application error type. Code is machine-readable and
// Message is a sentence safe to show to the client; it must never contain a
// secret. Errors of any other type are internal: the client sees only
// EINTERNAL and the error is logged.
type Error struct {
	Code    string
	Message string
}

// Error implements the error interface.
func (e *Error) Error() string {
	return fmt.Sprintf("furrow error: code=%s message=%s", e.Code, e.Message)
}

// Errorf returns an *Error with the given code and formatted message.
func Errorf(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// ErrorCode returns the code of the *Error in err's chain, "" for nil, and
// EINTERNAL for any other error.
func ErrorCode(err error) string {
	var e *Error
	if err == nil {
		return ""
	} else if errors.As(err, &e) {
		return e.Code
	}
	return EINTERNAL
}

// ErrorMessage returns the client-safe message of the *Error in err's chain,
// "" for nil, and a generic sentence for any other error.
func ErrorMessage(err error) string {
	var e *Error
	if err == nil {
		return ""
	} else if errors.As(err, &e) {
		return e.Message
	}
	return "The server could not complete the request; retry later."
}
