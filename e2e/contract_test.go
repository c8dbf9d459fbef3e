package e2e

import (
	"bytes"
	"io"
	"net/http"
	"sync"
	"testing"

	"github.com/furrowhq/furrow/api"
	"github.com/furrowhq/furrow/internal/apitest"
)

// contract validates exchanges against the OpenAPI document the binary
// embeds and serves.
var contract = sync.OnceValues(func() (*apitest.Contract, error) { return apitest.Load(api.OpenAPI) })

// mustContract returns the contract or fails t.
func mustContract(t *testing.T) *apitest.Contract {
	t.Helper()
	c, err := contract()
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// checked returns a client like c (nil: the default client) whose every
// request to Furrow and answer are validated against the document; a
// disagreement fails t.
func checked(t *testing.T, c *http.Client) *http.Client {
	mustContract(t)
	cc := http.Client{}
	if c != nil {
		cc = *c
	}
	next := cc.Transport
	if next == nil {
		next = http.DefaultTransport
	}
	cc.Transport = contractTransport{t: t, next: next}
	return &cc
}

// contractTransport validates each exchange it carries.
type contractTransport struct {
	t    *testing.T
	next http.RoundTripper
}

func (ct contractTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	var reqBody []byte
	if req.Body != nil && req.Body != http.NoBody {
		b, err := io.ReadAll(req.Body)
		req.Body.Close()
		if err != nil {
			return nil, err
		}
		reqBody = b
		req = req.Clone(req.Context())
		req.Body = io.NopCloser(bytes.NewReader(b))
	}
	seen := req
	if t, ok := ct.next.(*http.Transport); ok && t.TLSClientConfig != nil &&
		(len(t.TLSClientConfig.Certificates) > 0 || t.TLSClientConfig.GetClientCertificate != nil) {
		seen = req.WithContext(apitest.WithClientCertificate(req.Context()))
	}
	resp, err := ct.next.RoundTrip(req)
	if err != nil {
		return resp, err
	}
	var respBody []byte
	if resp.StatusCode != http.StatusSwitchingProtocols { // a WebSocket keeps its body
		respBody, err = io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return nil, err
		}
		resp.Body = io.NopCloser(bytes.NewReader(respBody))
	}
	if err := mustContract(ct.t).Check(seen, reqBody, resp, respBody); err != nil {
		ct.t.Errorf("OpenAPI contract: %v", err)
	}
	return resp, nil
}
