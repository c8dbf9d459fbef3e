package activities

import (
	"context"
	"fmt"

	"github.com/google/uuid"

	"github.com/furrowhq/furrow"
)

// WebhookState is the part of a webhook the per-webhook workflow owns. Gone
// is true when the webhook no longer exists.
type WebhookState struct {
	WebhookID uuid.UUID
	Enabled   bool
	Failures  int
	Gone      bool
}

// LoadWebhookState reads the webhook's enabled flag and failure counter. A
// deleted webhook is not an error: it returns Gone.
func (a *Activities) LoadWebhookState(ctx context.Context, id uuid.UUID) (WebhookState, error) {
	w, err := a.Webhooks.WebhookByID(ctx, id)
	if furrow.ErrorCode(err) == furrow.ENOTFOUND {
		return WebhookState{WebhookID: id, Gone: true}, nil
	} else if err != nil {
		return WebhookState{}, fmt.Errorf("load webhook %s: %w", id, err)
	}
	return WebhookState{WebhookID: id, Enabled: w.Enabled, Failures: w.ConsecutiveFailures}, nil
}

// SetWebhookState writes s.Enabled and s.Failures and returns s, with Gone
// set when the webhook no longer exists.
func (a *Activities) SetWebhookState(ctx context.Context, s WebhookState) (WebhookState, error) {
	err := a.Webhooks.SetWebhookState(ctx, s.WebhookID, s.Enabled, s.Failures)
	if furrow.ErrorCode(err) == furrow.ENOTFOUND {
		s.Gone = true
		return s, nil
	} else if err != nil {
		return s, fmt.Errorf("set webhook %s state: %w", s.WebhookID, err)
	}
	a.logger().InfoContext(ctx, "webhook state written",
		"webhook_id", s.WebhookID, "enabled", s.Enabled, "consecutive_failures", s.Failures)
	return s, nil
}

// ReportChain hands r to the webhook's workflow.
func (a *Activities) ReportChain(ctx context.Context, r ChainReport) error {
	if err := a.Reporter.ReportChain(ctx, r); err != nil {
		return fmt.Errorf("report chain of webhook %s: %w", r.WebhookID, err)
	}
	return nil
}
