package memstore

import (
	"context"
	"maps"

	"github.com/google/uuid"

	"github.com/furrowhq/furrow"
)

// AddTestEvent implements furrow.WebhookService.
func (s *Store) AddTestEvent(ctx context.Context, webhookID uuid.UUID, e furrow.Event) error {
	_, err := do(ctx, s, "AddTestEvent", []any{webhookID, e}, func() (none, error) {
		if _, err := furrow.ParseEventID(e.ID); err != nil {
			return nil, err
		}
		w := s.webhook(webhookID)
		if w == nil {
			return nil, notFound("webhook")
		}
		if s.testEvents == nil {
			s.testEvents = map[string]furrow.Event{}
		}
		e.Type, e.FarmID = furrow.EventWebhookTest, w.FarmID
		s.testEvents[e.ID] = e
		return nil, nil
	})
	return err
}

// pruneTestEvents removes the test events that occurred before beforeMs;
// the caller holds the lock.
func (s *Store) pruneTestEvents(beforeMs int64) {
	maps.DeleteFunc(s.testEvents, func(_ string, e furrow.Event) bool { return e.OccurredAtMs < beforeMs })
}

// AttemptParts implements furrow.WebhookService.
func (s *Store) AttemptParts(ctx context.Context, webhookID uuid.UUID, eventID string, test bool) (furrow.AttemptParts, error) {
	return do(ctx, s, "AttemptParts", []any{webhookID, eventID, test}, func() (furrow.AttemptParts, error) {
		var p furrow.AttemptParts
		if _, err := furrow.ParseEventID(eventID); err != nil {
			return p, err
		}
		if w := s.webhook(webhookID); w != nil {
			p.Webhook, p.WebhookFound = w.copied(s.nowMs()), true
		}
		if test {
			p.Event, p.EventFound = s.testEvents[eventID]
		} else if e, ok := s.eventIDs[eventID]; ok {
			p.Event, p.EventFound = e.copied(), true
		}
		return p, nil
	})
}
