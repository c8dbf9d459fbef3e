package activities_test

import (
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/furrowhq/furrow"
	"github.com/furrowhq/furrow/webhook"
)

// serviceSignature is X-Service-Signature with exactly the specification's
// two parts.
var serviceSignature = regexp.MustCompile(`^t=[0-9]+,v1=[0-9a-f]{64}$`)

// TestDeliverSignsWithBothSecretsDuringOverlap: while a rotation's overlap
// lasts at the attempt's send time, X-Service-Signature is signed with the
// previous secret and webhook-signature with both, the new one first; the
// attempt row names versions [1 2]. From the end of the overlap, by the
// attempt's own clock even when the store still keeps the previous secret,
// the new secret alone signs and the row names [2].
func TestDeliverSignsWithBothSecretsDuringOverlap(t *testing.T) {
	s, acts, got := setup(t, func(w http.ResponseWriter) { w.WriteHeader(204) })
	next := furrow.NewWebhookSecret()
	rotated, err := s.RotateWebhookSecret(t.Context(), s.hook.FarmID, s.hook.ID, next, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	sendAt := time.UnixMilli(rotated.PreviousSecretUntilMs).Add(-time.Millisecond)
	acts.Clock = furrow.ClockFunc(func() time.Time { return sendAt })
	if _, err := deliver(t, s, acts, 1); err != nil {
		t.Fatal(err)
	}
	r := (*got)[0]
	check := webhook.Verifier{Clock: furrow.ClockFunc(func() time.Time { return sendAt })}
	sig := r.header.Get(webhook.SignatureHeader)
	if !serviceSignature.MatchString(sig) || check.Verify(secret, sig, r.body) != nil || check.Verify(next, sig, r.body) == nil {
		t.Errorf("X-Service-Signature %q: want the two parts, signed with the previous secret alone", sig)
	}
	values := strings.Split(r.header.Get(webhook.StandardSignatureHeader), " ")
	if len(values) != 2 {
		t.Fatalf("webhook-signature %q: want two values", values)
	}
	for i, want := range []string{next, secret} {
		one := r.header.Clone()
		one.Set(webhook.StandardSignatureHeader, values[i])
		if err := check.VerifyStandard(want, one, r.body); err != nil {
			t.Errorf("webhook-signature value %d does not verify with its secret: %v", i, err)
		}
	}
	if a := s.attempts()[0]; !slices.Equal(a.SignedWith, []int{1, 2}) {
		t.Errorf("attempt signed_with %v, want [1 2]", a.SignedWith)
	}

	// The store still returns the previous secret (its clock is the
	// system's), but the attempt is sent at the end of the overlap.
	sendAt = time.UnixMilli(rotated.PreviousSecretUntilMs)
	if _, err := deliver(t, s, acts, 2); err != nil {
		t.Fatal(err)
	}
	r = (*got)[1]
	check = webhook.Verifier{Clock: furrow.ClockFunc(func() time.Time { return sendAt })}
	if sig = r.header.Get(webhook.SignatureHeader); check.Verify(next, sig, r.body) != nil || check.Verify(secret, sig, r.body) == nil {
		t.Errorf("after the overlap X-Service-Signature %q is not signed with the new secret alone", sig)
	}
	std := r.header.Get(webhook.StandardSignatureHeader)
	if strings.Contains(std, " ") || check.VerifyStandard(next, r.header, r.body) != nil || check.VerifyStandard(secret, r.header, r.body) == nil {
		t.Errorf("after the overlap webhook-signature %q is not the new secret's alone", std)
	}
	if a := s.attempts()[1]; !slices.Equal(a.SignedWith, []int{2}) {
		t.Errorf("attempt signed_with %v, want [2]", a.SignedWith)
	}
	for _, a := range s.attempts() {
		if strings.Contains(a.Error+a.ResponseBody, strings.TrimPrefix(next, furrow.WebhookSecretPrefix)) {
			t.Fatal("the attempt log holds the secret")
		}
	}
}
