package memstore

import (
	"context"
	"math"
	"slices"

	"github.com/google/uuid"

	"github.com/furrowhq/furrow"
)

// AttemptHealth implements furrow.WebhookService.
func (s *Store) AttemptHealth(ctx context.Context, webhookIDs []uuid.UUID) ([]furrow.AttemptHealth, error) {
	return do(ctx, s, "AttemptHealth", []any{webhookIDs}, func() ([]furrow.AttemptHealth, error) {
		since := s.nowMs() - furrow.HealthWindow.Milliseconds()
		var out []furrow.AttemptHealth
		for _, id := range webhookIDs {
			out = append(out, s.attemptHealth(id, since))
		}
		return out, nil
	})
}

// DeliveredBetween implements furrow.WebhookService.
func (s *Store) DeliveredBetween(ctx context.Context, webhookID uuid.UUID, endsMs []int64) ([]bool, error) {
	return do(ctx, s, "DeliveredBetween", []any{webhookID, endsMs}, func() ([]bool, error) {
		var found []bool
		for i, lo := range endsMs {
			hi := int64(math.MaxInt64)
			if i+1 < len(endsMs) {
				hi = endsMs[i+1]
			}
			found = append(found, s.deliveredIn(webhookID, lo, hi))
		}
		return found, nil
	})
}

// deliveredAfter reports whether an attempt answered 2xx began after
// afterMs; the caller holds the lock.
func (s *Store) deliveredAfter(webhookID uuid.UUID, afterMs int64) bool {
	return s.deliveredIn(webhookID, afterMs, math.MaxInt64)
}

// deliveredIn reports whether an attempt answered 2xx began after lo and
// before hi; the caller holds the lock. A test delivery's row is told by
// its event, a stored test event.
func (s *Store) deliveredIn(webhookID uuid.UUID, lo, hi int64) bool {
	for _, a := range s.attempts {
		_, test := s.testEvents[a.EventID]
		if a.WebhookID == webhookID && !furrow.Skipped(a.Error) && furrow.Accepted(a.StatusCode) && a.AtMs > lo && a.AtMs < hi && !test {
			return true
		}
	}
	return false
}

// attemptHealth summarizes one webhook's attempts as the store does; the
// caller holds the lock.
func (s *Store) attemptHealth(id uuid.UUID, sinceMs int64) furrow.AttemptHealth {
	h := furrow.AttemptHealth{WebhookID: id}
	var durations []int64
	var lastOK, lastFail *attempt
	for i := range s.attempts {
		a := &s.attempts[i]
		if a.WebhookID != id || furrow.Skipped(a.Error) {
			continue
		}
		ok := furrow.Accepted(a.StatusCode)
		if a.AtMs >= sinceMs {
			h.Attempts++
			if ok {
				h.Delivered++
			}
			durations = append(durations, a.DurationMs)
		}
		if ok && newer(a, lastOK) {
			lastOK = a
		} else if !ok && newer(a, lastFail) {
			lastFail = a
		}
	}
	if lastOK != nil {
		h.LastDeliveredAtMs = &lastOK.AtMs
	}
	if lastFail != nil {
		h.LastFailure = &furrow.HealthFailure{AtMs: lastFail.AtMs, StatusCode: lastFail.StatusCode, Error: lastFail.Error}
	}
	slices.Sort(durations)
	h.P50DurationMs, h.P95DurationMs = percentile(durations, 0.5), percentile(durations, 0.95)
	return h
}

// newer reports whether a is later in the log than b (nil: none).
func newer(a, b *attempt) bool {
	return b == nil || a.AtMs > b.AtMs || (a.AtMs == b.AtMs && a.seq > b.seq)
}

// percentile is PostgreSQL's percentile_disc of sorted: the first value
// whose position reaches the fraction p; nil when there is none.
func percentile(sorted []int64, p float64) *int64 {
	if len(sorted) == 0 {
		return nil
	}
	i := max(int(math.Ceil(p*float64(len(sorted))))-1, 0)
	v := sorted[i]
	return &v
}
