package memstore

import (
	"context"

	"github.com/furrowhq/furrow"
)

// transition is the result of TransitionWebhook.
type transition struct {
	event   furrow.OutboxEvent
	written bool
}

func (t transition) first() any { return t.event }

// TransitionWebhook implements furrow.WebhookService.
func (s *Store) TransitionWebhook(ctx context.Context, t furrow.WebhookTransition) (furrow.OutboxEvent, bool, error) {
	res, err := do(ctx, s, "TransitionWebhook", []any{t}, func() (transition, error) {
		w := s.webhook(t.WebhookID)
		if w == nil {
			return transition{}, notFound("webhook")
		}
		if w.StateSeq >= t.Seq {
			return transition{}, nil
		}
		w.Enabled, w.ConsecutiveFailures = t.Enabled, t.Failures
		w.StateSeq, w.StateChangedAtMs, w.StateCause = t.Seq, t.AtMs, t.Cause()
		e := t.Event(w.FarmID)
		if _, taken := s.eventIDs[e.ID]; taken {
			return transition{}, nil
		}
		return transition{event: s.insertEvent(e), written: true}, nil
	})
	return res.event, res.written, err
}
