package memstore

import (
	"context"

	"github.com/google/uuid"

	"github.com/furrowhq/furrow"
)

// SetWebhookStateUnlessDelivered implements furrow.WebhookService: the
// check and the write, a recorded SetWebhookState call, hold rowMu.
func (s *Store) SetWebhookStateUnlessDelivered(ctx context.Context, id uuid.UUID, enabled bool, failures int, failedAtMs int64) (bool, error) {
	return doUnder(ctx, s, &s.rowMu, "SetWebhookStateUnlessDelivered", []any{id, enabled, failures, failedAtMs}, func() (bool, error) {
		if s.supersedes(id, failedAtMs, 0) {
			return true, nil
		}
		return false, s.SetWebhookState(ctx, id, enabled, failures)
	})
}

// guardedTransition is the result of TransitionWebhookUnlessDelivered.
type guardedTransition struct {
	transition
	superseded bool
}

// TransitionWebhookUnlessDelivered implements furrow.WebhookService: the
// check and the write, a recorded TransitionWebhook call, hold rowMu.
func (s *Store) TransitionWebhookUnlessDelivered(ctx context.Context, t furrow.WebhookTransition, failedAtMs int64) (furrow.OutboxEvent, bool, bool, error) {
	res, err := doUnder(ctx, s, &s.rowMu, "TransitionWebhookUnlessDelivered", []any{t, failedAtMs}, func() (guardedTransition, error) {
		if s.supersedes(t.WebhookID, failedAtMs, t.Seq) {
			return guardedTransition{superseded: true}, nil
		}
		ev, written, err := s.TransitionWebhook(ctx, t)
		return guardedTransition{transition: transition{event: ev, written: written}}, err
	})
	return res.event, res.written, res.superseded, err
}

// supersedes reports whether a change of the webhook made by a failed chain
// that ended at failedAtMs (0: none) is dropped, a delivery having begun
// after: never when the webhook is gone (the write says so), nor when the
// transition seq (0: none) was written already. The caller holds rowMu.
func (s *Store) supersedes(id uuid.UUID, failedAtMs int64, seq int64) bool {
	if failedAtMs == 0 {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	w := s.webhook(id)
	return w != nil && (seq == 0 || w.StateSeq < seq) && s.deliveredAfter(id, failedAtMs)
}

// AddDeliveredAttempt implements furrow.WebhookService: the row, a
// recorded AddAttempt call, and the read of the counter hold rowMu.
func (s *Store) AddDeliveredAttempt(ctx context.Context, a furrow.Attempt) (int, error) {
	return doUnder(ctx, s, &s.rowMu, "AddDeliveredAttempt", []any{a}, func() (int, error) {
		if err := s.AddAttempt(ctx, a); err != nil || !furrow.Accepted(a.StatusCode) {
			return 0, err
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		if w := s.webhook(a.WebhookID); w != nil {
			return w.ConsecutiveFailures, nil
		}
		return 0, nil
	})
}
