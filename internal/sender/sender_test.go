package sender

import (
	"context"
	"errors"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/furrowhq/furrow/webhook"
)

var testDelivery = Delivery{
	URL:        "https://hooks.example/furrow",
	Secret:     "whsec_AQIDBAUGBwgJCgsMDQ4PEBESExQVFhcYGRobHB0eHyA=",
	EventID:    "evt_0b8a4f0e-2d7c-4a36-9b8e-3f1c2a5d6e70",
	DeliveryID: "3f1c2a5d-6e70-4a36-9b8e-0b8a4f0e2d7c",
	At:         time.UnixMilli(1_700_000_000_123),
	Body:       []byte(`{"id":"evt_0b8a4f0e-2d7c-4a36-9b8e-3f1c2a5d6e70","type":"metric.value"}`),
}

func TestHeader(t *testing.T) {
	h := testDelivery.Header()
	want := map[string]string{
		"Content-Type":                  "application/json",
		"User-Agent":                    "Furrow-Webhooks/1.0",
		webhook.DeliveryHeader:          testDelivery.DeliveryID,
		webhook.IDHeader:                testDelivery.EventID,
		webhook.TimestampHeader:         "1700000000",
		webhook.SignatureHeader:         webhook.Sign(testDelivery.Secret, testDelivery.At, testDelivery.Body),
		webhook.StandardSignatureHeader: webhook.SignStandard(testDelivery.Secret, testDelivery.EventID, testDelivery.At, testDelivery.Body),
	}
	for name, v := range want {
		if got := h.Get(name); got != v {
			t.Errorf("%s = %q, want %q", name, got, v)
		}
	}
	if len(h) != len(want) {
		t.Errorf("%d headers, want %d: %v", len(h), len(want), h)
	}
}

// TestHeaderVerifies checks both signatures with the receiver's verifier,
// and that neither verifies with another secret.
func TestHeaderVerifies(t *testing.T) {
	d := testDelivery
	h := d.Header()
	if err := webhook.Verify(d.Secret, h.Get(webhook.SignatureHeader), d.Body, d.At); err != nil {
		t.Errorf("X-Service-Signature: %v", err)
	}
	if err := webhook.VerifyStandard(d.Secret, h, d.Body, d.At); err != nil {
		t.Errorf("webhook-signature: %v", err)
	}
	if err := webhook.Verify("whsec_other", h.Get(webhook.SignatureHeader), d.Body, d.At); !errors.Is(err, webhook.ErrMismatch) {
		t.Errorf("X-Service-Signature with another secret: %v, want ErrMismatch", err)
	}
	if err := webhook.VerifyStandard("whsec_other", h, d.Body, d.At); !errors.Is(err, webhook.ErrMismatch) {
		t.Errorf("webhook-signature with another secret: %v, want ErrMismatch", err)
	}
}

func TestRequest(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, err := testDelivery.Request(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if req.Method != http.MethodPost || req.URL.String() != testDelivery.URL || req.Context() != ctx {
		t.Fatalf("request %s %s, want POST %s bound to ctx", req.Method, req.URL, testDelivery.URL)
	}
	body, _ := io.ReadAll(req.Body)
	if string(body) != string(testDelivery.Body) || req.ContentLength != int64(len(body)) {
		t.Fatalf("body %q (length %d), want exactly %q", body, req.ContentLength, testDelivery.Body)
	}
	if got, want := req.Header.Get(webhook.SignatureHeader), testDelivery.Header().Get(webhook.SignatureHeader); got != want {
		t.Fatalf("signature %q, want %q", got, want)
	}
}

func TestRequestBadURL(t *testing.T) {
	d := testDelivery
	d.URL = "https://bad host/"
	if req, err := d.Request(context.Background()); err == nil {
		t.Fatalf("Request to %q = %v, want an error", d.URL, req.URL)
	}
}
