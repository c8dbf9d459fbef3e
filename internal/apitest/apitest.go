// Package apitest holds tests to the OpenAPI document of Furrow: every
// request a test sends and every answer it gets are validated against the
// document with libopenapi-validator, and so is every webhook delivery a
// test receiver gets (against the document's webhooks section).
//
// The rule for a request: one the document accepts may get any documented
// answer; one the document rejects (a test probing bad input) must get a
// 4xx, so the document is never more permissive than it says the server is
// strict. Every answer must be documented for its route, status and media
// type, with a body and required headers that match.
package apitest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"

	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"
	"github.com/pb33f/libopenapi-validator/config"
	verrors "github.com/pb33f/libopenapi-validator/errors"
	v3 "github.com/pb33f/libopenapi/datamodel/high/v3"
)

// Contract validates exchanges against one OpenAPI document. It is safe for
// concurrent use.
type Contract struct {
	doc *v3.Document
	mu  sync.Mutex // the validator's caches are not documented as concurrency-safe
	v   validator.Validator
}

// Load parses an OpenAPI 3.1 document and builds its validator. The
// document itself must be valid.
func Load(spec []byte) (*Contract, error) {
	d, err := libopenapi.NewDocument(spec)
	if err != nil {
		return nil, fmt.Errorf("apitest: parsing the document: %w", err)
	}
	m, err := d.BuildV3Model()
	if err != nil {
		return nil, fmt.Errorf("apitest: building the model: %w", err)
	}
	v, errs := validator.NewValidator(d, config.WithFormatAssertions(), config.WithAuthenticationFunc(authenticate))
	if len(errs) > 0 {
		return nil, fmt.Errorf("apitest: building the validator: %w", errors.Join(errs...))
	}
	if ok, verrs := v.ValidateDocument(); !ok {
		return nil, fmt.Errorf("apitest: the document is not valid OpenAPI: %s", describe(verrs))
	}
	return &Contract{doc: &m.Model, v: v}, nil
}

// Document returns the parsed document.
func (c *Contract) Document() *v3.Document { return c.doc }

// Check validates one exchange: req as sent with reqBody, and resp with
// respBody. For a 101 answer the body is not read. It returns nil or an
// error listing every disagreement.
func (c *Contract) Check(req *http.Request, reqBody []byte, resp *http.Response, respBody []byte) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	reqOK, reqErrs := c.v.ValidateHttpRequestSync(withBody(req, reqBody))
	where := req.Method + " " + req.URL.Path
	if unrouted(reqErrs) {
		return c.checkUnrouted(where, req.Method == http.MethodHead, resp, respBody)
	}
	var problems []string
	if !reqOK && (resp.StatusCode < 400 || resp.StatusCode > 499) {
		problems = append(problems, fmt.Sprintf("the document rejects the request (%s) but the server answered %d",
			describe(reqErrs), resp.StatusCode))
	}
	if ok, errs := c.v.ValidateHttpResponse(withBody(req, reqBody), responseWithBody(resp, respBody)); !ok {
		problems = append(problems, fmt.Sprintf("answer %d disagrees with the document: %s", resp.StatusCode, describe(errs)))
	}
	if len(problems) > 0 {
		return fmt.Errorf("%s: %s", where, strings.Join(problems, "; "))
	}
	return nil
}

// checkUnrouted checks the answer to a path or method the document does not
// have: the server must not serve it either. The answer to a HEAD request
// has the headers of an error but no body.
func (c *Contract) checkUnrouted(where string, head bool, resp *http.Response, body []byte) error {
	if resp.StatusCode != http.StatusNotFound && resp.StatusCode != http.StatusMethodNotAllowed {
		return fmt.Errorf("%s: the document has no such route, but the server answered %d", where, resp.StatusCode)
	}
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") || !head && !bytes.Contains(body, []byte(`"error"`)) {
		return fmt.Errorf("%s: answer %d to an unknown route is not an {error, reason} body: %q", where, resp.StatusCode, body)
	}
	return nil
}

// CheckDelivery validates a webhook delivery a receiver got against the
// document's webhooks entry for eventType.
func (c *Contract) CheckDelivery(eventType string, req *http.Request, body []byte) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	item, ok := c.doc.Webhooks.Get(eventType)
	if !ok {
		return fmt.Errorf("the document has no webhook %q", eventType)
	}
	if ok, errs := c.v.ValidateHttpRequestSyncWithPathItem(withBody(req, body), item, req.URL.Path); !ok {
		return fmt.Errorf("delivery of %s disagrees with the document: %s", eventType, describe(errs))
	}
	return nil
}

func unrouted(errs []*verrors.ValidationError) bool {
	for _, e := range errs {
		if e.IsPathMissingError() || e.IsOperationMissingError() {
			return true
		}
	}
	return false
}

// withBody returns a copy of r reading body from the start.
func withBody(r *http.Request, body []byte) *http.Request {
	c := r.Clone(r.Context())
	c.Body = io.NopCloser(bytes.NewReader(body))
	c.ContentLength = int64(len(body))
	return c
}

// responseWithBody returns a copy of resp reading body from the start; a
// 101 answer gets no body, its connection stays the caller's.
func responseWithBody(resp *http.Response, body []byte) *http.Response {
	c := *resp
	c.Body = io.NopCloser(bytes.NewReader(body))
	if resp.StatusCode == http.StatusSwitchingProtocols {
		c.Body = http.NoBody
	}
	return &c
}

func describe(errs []*verrors.ValidationError) string {
	var parts []string
	for _, e := range errs {
		s := e.Message
		if e.Reason != "" {
			s += " (" + e.Reason + ")"
		}
		for _, se := range e.SchemaValidationErrors {
			s += " [" + se.FieldPath + ": " + se.Reason + "]"
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, "; ")
}

type clientCertKey struct{}

// WithClientCertificate marks a request context: the client presents a TLS
// client certificate, which satisfies a mutualTLS security scheme.
func WithClientCertificate(ctx context.Context) context.Context {
	return context.WithValue(ctx, clientCertKey{}, true)
}

// authenticate says whether a request presents what a security scheme
// asks for: a Bearer token, a header, or a client certificate (marked with
// WithClientCertificate, or seen by a server). Whether the credential is
// valid is the server's to say.
func authenticate(ctx context.Context, in *config.AuthenticationInput) error {
	s, r := in.SecurityScheme, in.Request
	switch strings.ToLower(s.Type) {
	case "http":
		scheme, token, _ := strings.Cut(r.Header.Get("Authorization"), " ")
		if strings.EqualFold(scheme, s.Scheme) && strings.TrimSpace(token) != "" {
			return nil
		}
		return fmt.Errorf("no Authorization: %s credential", s.Scheme)
	case "apikey":
		if s.In == "header" && r.Header.Get(s.Name) != "" {
			return nil
		}
		return fmt.Errorf("no %s header", s.Name)
	case "mutualtls":
		if ctx.Value(clientCertKey{}) != nil || (r.TLS != nil && len(r.TLS.PeerCertificates) > 0) {
			return nil
		}
		return errors.New("no client certificate")
	}
	return fmt.Errorf("security scheme type %q is not known to the tests", s.Type)
}
