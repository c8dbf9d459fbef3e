package furrow

import (
	"strconv"

	"github.com/google/uuid"
)

// Webhook lifecycle event types: a webhook's workflow announces each change
// of its enabled state as a farm event of its farm. Only webhooks that list
// them in their event types receive them.
const (
	// EventWebhookDisabled: the webhook was disabled by MaxFailedChains
	// consecutive failed chains (data WebhookDisabledData).
	EventWebhookDisabled = "webhook.disabled"
	// EventWebhookEnabled: a disabled webhook was enabled again (data
	// WebhookEnabledData).
	EventWebhookEnabled = "webhook.enabled"
)

// Who enabled a webhook again: the By of WebhookEnabledData.
const (
	// EnabledByAPI: POST /api/farms/{farm}/webhooks/{id}/enable.
	EnabledByAPI = "api"
	// EnabledBySignal: the reenable signal sent to the webhook's workflow
	// without a payload, from the Temporal UI or CLI.
	EnabledBySignal = "signal"
)

// CauseFailedChains is the StateCause of a webhook disabled by its failed
// chains; an enabled one has the EnabledBy word as its cause.
const CauseFailedChains = "failed_chains"

// WebhookDisabledData is the data of a webhook.disabled event. The last
// failed chain's last attempt was answered LastStatusCode (0 when there was
// no answer) or failed with LastError (empty when it was answered).
type WebhookDisabledData struct {
	WebhookID      uuid.UUID `json:"webhook_id"`
	FailedChains   int       `json:"failed_chains"`
	LastStatusCode int       `json:"last_status_code"`
	LastError      string    `json:"last_error"`
}

// WebhookEnabledData is the data of a webhook.enabled event; By is
// EnabledByAPI or EnabledBySignal.
type WebhookEnabledData struct {
	WebhookID uuid.UUID `json:"webhook_id"`
	By        string    `json:"by"`
}

// WebhookTransition is a change of a webhook's enabled state, as its
// workflow (the only writer of that state) decides it, with what its
// lifecycle event says. Seq is the webhook's transition number, one more
// than the last (StateSeq); AtMs is when the workflow saw the change. Both
// come from the workflow's history, so writing the same transition again
// yields the same event id and time: a store writes a transition once.
type WebhookTransition struct {
	WebhookID uuid.UUID
	Seq       int64
	AtMs      int64
	Enabled   bool
	// Failures is the failure counter written: the failed chains when
	// disabling, 0 when enabling.
	Failures int
	// LastStatusCode and LastError are those of the last failed chain's
	// last attempt, when disabling.
	LastStatusCode int    `json:",omitempty"`
	LastError      string `json:",omitempty"`
	// By is EnabledByAPI or EnabledBySignal, when enabling.
	By string `json:",omitempty"`
}

// lifecycleNamespace derives lifecycle event ids from (webhook, Seq).
var lifecycleNamespace = uuid.MustParse("0b7d3c4e-58a1-4f0e-9a52-5d2f6c1e8b37")

// Cause is what made the change: CauseFailedChains, or the By word.
func (t WebhookTransition) Cause() string {
	if t.Enabled {
		return t.By
	}
	return CauseFailedChains
}

// Event returns the lifecycle event announcing t on the webhook's farm. Its
// id derives from the webhook and Seq, and it occurs at AtMs.
func (t WebhookTransition) Event(farm uuid.UUID) Event {
	id := uuid.NewSHA1(lifecycleNamespace, []byte(t.WebhookID.String()+"/"+strconv.FormatInt(t.Seq, 10)))
	e := Event{ID: EventID(id), FarmID: farm, OccurredAtMs: t.AtMs}
	if t.Enabled {
		e.Type, e.Data = EventWebhookEnabled, mustJSON(WebhookEnabledData{WebhookID: t.WebhookID, By: t.By})
	} else {
		d := WebhookDisabledData{WebhookID: t.WebhookID, FailedChains: t.Failures, LastStatusCode: t.LastStatusCode}
		if t.LastStatusCode == 0 { // An answer says it all; the error text only repeats it.
			d.LastError = t.LastError
		}
		e.Type, e.Data = EventWebhookDisabled, mustJSON(d)
	}
	return e
}
