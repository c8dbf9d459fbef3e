package webhook_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/furrowhq/furrow/webhook"
)

// vectorsPath is the file of signature test vectors published for
// receivers in any language.
const vectorsPath = "testdata/signature-vectors.json"

// vectorCase is one case of the vectors file.
type vectorCase struct {
	Name   string `json:"name"`
	Secret string `json:"secret"`
	// Secrets, in the cases of a rotation, are every secret the receiver
	// holds instead of Secret.
	Secrets    []string          `json:"secrets"`
	Body       string            `json:"body"`
	BodyBase64 string            `json:"body_base64"`
	Headers    map[string]string `json:"headers"`
	NowMs      int64             `json:"now_ms"`
	Expect     map[string]string `json:"expect"`
}

func (c vectorCase) body(t *testing.T) []byte {
	t.Helper()
	b, err := base64.StdEncoding.DecodeString(c.BodyBase64)
	if err != nil || !bytes.Equal(b, []byte(c.Body)) {
		t.Fatalf("%s: body_base64 is not the body's UTF-8 bytes (%v)", c.Name, err)
	}
	return b
}

// secrets returns every secret the receiver holds.
func (c vectorCase) secrets() []string {
	if len(c.Secrets) > 0 {
		return c.Secrets
	}
	return []string{c.Secret}
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
	rotations := 0
	for _, c := range f.Cases {
		if len(c.Secrets) > 1 {
			rotations++
		}
	}
	if len(f.Cases) < 10 || len(verdicts) != 5 || rotations < 2 {
		t.Fatalf("%d cases (%d with several secrets) with verdicts %v: want valid and every kind of invalid, and rotations", len(f.Cases), rotations, verdicts)
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

// TestVectorsVerifier checks the verifier of both schemes against every
// case, with the case's secrets (its secret alone, or every secret of a
// rotation) and beside another secret, as a receiver holds them while a
// secret is rotated.
func TestVectorsVerifier(t *testing.T) {
	for _, c := range loadVectors(t) {
		t.Run(c.Name, func(t *testing.T) {
			body, now := c.body(t), time.UnixMilli(c.NowMs)
			sig, std := c.Expect[webhook.SignatureHeader], c.Expect[webhook.StandardSignatureHeader]
			if got := verdict(webhook.VerifyAny(c.secrets(), c.Headers[webhook.SignatureHeader], body, now)); got != sig {
				t.Errorf("X-Service-Signature: %s, want %s", got, sig)
			}
			if got := verdict(webhook.VerifyStandardAny(c.secrets(), c.header(), body, now)); got != std {
				t.Errorf("webhook-signature: %s, want %s", got, std)
			}
			if len(c.Secrets) == 0 {
				if got := verdict(webhook.Verify(c.Secret, c.Headers[webhook.SignatureHeader], body, now)); got != sig {
					t.Errorf("X-Service-Signature with Verify: %s, want %s", got, sig)
				}
				if got := verdict(webhook.VerifyStandard(c.Secret, c.header(), body, now)); got != std {
					t.Errorf("webhook-signature with VerifyStandard: %s, want %s", got, std)
				}
			}
			rotating := append([]string{otherSecret}, c.secrets()...)
			if got := verdict(webhook.VerifyAny(rotating, c.Headers[webhook.SignatureHeader], body, now)); got != sig {
				t.Errorf("X-Service-Signature beside another secret: %s, want %s", got, sig)
			}
			if got := verdict(webhook.VerifyStandardAny(rotating, c.header(), body, now)); got != std {
				t.Errorf("webhook-signature beside another secret: %s, want %s", got, std)
			}
		})
	}
}

// otherSecret signs none of the vectors.
const otherSecret = "whsec_c2lnbnMgbm9uZSBvZiB0aGUgdmVjdG9ycw=="

// TestVectorsOtherSecret checks that no signed case verifies with a
// secret that did not sign it.
func TestVectorsOtherSecret(t *testing.T) {
	for _, c := range loadVectors(t) {
		body, now := c.body(t), time.UnixMilli(c.NowMs)
		if c.Expect[webhook.SignatureHeader] == "valid" {
			if got := verdict(webhook.Verify(otherSecret, c.Headers[webhook.SignatureHeader], body, now)); got != "mismatch" {
				t.Errorf("%s: X-Service-Signature with another secret: %s, want mismatch", c.Name, got)
			}
		}
		if c.Expect[webhook.StandardSignatureHeader] == "valid" {
			if got := verdict(webhook.VerifyStandard(otherSecret, c.header(), body, now)); got != "mismatch" {
				t.Errorf("%s: webhook-signature with another secret: %s, want mismatch", c.Name, got)
			}
		}
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
