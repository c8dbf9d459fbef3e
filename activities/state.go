package activities

import (
	"context"
	"fmt"

	"github.com/google/uuid"

	"github.com/furrowhq/furrow"
)

// LoadWebhookStateResult is the webhook's enabled flag, failure counter and
// transition number, and when it was last re-enabled if that was its last
// transition (0 otherwise). Gone is true when the webhook no longer exists.
type LoadWebhookStateResult struct {
	Enabled       bool
	Failures      int
	Seq           int64 `json:",omitempty"`
	ReenabledAtMs int64 `json:",omitempty"`
	Gone          bool
}

// LoadWebhookState reads the webhook's enabled flag and failure counter. A
// deleted webhook is not an error: it returns Gone.
func (a *Activities) LoadWebhookState(ctx context.Context, id uuid.UUID) (LoadWebhookStateResult, error) {
	w, err := a.Webhooks.WebhookByID(ctx, id)
	if furrow.ErrorCode(err) == furrow.ENOTFOUND {
		return LoadWebhookStateResult{Gone: true}, nil
	} else if err != nil {
		return LoadWebhookStateResult{}, fmt.Errorf("load webhook %s: %w", id, err)
	}
	res := LoadWebhookStateResult{Enabled: w.Enabled, Failures: w.ConsecutiveFailures, Seq: w.StateSeq}
	if w.Enabled && (w.StateCause == furrow.EnabledByAPI || w.StateCause == furrow.EnabledBySignal) {
		res.ReenabledAtMs = w.StateChangedAtMs
	}
	return res, nil
}

// DeliveredBetweenInput asks where a webhook's run of failed chains
// breaks: EndsMs are when its failed chains ended, ascending.
type DeliveredBetweenInput struct {
	WebhookID uuid.UUID
	EndsMs    []int64
}

// DeliveredBetweenResult says, for each end of EndsMs, whether a delivery
// of the webhook (an attempt answered 2xx, a test delivery's excepted)
// began after it and before the next (after the last: at any time since).
type DeliveredBetweenResult struct {
	Delivered []bool
}

// DeliveredBetween reads where the webhook's run of failed chains breaks
// (furrow.WebhookService.DeliveredBetween). A delivery whose count read 0
// is not reported to the workflow: this is how it learns of one.
func (a *Activities) DeliveredBetween(ctx context.Context, in DeliveredBetweenInput) (DeliveredBetweenResult, error) {
	found, err := a.Webhooks.DeliveredBetween(ctx, in.WebhookID, in.EndsMs)
	if err != nil {
		return DeliveredBetweenResult{}, fmt.Errorf("find deliveries of webhook %s: %w", in.WebhookID, err)
	}
	return DeliveredBetweenResult{Delivered: found}, nil
}

// SetWebhookStateInput is the enabled flag and failure counter to write.
type SetWebhookStateInput struct {
	WebhookID uuid.UUID
	Enabled   bool
	Failures  int
	// UnlessDeliveredAfterMs, when not 0, is when the failed chain that
	// makes this change ended: the change is not written if a delivery of
	// the webhook began after it (see Superseded).
	UnlessDeliveredAfterMs int64 `json:",omitempty"`
}

// SetWebhookStateResult says whether the webhook no longer exists, so that
// nothing was written, or whether the failed chain that made the change was
// superseded: a delivery of the webhook began after that chain ended, so
// the count had restarted after it, whichever report came first, and
// nothing was written.
type SetWebhookStateResult struct {
	Gone       bool
	Superseded bool `json:",omitempty"`
}

// TransitionWebhookInput is the transition to write, and, as in
// SetWebhookStateInput, when the failed chain that makes it ended.
type TransitionWebhookInput struct {
	furrow.WebhookTransition
	UnlessDeliveredAfterMs int64 `json:",omitempty"`
}

// superseded logs that a failed chain's change was not written.
func (a *Activities) superseded(ctx context.Context, id uuid.UUID) SetWebhookStateResult {
	a.logger().InfoContext(ctx, "failed chain not counted: a delivery began after it ended", "webhook_id", id)
	return SetWebhookStateResult{Superseded: true}
}

// SetWebhookState writes in.Enabled and in.Failures, unless superseded.
// The check for a later delivery and the write are one store transaction
// (furrow.WebhookService.SetWebhookState): checked apart, a delivery whose
// POST was still waiting for its answer had no row to find, and read the
// count of before this write, so the failed chain stayed counted after the
// delivery.
func (a *Activities) SetWebhookState(ctx context.Context, in SetWebhookStateInput) (SetWebhookStateResult, error) {
	disabling := !in.Enabled && a.enabled(ctx, in.WebhookID)
	later, err := a.Webhooks.SetWebhookState(ctx, in.WebhookID, in.Enabled, in.Failures, in.UnlessDeliveredAfterMs)
	if furrow.ErrorCode(err) == furrow.ENOTFOUND {
		return SetWebhookStateResult{Gone: true}, nil
	} else if err != nil {
		return SetWebhookStateResult{}, fmt.Errorf("set webhook %s state: %w", in.WebhookID, err)
	}
	if later {
		return a.superseded(ctx, in.WebhookID), nil
	}
	a.logger().InfoContext(ctx, "webhook state written",
		"webhook_id", in.WebhookID, "enabled", in.Enabled, "consecutive_failures", in.Failures)
	if disabling {
		a.metrics().WebhookDisabled()
	}
	return SetWebhookStateResult{}, nil
}

// TransitionWebhook writes a change of the webhook's enabled flag and
// stores its lifecycle event, once however often it is retried (see
// furrow.WebhookService.TransitionWebhook), unless superseded, checked in
// the same transaction as SetWebhookState's. The event is counted and
// published on the live bus by the call that stored it; should that call's
// answer be lost, its retry stores nothing and publishes nothing, and the
// event is still delivered and listed.
func (a *Activities) TransitionWebhook(ctx context.Context, in TransitionWebhookInput) (SetWebhookStateResult, error) {
	ev, written, later, err := a.Webhooks.TransitionWebhook(ctx, in.WebhookTransition, in.UnlessDeliveredAfterMs)
	if furrow.ErrorCode(err) == furrow.ENOTFOUND {
		return SetWebhookStateResult{Gone: true}, nil
	} else if err != nil {
		return SetWebhookStateResult{}, fmt.Errorf("transition webhook %s: %w", in.WebhookID, err)
	}
	if later {
		return a.superseded(ctx, in.WebhookID), nil
	}
	a.logger().InfoContext(ctx, "webhook state written", "webhook_id", in.WebhookID, "enabled", in.Enabled,
		"consecutive_failures", in.Failures, "transition", in.Seq, "cause", in.Cause(), "event_stored", written)
	if !written {
		return SetWebhookStateResult{}, nil
	}
	a.metrics().WebhookLifecycleEvent(ev.Type)
	if !in.Enabled {
		a.metrics().WebhookDisabled()
	}
	a.publish(ev.Event)
	return SetWebhookStateResult{}, nil
}

// enabled reports whether the webhook is enabled now. The per-webhook
// workflow is the only writer, so a disable that finds it enabled is the
// one that disables it; a retried write finds it disabled and is not
// counted twice.
func (a *Activities) enabled(ctx context.Context, id uuid.UUID) bool {
	w, err := a.Webhooks.WebhookByID(ctx, id)
	return err == nil && w.Enabled
}

// ChainReporter hands the end of a chain to the webhook's workflow,
// starting the workflow when it does not run (signal-with-start).
type ChainReporter interface {
	ReportChain(ctx context.Context, r furrow.ChainReport) error
}

// ReportChain hands in to the webhook's workflow through a.Reporter.
func (a *Activities) ReportChain(ctx context.Context, in furrow.ChainReport) error {
	if err := a.Reporter.ReportChain(ctx, in); err != nil {
		return fmt.Errorf("report chain of webhook %s: %w", in.WebhookID, err)
	}
	return nil
}
