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
// deleted webhook gets none. The events are held from retention first
// (each attempt reads its event again, and would find it gone).
func (a *Activities) StartRedeliveries(ctx context.Context, in StartRedeliveriesInput) (StartRedeliveriesResult, error) {
	if a.Retention != nil { // Without retention nothing is dropped.
		until := a.Clock.Now().Add(furrow.ChainSpan(furrow.TimeDurations(in.Schedule)))
		if err := a.Retention.HoldEventDays(ctx, in.Events, until); err != nil {
			return StartRedeliveriesResult{}, fmt.Errorf("redelivery %s to webhook %s: hold events: %w", in.Batch, in.WebhookID, err)
		}
	}
	return a.startRedeliveries(ctx, in)
}

// startRedeliveries is StartRedeliveries once the events' days are held.
func (a *Activities) startRedeliveries(ctx context.Context, in StartRedeliveriesInput) (StartRedeliveriesResult, error) {
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

// StartRedeliveryPageInput is a page of a redelivery since a time: the
// events of Set after the place After (nil: from the first), at most
// Limit of them, to deliver to a webhook once more. Set names no event:
// the activity reads the page, so that the history holds no list of them.
type StartRedeliveryPageInput struct {
	WebhookID uuid.UUID
	// Batch names the redelivery, as in StartRedeliveriesInput.
	Batch string
	Set   furrow.RedeliverySet
	After *furrow.Cursor `json:",omitempty"`
	Limit int
	// Schedule is the deliveries' retry schedule; empty means
	// furrow.DefaultSchedule.
	Schedule []furrow.Duration `json:",omitempty"`
}

// StartRedeliveryPageResult says how many deliveries of the page were
// started (those started before a retry included), where the next page
// starts (nil when none is left), and whether the webhook was gone.
type StartRedeliveryPageResult struct {
	Started int
	Next    *furrow.Cursor `json:",omitempty"`
	Gone    bool           `json:",omitempty"`
}

// StartRedeliveryPage reads a page of a redelivery's events and starts
// their deliveries through a.Redeliverer; a deleted webhook gets none. A
// retry reads the same page and starts none twice (the deliveries' IDs
// name the batch). Reading the page holds its events' days.
func (a *Activities) StartRedeliveryPage(ctx context.Context, in StartRedeliveryPageInput) (StartRedeliveryPageResult, error) {
	events, next, err := a.Webhooks.RedeliveryEvents(ctx, in.Set, in.After, in.Limit)
	if err != nil {
		return StartRedeliveryPageResult{}, fmt.Errorf("redelivery %s to webhook %s: list events: %w", in.Batch, in.WebhookID, err)
	}
	res, err := a.startRedeliveries(ctx, StartRedeliveriesInput{WebhookID: in.WebhookID, Batch: in.Batch, Events: events, Schedule: in.Schedule})
	if err != nil || res.Gone {
		return StartRedeliveryPageResult{Started: res.Started, Gone: res.Gone}, err
	}
	return StartRedeliveryPageResult{Started: res.Started, Next: next}, nil
}
