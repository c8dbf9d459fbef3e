package furrow

import "github.com/google/uuid"

// EventWebhookTest is the type of the delivery a manager asks for to try a
// webhook. It is not a farm event: it goes to the webhook tested only,
// through the delivery engine like any delivery, and is never listed by the
// events API, published on the live bus or delivered by subscription.
const EventWebhookTest = "webhook.test"

// WebhookTestData is the data of a webhook.test event.
type WebhookTestData struct {
	WebhookID uuid.UUID `json:"webhook_id"`
	Message   string    `json:"message"`
}

// webhookTestMessage is the Message of every webhook.test event.
const webhookTestMessage = "This is a test delivery asked for by a manager of the farm; it needs no action."

// NewWebhookTestEvent returns a fresh webhook.test event for w that occurs
// at atMs.
func NewWebhookTestEvent(w Webhook, atMs int64) Event {
	return Event{
		ID: NewEventID(), Type: EventWebhookTest, FarmID: w.FarmID, OccurredAtMs: atMs,
		Data: mustJSON(WebhookTestData{WebhookID: w.ID, Message: webhookTestMessage}),
	}
}

// IsTestDelivery reports whether a delivery of an event of type t is a test
// delivery: one that is sent even to a disabled webhook and whose chain is
// never reported to the webhook's workflow, so it never counts toward
// MaxFailedChains.
func IsTestDelivery(t string) bool { return t == EventWebhookTest }
