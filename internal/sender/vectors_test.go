package sender

import (
	"bytes"
	"cmp"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/google/uuid"
	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/furrowhq/furrow"
	"github.com/furrowhq/furrow/internal/testenv"
	"github.com/furrowhq/furrow/webhook"
)

// vectorsPath is the file of signature test vectors published beside the
// receiver's package.
const vectorsPath = "../../webhook/testdata/signature-vectors.json"

// vector is what these tests read of a case of the vectors file; the
// receiver's tests read the verdicts.
type vector struct {
	Name   string `json:"name"`
	Secret string `json:"secret"`
	// Secrets, in the cases of a rotation, are every secret the receiver
	// holds instead of Secret.
	Secrets    []string          `json:"secrets"`
	BodyBase64 string            `json:"body_base64"`
	Headers    map[string]string `json:"headers"`
	Expect     map[string]string `json:"expect"`
	Sender     *struct {
		EventID  string `json:"event_id"`
		SentAtMs int64  `json:"sent_at_ms"`
		// Secret and PreviousSecret sign in the cases of a rotation;
		// otherwise the case's Secret signs.
		Secret         string `json:"secret"`
		PreviousSecret string `json:"previous_secret"`
	} `json:"sender"`
}

func loadVectors(t *testing.T) []vector {
	t.Helper()
	raw, err := os.ReadFile(vectorsPath)
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Cases []vector `json:"cases"`
	}
	if err := json.Unmarshal(raw, &f); err != nil {
		t.Fatal(err)
	}
	if len(f.Cases) < 10 {
		t.Fatalf("only %d cases", len(f.Cases))
	}
	return f.Cases
}

func (v vector) body(t *testing.T) []byte {
	t.Helper()
	b, err := base64.StdEncoding.DecodeString(v.BodyBase64)
	if err != nil {
		t.Fatalf("%s: body_base64: %v", v.Name, err)
	}
	return b
}

func (v vector) header() http.Header {
	h := http.Header{}
	for k, val := range v.Headers {
		h.Set(k, val)
	}
	return h
}

// TestVectorsSender checks that the sender produces exactly the headers of
// every case that names its event and time.
func TestVectorsSender(t *testing.T) {
	n, overlaps := 0, 0
	for _, c := range loadVectors(t) {
		if c.Sender == nil {
			continue
		}
		n++
		d := Delivery{Secret: cmp.Or(c.Sender.Secret, c.Secret), Previous: c.Sender.PreviousSecret,
			EventID: c.Sender.EventID, DeliveryID: "d", At: time.UnixMilli(c.Sender.SentAtMs), Body: c.body(t)}
		if d.Previous != "" {
			overlaps++
		}
		h := d.Header()
		for _, name := range []string{webhook.SignatureHeader, webhook.IDHeader, webhook.TimestampHeader, webhook.StandardSignatureHeader} {
			if got := h.Get(name); got != c.Headers[name] {
				t.Errorf("%s: %s = %q, want %q", c.Name, name, got, c.Headers[name])
			}
		}
	}
	if n < 3 || overlaps < 1 {
		t.Fatalf("only %d sender cases, %d of them during a rotation's overlap", n, overlaps)
	}
}

// TestVectorsStandardLibrary checks the webhook-signature verdicts with the
// Standard Webhooks Go library, which shows that the key derivation the
// sender and the receiver share is the standard's. The library reads the
// system clock, so timestamps are left to the receiver's vector test: a
// too_old case must verify apart from its time.
func TestVectorsStandardLibrary(t *testing.T) {
	for _, c := range loadVectors(t) {
		t.Run(c.Name, func(t *testing.T) {
			err := c.verifyStandardLibrary(t)
			switch want := c.Expect[webhook.StandardSignatureHeader]; want {
			case "valid", "too_old":
				if err != nil {
					t.Errorf("library: %v, want a matching signature", err)
				}
			case "mismatch":
				if !errors.Is(err, standardwebhooks.ErrNoMatchingSignature) {
					t.Errorf("library: %v, want no matching signature", err)
				}
			case "missing":
				if !errors.Is(err, standardwebhooks.ErrRequiredHeaders) {
					t.Errorf("library: %v, want missing headers", err)
				}
			default:
				t.Fatalf("unexpected verdict %q", want)
			}
		})
	}
}

// verifyStandardLibrary verifies the case with the library for each
// secret the receiver holds: nil when one matches, else the last error.
func (v vector) verifyStandardLibrary(t *testing.T) error {
	t.Helper()
	secrets := v.Secrets
	if len(secrets) == 0 {
		secrets = []string{v.Secret}
	}
	var err error
	for _, secret := range secrets {
		wh, nerr := standardwebhooks.NewWebhook(secret)
		if nerr != nil {
			t.Fatalf("NewWebhook: %v", nerr)
		}
		if err = wh.VerifyIgnoringTimestamp(v.body(t), v.header()); err == nil {
			return nil
		}
	}
	return err
}

// TestEnvelopeDecodes checks that the receiver's Event reads every field
// of the envelope the service sends: decoded and encoded again, the body
// is unchanged.
func TestEnvelopeDecodes(t *testing.T) {
	sent, err := json.Marshal(furrow.Event{
		ID: furrow.NewEventID(), Type: furrow.EventDeviceOffline, FarmID: uuid.New(), OccurredAtMs: 1_700_000_000_123,
		Data: json.RawMessage(`{"device_id":"2f4d6b8e-0a13-4c3e-9a43-1d2f0c9e7a11"}`), TraceParent: "00-trace-never-sent",
	})
	if err != nil {
		t.Fatal(err)
	}
	var ev webhook.Event
	if err := json.Unmarshal(sent, &ev); err != nil {
		t.Fatal(err)
	}
	again, err := json.Marshal(ev)
	if err != nil || !bytes.Equal(again, sent) {
		t.Fatalf("receiver's Event encodes as\n%s\nwant\n%s (%v)", again, sent, err)
	}
}

// TestPythonReceiverServes runs the Python example receiver, holding two
// secrets as while a secret is rotated, and sends it deliveries signed by
// the sender: each scheme alone is accepted, with either secret and during
// the overlap; a changed body and another secret are refused.
func TestPythonReceiverServes(t *testing.T) {
	const secret = "whsec_AQIDBAUGBwgJCgsMDQ4PEBESExQVFhcYGRobHB0eHyA="
	next := furrow.NewWebhookSecret()
	addr, _ := testenv.PythonReceiver(t, "../../examples/receiver-python/receiver.py", next+","+secret)
	body := []byte(`{"id":"evt_0b8a4f0e-2d7c-4a36-9b8e-3f1c2a5d6e70","type":"metric.value","data":{"value":"21.50"}}`)
	// send posts b with the headers of a delivery of body, so that a
	// changed b no longer matches its signatures.
	send := func(d Delivery, b []byte, drop ...string) int {
		d.EventID, d.DeliveryID, d.At, d.Body = "evt_0b8a4f0e-2d7c-4a36-9b8e-3f1c2a5d6e70", "d", time.Now(), body
		h := d.Header()
		for _, name := range drop {
			h.Del(name)
		}
		req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/hook", bytes.NewReader(b))
		req.Header = h
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("receiver.py did not answer: %v", err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	old, overlap, rotated, other := Delivery{Secret: secret}, Delivery{Secret: next, Previous: secret}, Delivery{Secret: next}, Delivery{Secret: furrow.NewWebhookSecret()}
	for _, d := range []Delivery{old, overlap, rotated} {
		if got := send(d, body); got != http.StatusNoContent {
			t.Errorf("both schemes (previous %t): %d, want 204", d.Previous != "", got)
		}
		if got := send(d, body, webhook.IDHeader, webhook.TimestampHeader, webhook.StandardSignatureHeader); got != http.StatusNoContent {
			t.Errorf("X-Service-Signature alone (previous %t): %d, want 204", d.Previous != "", got)
		}
		if got := send(d, body, webhook.SignatureHeader); got != http.StatusNoContent {
			t.Errorf("webhook-signature alone (previous %t): %d, want 204", d.Previous != "", got)
		}
	}
	if got := send(old, append(body[:len(body):len(body)], ' ')); got != http.StatusUnauthorized {
		t.Errorf("changed body: %d, want 401", got)
	}
	if got := send(other, body); got != http.StatusUnauthorized {
		t.Errorf("another secret: %d, want 401", got)
	}
}
