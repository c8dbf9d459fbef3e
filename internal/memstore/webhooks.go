package memstore

import (
	"context"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/furrowhq/furrow"
)

// webhook is a stored webhook.
type webhook struct{ furrow.Webhook }

// copied returns the webhook with its own copy of the event types (none is
// an empty list, as the store reads it), without a previous secret whose
// overlap has ended at nowMs, which it clears, as the store does.
func (w *webhook) copied(nowMs int64) furrow.Webhook {
	if w.PreviousSecret != "" && w.PreviousSecretUntilMs <= nowMs {
		w.PreviousSecret, w.PreviousSecretUntilMs = "", 0
	}
	out := w.Webhook
	out.EventTypes = append([]string{}, w.EventTypes...)
	out.MaxPerSecond = copyRate(w.MaxPerSecond)
	return out
}

// attempt is a row of the delivery log and its place in it.
type attempt struct {
	furrow.Attempt
	seq int64
}

// CreateWebhook implements furrow.WebhookService; a nil ID gets a new one.
func (s *Store) CreateWebhook(ctx context.Context, w furrow.Webhook) (furrow.Webhook, error) {
	return do(ctx, s, "CreateWebhook", []any{w}, func() (furrow.Webhook, error) {
		if w.ID == uuid.Nil {
			w.ID = uuid.New()
		}
		if s.webhook(w.ID) != nil {
			return furrow.Webhook{}, furrow.Errorf(furrow.ECONFLICT, "A webhook with this id already exists.")
		}
		if _, ok := s.farms[w.FarmID]; !ok {
			return furrow.Webhook{}, notFound("farm")
		}
		if s.farmWebhooks(w.FarmID) >= furrow.MaxWebhooksPerFarm {
			return furrow.Webhook{}, furrow.ErrTooManyWebhooks()
		}
		w.SecretVersion, w.PreviousSecret, w.PreviousSecretUntilMs = 1, "", 0
		stored := &webhook{w}
		stored.EventTypes = slices.Clone(w.EventTypes)
		stored.StateSeq, stored.StateChangedAtMs, stored.StateCause = 0, 0, "" // no transition yet
		stored.MaxPerSecond = copyRate(w.MaxPerSecond)
		s.webhooks = append(s.webhooks, stored)
		return stored.copied(s.nowMs()), nil
	})
}

// farmWebhooks counts the farm's webhooks.
func (s *Store) farmWebhooks(farmID uuid.UUID) int {
	n := 0
	for _, w := range s.webhooks {
		if w.FarmID == farmID {
			n++
		}
	}
	return n
}

// webhook returns the stored webhook id, or nil.
func (s *Store) webhook(id uuid.UUID) *webhook {
	i := slices.IndexFunc(s.webhooks, func(w *webhook) bool { return w.ID == id })
	if i < 0 {
		return nil
	}
	return s.webhooks[i]
}

// Webhook implements furrow.WebhookService.
func (s *Store) Webhook(ctx context.Context, farmID, id uuid.UUID) (furrow.Webhook, error) {
	return do(ctx, s, "Webhook", []any{farmID, id}, func() (furrow.Webhook, error) {
		w := s.webhook(id)
		if w == nil || w.FarmID != farmID {
			return furrow.Webhook{}, notFound("webhook")
		}
		return w.copied(s.nowMs()), nil
	})
}

// WebhookByID implements furrow.WebhookService.
func (s *Store) WebhookByID(ctx context.Context, id uuid.UUID) (furrow.Webhook, error) {
	return do(ctx, s, "WebhookByID", []any{id}, func() (furrow.Webhook, error) {
		w := s.webhook(id)
		if w == nil {
			return furrow.Webhook{}, notFound("webhook")
		}
		return w.copied(s.nowMs()), nil
	})
}

// Webhooks implements furrow.WebhookService.
func (s *Store) Webhooks(ctx context.Context, farmID uuid.UUID) ([]furrow.Webhook, error) {
	return do(ctx, s, "Webhooks", []any{farmID}, func() ([]furrow.Webhook, error) {
		var out []furrow.Webhook
		for _, w := range s.webhooks {
			if w.FarmID == farmID {
				out = append(out, w.copied(s.nowMs()))
			}
		}
		return out, nil
	})
}

// DispatchWebhooks is the store's listing for the outbox dispatcher: a
// farm's webhooks, oldest first, with ID, FarmID, URL, Enabled, EventTypes
// and MaxPerSecond only, no secret.
func (s *Store) DispatchWebhooks(ctx context.Context, farmID uuid.UUID) ([]furrow.Webhook, error) {
	return do(ctx, s, "DispatchWebhooks", []any{farmID}, func() ([]furrow.Webhook, error) {
		var out []furrow.Webhook
		for _, w := range s.webhooks {
			if w.FarmID == farmID {
				out = append(out, furrow.Webhook{ID: w.ID, FarmID: w.FarmID, URL: w.URL, Enabled: w.Enabled,
					EventTypes: append([]string{}, w.EventTypes...), MaxPerSecond: copyRate(w.MaxPerSecond)})
			}
		}
		return out, nil
	})
}

// DeleteWebhook implements furrow.WebhookService. Its attempts stay.
func (s *Store) DeleteWebhook(ctx context.Context, farmID, id uuid.UUID) error {
	_, err := do(ctx, s, "DeleteWebhook", []any{farmID, id}, func() (none, error) {
		n := len(s.webhooks)
		s.webhooks = slices.DeleteFunc(s.webhooks, func(w *webhook) bool { return w.ID == id && w.FarmID == farmID })
		if len(s.webhooks) == n {
			return nil, notFound("webhook")
		}
		return nil, nil
	})
	return err
}

// RotateWebhookSecret implements furrow.WebhookService.
func (s *Store) RotateWebhookSecret(ctx context.Context, farmID, id uuid.UUID, secret string, overlap time.Duration) (furrow.Webhook, error) {
	return do(ctx, s, "RotateWebhookSecret", []any{farmID, id, secret, overlap}, func() (furrow.Webhook, error) {
		w := s.webhook(id)
		if w == nil || w.FarmID != farmID {
			return furrow.Webhook{}, notFound("webhook")
		}
		w.PreviousSecret, w.PreviousSecretUntilMs = "", 0
		if overlap > 0 {
			w.PreviousSecret, w.PreviousSecretUntilMs = w.Secret, s.nowMs()+overlap.Milliseconds()
		}
		w.Secret = secret
		w.SecretVersion++
		return w.copied(s.nowMs()), nil
	})
}

// SetWebhookState implements furrow.WebhookService: the check and the
// write hold rowMu, as the store's row lock.
func (s *Store) SetWebhookState(ctx context.Context, id uuid.UUID, enabled bool, failures int, failedAtMs int64) (bool, error) {
	return doUnder(ctx, s, &s.rowMu, "SetWebhookState", []any{id, enabled, failures, failedAtMs}, func() (bool, error) {
		s.mu.Lock()
		defer s.mu.Unlock()
		w := s.webhook(id)
		if w == nil {
			return false, notFound("webhook")
		}
		if s.supersedes(w, failedAtMs, 0) {
			return true, nil
		}
		w.Enabled, w.ConsecutiveFailures = enabled, failures
		return false, nil
	})
}

// AddAttempt implements furrow.WebhookService. A zero AtMs is the clock's
// now and a nil DeliveryID a new one; the attempt's webhook need not exist.
func (s *Store) AddAttempt(ctx context.Context, a furrow.Attempt) error {
	_, err := do(ctx, s, "AddAttempt", []any{a}, func() (none, error) {
		if _, err := furrow.ParseEventID(a.EventID); err != nil {
			return nil, err
		}
		if a.AtMs == 0 {
			a.AtMs = s.nowMs()
		}
		if a.DeliveryID == uuid.Nil {
			a.DeliveryID = uuid.New()
		}
		a.SignedWith = append([]int{}, a.SignedWith...)
		if slices.ContainsFunc(s.attempts, func(o attempt) bool {
			return o.DeliveryID == a.DeliveryID && o.WebhookID == a.WebhookID && o.AtMs == a.AtMs
		}) {
			return nil, furrow.Errorf(furrow.ECONFLICT, "This attempt is already recorded.")
		}
		s.attempts = append(s.attempts, attempt{a, s.next()})
		return nil, nil
	})
	return err
}

// Attempts implements furrow.WebhookService, newest first by (AtMs, order
// stored) like the store, a page of furrow.ListLimit(f.Limit) at a time.
func (s *Store) Attempts(ctx context.Context, f furrow.AttemptFilter) ([]furrow.Attempt, *furrow.Cursor, error) {
	res, err := do(ctx, s, "Attempts", []any{f}, func() (page[furrow.Attempt, furrow.Cursor], error) {
		var as []attempt
		for _, a := range s.attempts {
			if a.WebhookID == f.WebhookID {
				as = append(as, a)
			}
		}
		var p page[furrow.Attempt, furrow.Cursor]
		p.rows, p.next = newestPage(as, func(a attempt) furrow.Cursor { return furrow.Cursor{TimestampMs: a.AtMs, Seq: a.seq} },
			f.Before, f.Limit, func(a attempt) furrow.Attempt { return a.Attempt })
		return p, nil
	})
	return res.rows, res.next, err
}

// PruneAttempts implements furrow.WebhookService: like the store, which
// drops whole days, it removes the attempts of the days (UTC) that end at
// or before before.
func (s *Store) PruneAttempts(ctx context.Context, before time.Time) (int64, error) {
	return do(ctx, s, "PruneAttempts", []any{before}, func() (int64, error) {
		cut := furrow.Millis(before.UTC().Truncate(24 * time.Hour))
		n := len(s.attempts)
		s.attempts = slices.DeleteFunc(s.attempts, func(a attempt) bool { return a.AtMs < cut })
		s.pruneTestEvents(furrow.Millis(before))
		return int64(n - len(s.attempts)), nil
	})
}
