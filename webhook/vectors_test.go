package webhook_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/furrowhq/furrow/webhook"
)

// vectorsPath is the file of signature test vectors published for
// receivers in any language.
const vectorsPath = "testdata/signature-vectors.json"

// vectorCase is one case of the vectors file.
type vectorCase struct {
	Name       string            `json:"name"`
	Secret     string            `json:"secret"`
	Body       string            `json:"body"`
	BodyBase64 string            `json:"body_base64"`
	Headers    map[string]string `json:"headers"`
	NowMs      int64             `json:"now_ms"`
	Expect     map[string]string `json:"expect"`
	Sender     *struct {
		EventID  string `json:"event_id"`
		SentAtMs int64  `json:"sent_at_ms"`
	} `json:"sender"`
}

func (c vectorCase) body(t *testing.T) []byte {
	t.Helper()
	b, err := base64.StdEncoding.DecodeString(c.BodyBase64)
	if err != nil || !bytes.Equal(b, []byte(c.Body)) {
		t.Fatalf("%s: body_base64 is not the body's UTF-8 bytes (%v)", c.Name, err)
	}
	return b
}

func (c vectorCase) header() http.Header {
	h := http.Header{}
	for k, v := range c.Headers {
		h.Set(k, v)
	}
	return h
}

func loadVectors(t *testing.T) []vectorCase {
	t.Helper()
	raw, err := os.ReadFile(vectorsPath)
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		ToleranceSeconds int          `json:"tolerance_seconds"`
		Cases            []vectorCase `json:"cases"`
	}
	if err := json.Unmarshal(raw, &f); err != nil {
		t.Fatal(err)
	}
	if time.Duration(f.ToleranceSeconds)*time.Second != webhook.DefaultTolerance {
		t.Fatalf("tolerance_seconds = %d, want %s", f.ToleranceSeconds, webhook.DefaultTolerance)
	}
	verdicts := map[string]bool{}
	for _, c := range f.Cases {
		verdicts[c.Expect[webhook.SignatureHeader]] = true
		verdicts[c.Expect[webhook.StandardSignatureHeader]] = true
	}
	if len(f.Cases) < 10 || len(verdicts) != 5 {
		t.Fatalf("%d cases with verdicts %v: want valid and every kind of invalid", len(f.Cases), verdicts)
	}
	return f.Cases
}

// verdict names a verification error as the vectors do.
func verdict(err error) string {
	switch {
	case err == nil:
		return "valid"
	case errors.Is(err, webhook.ErrMismatch):
		return "mismatch"
	case errors.Is(err, webhook.ErrTooOld):
		return "too_old"
	case errors.Is(err, webhook.ErrMalformed):
		return "malformed"
	case errors.Is(err, webhook.ErrMissing):
		return "missing"
	}
	return err.Error()
}

// TestVectorsVerifier checks Furrow's verifier of both schemes against
// every case.
func TestVectorsVerifier(t *testing.T) {
	for _, c := range loadVectors(t) {
		t.Run(c.Name, func(t *testing.T) {
			body, now := c.body(t), time.UnixMilli(c.NowMs)
			if got := verdict(webhook.Verify(c.Secret, c.Headers[webhook.SignatureHeader], body, now)); got != c.Expect[webhook.SignatureHeader] {
				t.Errorf("X-Service-Signature: %s, want %s", got, c.Expect[webhook.SignatureHeader])
			}
			if got := verdict(webhook.VerifyStandard(c.Secret, c.header(), body, now)); got != c.Expect[webhook.StandardSignatureHeader] {
				t.Errorf("webhook-signature: %s, want %s", got, c.Expect[webhook.StandardSignatureHeader])
			}
		})
	}
}

// TestVectorsSender checks that the sender produces exactly the headers of
// every case that names its event and time.
func TestVectorsSender(t *testing.T) {
	n := 0
	for _, c := range loadVectors(t) {
		if c.Sender == nil {
			continue
		}
		n++
		h := webhook.DeliveryHeaders(c.Secret, c.Sender.EventID, "d", time.UnixMilli(c.Sender.SentAtMs), c.body(t))
		for _, name := range []string{webhook.SignatureHeader, webhook.IDHeader, webhook.TimestampHeader, webhook.StandardSignatureHeader} {
			if got := h.Get(name); got != c.Headers[name] {
				t.Errorf("%s: %s = %q, want %q", c.Name, name, got, c.Headers[name])
			}
		}
	}
	if n < 3 {
		t.Fatalf("only %d sender cases", n)
	}
}

// TestVectorsStandardLibrary checks the webhook-signature verdicts with the
// Standard Webhooks Go library, which shows that the key derivation is the
// standard's. The library reads the system clock, so timestamps are left to
// TestVectorsVerifier: a too_old case must verify apart from its time.
func TestVectorsStandardLibrary(t *testing.T) {
	for _, c := range loadVectors(t) {
		t.Run(c.Name, func(t *testing.T) {
			wh, err := standardwebhooks.NewWebhook(c.Secret)
			if err != nil {
				t.Fatalf("NewWebhook: %v", err)
			}
			err = wh.VerifyIgnoringTimestamp(c.body(t), c.header())
			want := c.Expect[webhook.StandardSignatureHeader]
			switch want {
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

// TestVectorsPythonReceiver runs the Python example receiver's check of the
// vectors, so that the second implementation agrees with them in CI.
func TestVectorsPythonReceiver(t *testing.T) {
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Fatal("python3 is needed to test examples/receiver-python (.ci/run installs it): ", err)
	}
	out, err := exec.Command(python, "../examples/receiver-python/receiver.py", "--check-vectors", vectorsPath).CombinedOutput()
	if err != nil {
		t.Fatalf("receiver.py --check-vectors: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "cases agree") {
		t.Fatalf("receiver.py printed %q", out)
	}
}

// TestPythonReceiverServes runs the Python example receiver and sends it
// deliveries signed by Furrow's sender: each scheme alone is accepted, a
// changed body is refused.
func TestPythonReceiverServes(t *testing.T) {
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Fatal("python3 is needed to test examples/receiver-python (.ci/run installs it): ", err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
	l.Close()
	const secret = "whsec_AQIDBAUGBwgJCgsMDQ4PEBESExQVFhcYGRobHB0eHyA="
	cmd := exec.Command(python, "../examples/receiver-python/receiver.py", "--port", port)
	cmd.Env = append(os.Environ(), "WEBHOOK_SECRET="+secret)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	body := []byte(`{"id":"evt_0b8a4f0e-2d7c-4a36-9b8e-3f1c2a5d6e70","type":"metric.value","data":{"value":"21.50"}}`)
	send := func(b []byte, drop ...string) int {
		h := webhook.DeliveryHeaders(secret, "evt_0b8a4f0e-2d7c-4a36-9b8e-3f1c2a5d6e70", "d", time.Now(), body)
		for _, name := range drop {
			h.Del(name)
		}
		var resp *http.Response
		for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(100 * time.Millisecond) {
			req, _ := http.NewRequest("POST", "http://127.0.0.1:"+port+"/hook", bytes.NewReader(b))
			req.Header = h
			if resp, err = http.DefaultClient.Do(req); err == nil || time.Now().After(deadline) {
				break
			}
		}
		if err != nil {
			t.Fatalf("receiver.py did not answer: %v", err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if got := send(body); got != http.StatusNoContent {
		t.Errorf("both schemes: %d, want 204", got)
	}
	if got := send(body, webhook.IDHeader, webhook.TimestampHeader, webhook.StandardSignatureHeader); got != http.StatusNoContent {
		t.Errorf("X-Service-Signature alone: %d, want 204", got)
	}
	if got := send(body, webhook.SignatureHeader); got != http.StatusNoContent {
		t.Errorf("webhook-signature alone: %d, want 204", got)
	}
	if got := send(append(body[:len(body):len(body)], ' ')); got != http.StatusUnauthorized {
		t.Errorf("changed body: %d, want 401", got)
	}
}
