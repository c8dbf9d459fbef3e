// Package sender builds the HTTP request of one webhook delivery attempt:
// the POST of the event's exact body with every header a delivery carries,
// signed in both schemes that package webhook defines. It is the sending
// half of webhook, kept inside the service so that receivers import
// webhook alone.
package sender

import (
	"bytes"
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/furrowhq/furrow/webhook"
)

// UserAgent is the User-Agent of every delivery.
const UserAgent = "Furrow-Webhooks/1.0"

// Delivery is one attempt to deliver an event to a webhook.
type Delivery struct {
	// URL is the webhook's endpoint.
	URL string
	// Secret is the webhook's signing secret.
	Secret string
	// Previous is, while a rotation's overlap lasts, the secret Secret
	// replaced; "" otherwise. It then alone signs X-Service-Signature, so
	// receivers that know only it keep verifying, and webhook-signature
	// carries both signatures, Secret's first.
	Previous string
	// EventID is the event's evt_<uuid> id, the same on every attempt.
	EventID string
	// DeliveryID is unique to the attempt.
	DeliveryID string
	// At is when the attempt is sent; both signatures carry it.
	At time.Time
	// Body is exactly the bytes sent, which both signatures cover.
	Body []byte
}

// Header returns every header of the attempt: Content-Type, User-Agent,
// X-Service-Signature and X-Service-Delivery, and the three of Standard
// Webhooks, whose webhook-id is the event id.
func (d Delivery) Header() http.Header {
	h := make(http.Header, 7)
	h.Set("Content-Type", "application/json")
	h.Set("User-Agent", UserAgent)
	h.Set(webhook.SignatureHeader, webhook.Sign(d.serviceSigner(), d.At, d.Body))
	h.Set(webhook.DeliveryHeader, d.DeliveryID)
	h.Set(webhook.IDHeader, d.EventID)
	h.Set(webhook.TimestampHeader, strconv.FormatInt(d.At.Unix(), 10))
	std := webhook.SignStandard(d.Secret, d.EventID, d.At, d.Body)
	if d.Previous != "" {
		std += " " + webhook.SignStandard(d.Previous, d.EventID, d.At, d.Body)
	}
	h.Set(webhook.StandardSignatureHeader, std)
	return h
}

// serviceSigner is the secret of X-Service-Signature, which keeps the
// specification's one t and one v1: the previous secret while there is
// one.
func (d Delivery) serviceSigner() string {
	if d.Previous != "" {
		return d.Previous
	}
	return d.Secret
}

// Request returns the attempt's POST, bound to ctx. Its only error is a
// URL that does not parse.
func (d Delivery) Request(ctx context.Context) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, d.URL, bytes.NewReader(d.Body))
	if err != nil {
		return nil, err
	}
	req.Header = d.Header()
	return req, nil
}
