package furrow

import (
	"slices"

	"github.com/google/uuid"
)

// WebhookSecretPrefix starts every webhook signing secret.
const WebhookSecretPrefix = "whsec_"

// Webhook is a user-registered HTTPS endpoint that receives a farm's events.
// Secret signs deliveries; it is re-readable by managers but never enters
// logs, workflow inputs or the attempt log.
type Webhook struct {
	ID                  uuid.UUID `json:"id"`
	FarmID              uuid.UUID `json:"-"`
	URL                 string    `json:"url"`
	Secret              string    `json:"secret"`
	Enabled             bool      `json:"enabled"`
	ConsecutiveFailures int       `json:"consecutive_failures"`
	// EventTypes empty means every type.
	EventTypes []string `json:"event_types"`
	// MaxPerSecond caps the attempts sent to the webhook each second
	// across every process; nil is unlimited (ValidateMaxPerSecond).
	MaxPerSecond *float64 `json:"max_per_second"`
}

// Subscribes reports whether w wants events of type t.
func (w Webhook) Subscribes(t string) bool {
	return len(w.EventTypes) == 0 || slices.Contains(w.EventTypes, t)
}

// Attempt is one row of a webhook's delivery log. StatusCode is 0 when no
// answer was received; Error says why (timeout, connection failure, skipped).
type Attempt struct {
	DeliveryID   uuid.UUID `json:"delivery_id"`
	WebhookID    uuid.UUID `json:"-"`
	EventID      string    `json:"event_id"`
	Attempt      int       `json:"attempt"`
	StatusCode   int       `json:"status_code"`
	ResponseBody string    `json:"response_body"`
	Error        string    `json:"error"`
	DurationMs   int64     `json:"duration_ms"`
	AtMs         int64     `json:"at_ms"`
}
