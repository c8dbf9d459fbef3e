package activities

import (
	"context"
	"fmt"

	"github.com/google/uuid"

	"github.com/furrowhq/furrow"
)

// StartRedeliveriesInput is a part of a redelivery: events to deliver to a
// webhook once more, without their data (each attempt reads it).
type StartRedeliveriesInput struct {
	WebhookID uuid.UUID
	// Batch names the redelivery. With each event's id it makes the
	// delivery workflow IDs, so a retried activity starts none twice.
	Batch  string
	Events []furrow.Event
	// Schedule is the deliveries' retry schedule; empty means
	// furrow.DefaultSchedule.
	Schedule []furrow.Duration
}

// StartRedeliveriesResult says how many deliveries were started (those
// started before a retry included), and whether the webhook was gone.
type StartRedeliveriesResult struct {
	Started int
	Gone    bool
}

// Redeliverer starts the delivery workflows of a redelivery; cmd wires it
// to Temporal.
type Redeliverer interface {
	// StartRedeliveries starts a delivery of each of in.Events to w and
	// returns how many were started; one already started counts.
	StartRedeliveries(ctx context.Context, w furrow.Webhook, in StartRedeliveriesInput) (int, error)
}

// StartRedeliveries starts the deliveries of in through a.Redeliverer; a
// deleted webhook gets none.
func (a *Activities) StartRedeliveries(ctx context.Context, in StartRedeliveriesInput) (StartRedeliveriesResult, error) {
	w, err := a.Webhooks.WebhookByID(ctx, in.WebhookID)
	if furrow.ErrorCode(err) == furrow.ENOTFOUND {
		return StartRedeliveriesResult{Gone: true}, nil
	}
	if err != nil {
		return StartRedeliveriesResult{}, err
	}
	n, err := a.Redeliverer.StartRedeliveries(ctx, w, in)
	if err != nil {
		return StartRedeliveriesResult{Started: n}, fmt.Errorf("redelivery %s to webhook %s: %w", in.Batch, in.WebhookID, err)
	}
	return StartRedeliveriesResult{Started: n}, nil
}
