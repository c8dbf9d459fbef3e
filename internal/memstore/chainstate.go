package memstore

import (
	"context"

	"github.com/furrowhq/furrow"
)

// supersedes reports whether a change of the webhook w made by a failed
// chain that ended at failedAtMs (0: none) is dropped, a delivery having
// begun after: never when the transition seq (0: none) was written
// already. The caller holds rowMu and mu.
func (s *Store) supersedes(w *webhook, failedAtMs int64, seq int64) bool {
	return failedAtMs != 0 && (seq == 0 || w.StateSeq < seq) && s.deliveredAfter(w.ID, failedAtMs)
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
