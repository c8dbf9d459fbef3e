package memstore

import (
	"context"
	"slices"

	"github.com/google/uuid"

	"github.com/furrowhq/furrow"
)

// UpdateWebhook implements furrow.WebhookService.
func (s *Store) UpdateWebhook(ctx context.Context, farmID, id uuid.UUID, p furrow.WebhookPatch) (furrow.Webhook, error) {
	return do(ctx, s, "UpdateWebhook", []any{farmID, id, p}, func() (furrow.Webhook, error) {
		w := s.webhook(id)
		if w == nil || w.FarmID != farmID {
			return furrow.Webhook{}, notFound("webhook")
		}
		if p.URL != nil {
			w.URL = *p.URL
		}
		if p.EventTypes != nil {
			w.EventTypes = slices.Clone(p.EventTypes)
		}
		if p.SetMaxPerSecond {
			w.MaxPerSecond = copyRate(p.MaxPerSecond)
		}
		return w.copied(s.nowMs()), nil
	})
}

// copyRate returns a copy of r that shares nothing with it.
func copyRate(r *float64) *float64 {
	if r == nil {
		return nil
	}
	v := *r
	return &v
}
