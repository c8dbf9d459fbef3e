package api

import (
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/furrowhq/furrow"
)

// statusOf maps each furrow error code to its HTTP status. Codes missing
// from it are answered as internal errors.
var statusOf = map[string]int{
	furrow.EINVALID:      http.StatusBadRequest,
	furrow.EUNAUTHORIZED: http.StatusUnauthorized,
	furrow.EFORBIDDEN:    http.StatusForbidden,
	furrow.ENOTFOUND:     http.StatusNotFound,
	furrow.ECONFLICT:     http.StatusConflict,
	furrow.ETOOLARGE:     http.StatusRequestEntityTooLarge,
	furrow.ERATELIMITED:  http.StatusTooManyRequests,
	furrow.EINTERNAL:     http.StatusInternalServerError,
}

// errorBody is the {error, reason} body of every error answer.
type errorBody struct {
	Error  string `json:"error"`
	Reason string `json:"reason,omitempty"`
}

// methodError is a wrong method on a known path: 405, spoken as bad_request
// because the error vocabulary has no code of its own for it.
type methodError struct{ method string }

func (e methodError) Error() string {
	return "The method " + e.method + " is not allowed on this path."
}

func errMethod(method string) error { return methodError{method} }

// routeMethods are the methods a route may have, in the order a 405's
// Allow header lists them.
var routeMethods = []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut,
	http.MethodPatch, http.MethodDelete, http.MethodOptions}

// allowedMethods returns, for the Allow header a 405 must carry (RFC 9110),
// the methods mux serves on r's path: HEAD wherever GET (headAsGet). mux
// is the whole API's router: the route context of a subrouter's 405 may
// hold no routes to match against.
func allowedMethods(mux chi.Routes, r *http.Request) string {
	path := routePath(r)
	var allowed []string
	for _, m := range routeMethods {
		if mux.Match(chi.NewRouteContext(), m, path) ||
			m == http.MethodHead && slices.Contains(allowed, http.MethodGet) {
			allowed = append(allowed, m)
		}
	}
	return strings.Join(allowed, ", ")
}

// handlerFunc is a handler that returns its failure instead of writing it.
type handlerFunc func(w http.ResponseWriter, r *http.Request) error

// handle adapts fn to http.HandlerFunc, answering its error.
func (s *server) handle(fn handlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if err := fn(w, r); err != nil {
			s.fail(w, r, err)
		}
	}
}

// internalReason is the only sentence a client sees for an internal error.
var internalReason = furrow.ErrorMessage(errors.New("internal"))

// internalRetryAfter is the retry-after, in seconds, of a 500: internal
// errors are mostly a dependency that is down or slow for a moment.
const internalRetryAfter = "5"

// fail answers err in the Error shape. Errors that are not *furrow.Error,
// and internal ones, are logged; the client sees only internal_error.
func (s *server) fail(w http.ResponseWriter, r *http.Request, err error) {
	if m, ok := err.(methodError); ok {
		writeJSON(w, http.StatusMethodNotAllowed, errorBody{furrow.EINVALID, m.Error()})
		return
	}
	code := furrow.ErrorCode(err)
	status, ok := statusOf[code]
	if !ok || status == http.StatusInternalServerError {
		s.Logger.ErrorContext(r.Context(), "request failed", "request_id", RequestID(r.Context()),
			"method", r.Method, "path", r.URL.Path, "error", err)
		w.Header().Set("Retry-After", internalRetryAfter)
		writeJSON(w, http.StatusInternalServerError, errorBody{furrow.EINTERNAL, internalReason})
		return
	}
	var refusal rateRefusal
	if errors.As(err, &refusal) && refusal.count != nil {
		refusal.count()
	}
	writeJSON(w, status, errorBody{code, furrow.ErrorMessage(err)})
}

// jsonAppender is a value that appends its own JSON, as encoding/json
// would write it, without reflection (furrow.Reading).
type jsonAppender interface {
	AppendJSON(b []byte) []byte
}

// contentTypeJSON is the Content-Type of every JSON answer, shared: net/http
// only reads it.
var contentTypeJSON = []string{"application/json"}

// writeJSON writes v as a JSON response with status, ended by a newline.
// The newline of a marshalled answer is a write of its own: appending it
// would copy a large body whole.
func writeJSON(w http.ResponseWriter, status int, v any) {
	var b, end []byte
	if a, ok := v.(jsonAppender); ok {
		b = append(a.AppendJSON(make([]byte, 0, 256)), '\n')
	} else {
		var err error
		if b, err = json.Marshal(v); err != nil {
			status = http.StatusInternalServerError
			b = []byte(`{"error":"internal_error","reason":"The server could not encode the response."}`)
		}
		end = newline
	}
	w.Header()["Content-Type"] = contentTypeJSON
	w.WriteHeader(status)
	_, _ = w.Write(b)
	if end != nil {
		_, _ = w.Write(end)
	}
}

// newline ends a marshalled JSON answer.
var newline = []byte{'\n'}
