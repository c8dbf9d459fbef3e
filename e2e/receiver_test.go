package e2e

import (
	"encoding/json"
	"encoding/pem"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/furrowhq/furrow/webhook"
)

// delivery is one request the receiver got.
type delivery struct {
	EventID    string
	Type       string
	DeliveryID string
	UserAgent  string
	// WebhookID is the Standard Webhooks webhook-id header.
	WebhookID string
	// FurrowVerified and StandardVerified say whether Furrow's verifier
	// (X-Service-Signature) and the Standard Webhooks library
	// (webhook-signature) accepted the same request; Verified is both.
	FurrowVerified   bool
	StandardVerified bool
	Verified         bool
	Status           int
	Data             json.RawMessage
	// Header and Body are the request as received, for checks of their
	// own.
	Header http.Header
	Body   []byte
	// At is when the request arrived.
	At time.Time
}

// receiver is a local HTTPS webhook endpoint with a self-signed certificate
// that checks every signature and answers what the test tells it to.
type receiver struct {
	t      *testing.T
	srv    *httptest.Server
	CAFile string

	mu       sync.Mutex
	secret   string
	answer   func(eventID string, nth int) int
	got      []delivery
	arrivals chan delivery
}

func newReceiver(t *testing.T) *receiver {
	t.Helper()
	rc := &receiver{t: t, arrivals: make(chan delivery, 1000), answer: func(string, int) int { return 200 }}
	mustContract(t)
	rc.srv = httptest.NewTLSServer(http.HandlerFunc(rc.serve))
	t.Cleanup(rc.srv.Close)
	rc.CAFile = filepath.Join(t.TempDir(), "receiver-ca.pem")
	pemBytes := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: rc.srv.Certificate().Raw})
	if err := os.WriteFile(rc.CAFile, pemBytes, 0o600); err != nil {
		t.Fatal(err)
	}
	return rc
}

// URL is the endpoint to register.
func (rc *receiver) URL() string { return rc.srv.URL + "/hook" }

func (rc *receiver) setSecret(s string) {
	rc.mu.Lock()
	rc.secret = s
	rc.mu.Unlock()
}

// setAnswer decides the status of each request: nth counts the requests
// for that event, from 1.
func (rc *receiver) setAnswer(f func(eventID string, nth int) int) {
	rc.mu.Lock()
	rc.answer = f
	rc.mu.Unlock()
}

func (rc *receiver) serve(w http.ResponseWriter, r *http.Request) {
	at := time.Now()
	body, _ := io.ReadAll(r.Body)
	var env struct {
		ID   string
		Type string
		Data json.RawMessage
	}
	_ = json.Unmarshal(body, &env)
	if err := mustContract(rc.t).CheckDelivery(env.Type, r, body); err != nil {
		rc.t.Errorf("OpenAPI contract: %v", err)
	}
	rc.mu.Lock()
	d := delivery{
		EventID: env.ID, Type: env.Type, Data: env.Data, At: at,
		DeliveryID: r.Header.Get(webhook.DeliveryHeader), UserAgent: r.Header.Get("User-Agent"),
		WebhookID: r.Header.Get(webhook.IDHeader), Header: r.Header.Clone(), Body: body,
		FurrowVerified:   webhook.Verify(rc.secret, r.Header.Get(webhook.SignatureHeader), body, time.Now()) == nil,
		StandardVerified: standardVerify(rc.secret, r.Header, body) == nil,
	}
	d.Verified = r.Header.Get("Content-Type") == "application/json" && d.FurrowVerified && d.StandardVerified
	nth := 1
	for _, g := range rc.got {
		if g.EventID == d.EventID {
			nth++
		}
	}
	d.Status = rc.answer(d.EventID, nth)
	rc.got = append(rc.got, d)
	rc.mu.Unlock()
	w.WriteHeader(d.Status)
	select {
	case rc.arrivals <- d:
	default: // nobody reads them (load tests count got instead)
	}
}

// next waits for the next request.
func (rc *receiver) next(t *testing.T, limit time.Duration) delivery {
	t.Helper()
	select {
	case d := <-rc.arrivals:
		return d
	case <-time.After(limit):
		t.Fatalf("no delivery within %s", limit)
		return delivery{}
	}
}

// quiet fails t if a request arrives within d.
func (rc *receiver) quiet(t *testing.T, d time.Duration) {
	t.Helper()
	select {
	case got := <-rc.arrivals:
		t.Fatalf("unexpected delivery of %s", got.EventID)
	case <-time.After(d):
	}
}

// standardVerify checks the Standard Webhooks headers with that standard's
// own Go library, unchanged.
func standardVerify(secret string, h http.Header, body []byte) error {
	wh, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		return err
	}
	return wh.Verify(body, h)
}
