package furrow

import (
	"slices"

	"github.com/google/uuid"
)

// WebhookSecretPrefix starts every webhook signing secret.
const WebhookSecretPrefix = "whsec_"

// MaxWebhooksPerFarm bounds a farm's webhooks. Every event of a farm starts
// a delivery workflow for each webhook subscribed to it, so the bound keeps
// what one event can cost within reach.
const MaxWebhooksPerFarm = 100

// ErrTooManyWebhooks refuses a webhook beyond MaxWebhooksPerFarm.
func ErrTooManyWebhooks() error {
	return Errorf(ECONFLICT, "The farm has %d webhooks, the most it can have: delete one before creating another.", MaxWebhooksPerFarm)
}

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
	// EventTypes empty means DefaultEventTypes (see Subscribes).
	EventTypes []string `json:"event_types"`

	// SecretVersion numbers Secret: 1 at creation, one more at each
	// rotation. The attempt log names signers by it.
	SecretVersion int `json:"secret_version"`
	// PreviousSecret is the secret the last rotation replaced, while its
	// overlap lasts; its version is SecretVersion-1. It is never shown:
	// its owner had it already.
	PreviousSecret string `json:"-"`
	// PreviousSecretUntilMs ends the overlap (epoch ms, the store's clock
	// at rotation plus the overlap); 0 when there is no previous secret.
	PreviousSecretUntilMs int64 `json:"previous_secret_until_ms,omitempty"`
	// StateSeq numbers the changes of Enabled its workflow made (0 before
	// the first); StateChangedAtMs and StateCause say when and why the
	// last was made (0 and "" before it). See WebhookTransition.
	StateSeq         int64  `json:"-"`
	StateChangedAtMs int64  `json:"-"`
	StateCause       string `json:"-"`
	// MaxPerSecond caps the attempts sent to the webhook each second
	// across every process; nil is unlimited (ValidateMaxPerSecond).
	MaxPerSecond *float64 `json:"max_per_second"`
}

// Subscribes reports whether w receives farm events of type t: a webhook
// that lists no types receives DefaultEventTypes, one that lists types
// receives those. webhook.test is never received by subscription: it goes
// to the webhook tested only.
func (w Webhook) Subscribes(t string) bool {
	if t == EventWebhookTest {
		return false
	}
	if len(w.EventTypes) == 0 {
		return slices.Contains(DefaultEventTypes, t)
	}
	return slices.Contains(w.EventTypes, t)
}

// SubscribedTypes lists the types of farm events w receives, those
// Subscribes reports: its EventTypes, or DefaultEventTypes when it lists
// none. The slice is w's own or shared: callers must not change it.
func (w Webhook) SubscribedTypes() []string {
	if len(w.EventTypes) == 0 {
		return DefaultEventTypes
	}
	return w.EventTypes
}

// AttemptFilter selects a webhook's delivery log, newest first; Before (a
// cursor of an earlier page) pages backwards stably.
type AttemptFilter struct {
	WebhookID uuid.UUID
	Before    *Cursor
	Limit     int
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
	// SignedWith lists the SecretVersion of each secret that signed the
	// request, X-Service-Signature's signer first; empty when nothing was
	// sent. It never holds a secret.
	SignedWith []int `json:"signed_with"`
}

// Size is the bytes of the attempt's response body and error, what a page
// of the delivery log counts against MaxPageBytes.
func (a Attempt) Size() int { return len(a.ResponseBody) + len(a.Error) }
