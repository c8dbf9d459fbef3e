// Package webhook verifies Furrow webhook deliveries on the receiving side.
// It imports only the standard library, so a receiver needs nothing else of
// Furrow. A complete receiver:
//
//	package main
//
//	import (
//		"encoding/json"
//		"log"
//		"net/http"
//		"os"
//
//		"github.com/furrowhq/furrow/webhook"
//	)
//
//	func main() {
//		handle := func(w http.ResponseWriter, r *http.Request) {
//			var ev webhook.Event
//			if json.NewDecoder(r.Body).Decode(&ev) != nil {
//				http.Error(w, "not an event", http.StatusBadRequest)
//				return
//			}
//			// The answer leaves when the handler returns: hand slow work
//			// to a queue (deduplicating on ev.ID), never do it here, or
//			// the 10 s timeout makes Furrow retry.
//			log.Printf("%s %s", ev.ID, ev.Type)
//			w.WriteHeader(http.StatusNoContent)
//		}
//		secret := os.Getenv("WEBHOOK_SECRET")
//		http.Handle("POST /hook", webhook.Middleware(secret, http.HandlerFunc(handle)))
//		log.Fatal(http.ListenAndServe(":9000", nil))
//	}
//
// Every delivery is a POST signed twice over its raw body. X-Service-Signature
// has the form t=<epoch_ms>,v1=<hex>, where v1 is the hex HMAC-SHA256 of
// "<t>.<raw body>" keyed with the webhook's signing secret; Verify,
// VerifyRequest and Middleware check it. The Standard Webhooks headers
// (webhook-id, webhook-timestamp, webhook-signature) carry the same proof in
// that standard's form; VerifyStandard checks them. Receivers verify the raw
// request bytes (never a re-serialised object), reject timestamps outside a
// tolerance to prevent replay, acknowledge with a 2xx at once, and
// deduplicate on the event id.
//
// While a secret is being rotated, VerifyAny, VerifyStandardAny,
// VerifyRequestAny and MiddlewareAny accept a list of secrets: a delivery
// signed with any one of them verifies. During a rotation's overlap Furrow
// signs X-Service-Signature with the previous secret and webhook-signature
// with both ("v1,<new> v1,<previous>"), so a receiver holding the new and
// the previous secret accepts every delivery, whichever header it checks.
//
// Sign and SignStandard compute the two signatures. They are the one
// definition of both schemes: Furrow's sender signs with them, and a
// receiver signs the requests of its own tests with them.
package webhook

import "encoding/json"

// Header names of a delivery.
const (
	// SignatureHeader carries t=<epoch_ms>,v1=<hex>.
	SignatureHeader = "X-Service-Signature"
	// DeliveryHeader carries a unique id per delivery attempt.
	DeliveryHeader = "X-Service-Delivery"
	// IDHeader carries the event id: the same on every retry.
	IDHeader = "webhook-id"
	// TimestampHeader carries the attempt's time in epoch seconds.
	TimestampHeader = "webhook-timestamp"
	// StandardSignatureHeader carries "v1,<base64>", several separated by
	// spaces when more than one key signs.
	StandardSignatureHeader = "webhook-signature"
)

// Event is the envelope delivered in the body of every webhook request.
// Deduplicate on ID; sort on OccurredAtMs. Data's fields depend on Type.
type Event struct {
	// ID has the form evt_<uuid>.
	ID string `json:"id"`
	// Type is metric.value, device.offline, trigger.fired or
	// recommendation.created.
	Type string `json:"type"`
	// FarmID is the uuid of the farm the event belongs to.
	FarmID string `json:"farm_id"`
	// OccurredAtMs is when the event happened, in epoch milliseconds.
	OccurredAtMs int64 `json:"occurred_at_ms"`
	// Data is the event's payload, a JSON object.
	Data json.RawMessage `json:"data"`
}
