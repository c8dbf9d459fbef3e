package memstore

import (
	"context"

	"github.com/furrowhq/furrow"
)

// transition is the result of TransitionWebhook.
type transition struct {
	event               furrow.OutboxEvent
	written, superseded bool
}

func (t transition) first() any { return t.event }

// TransitionWebhook implements furrow.WebhookService: the check and the
// write hold rowMu, as the store's row lock.
func (s *Store) TransitionWebhook(ctx context.Context, t furrow.WebhookTransition, failedAtMs int64) (furrow.OutboxEvent, bool, bool, error) {
	res, err := doUnder(ctx, s, &s.rowMu, "TransitionWebhook", []any{t, failedAtMs}, func() (transition, error) {
		s.mu.Lock()
		defer s.mu.Unlock()
		w := s.webhook(t.WebhookID)
		if w == nil {
			return transition{}, notFound("webhook")
		}
		if s.supersedes(w, failedAtMs, t.Seq) {
			return transition{superseded: true}, nil
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
	return res.event, res.written, res.superseded, err
}
