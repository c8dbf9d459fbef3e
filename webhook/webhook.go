// Package webhook signs Furrow webhook deliveries and verifies them on the
// receiving side.
//
// Every delivery is a POST whose X-Service-Signature header has the form
// t=<epoch_ms>,v1=<hex>, where v1 is the hex HMAC-SHA256 of "<t>.<raw body>"
// keyed with the webhook's signing secret. Receivers verify the raw request
// bytes (never a re-serialised object), reject timestamps outside a tolerance
// to prevent replay, acknowledge with a 2xx at once, and deduplicate on the
// event id.
package webhook

import "github.com/furrowhq/furrow"

// Header names and values of an outgoing delivery.
const (
	// SignatureHeader carries t=<epoch_ms>,v1=<hex>.
	SignatureHeader = "X-Service-Signature"
	// DeliveryHeader carries a unique id per delivery attempt.
	DeliveryHeader = "X-Service-Delivery"
	// UserAgent is the User-Agent of every delivery.
	UserAgent = "Furrow-Webhooks/1.0"
)

// Event is the envelope delivered in the body of every webhook request.
// Deduplicate on ID; sort on OccurredAtMs.
type Event = furrow.Event
