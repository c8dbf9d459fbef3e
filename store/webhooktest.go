package store

import (
	"context"

	"github.com/google/uuid"

	"github.com/furrowhq/furrow"
)

// AddTestEvent stores e, a webhook.test event, addressed to the webhook
// only; an unknown webhook is ENOTFOUND, a malformed id EINVALID.
func (db *DB) AddTestEvent(ctx context.Context, webhookID uuid.UUID, e furrow.Event) error {
	id, err := furrow.ParseEventID(e.ID)
	if err != nil {
		return err
	}
	tag, err := db.pool.Exec(ctx, `INSERT INTO webhook_test_events (id, webhook_id, farm_id, occurred_at_ms, data)
		SELECT $1, w.id, w.farm_id, $3, $4::jsonb FROM webhooks w WHERE w.id = $2`,
		id, webhookID, e.OccurredAtMs, string(e.Data))
	if err != nil {
		return translate(err, "add test event", "event")
	}
	if tag.RowsAffected() == 0 {
		return furrow.Errorf(furrow.ENOTFOUND, "The webhook was not found.")
	}
	return nil
}

// testEventSQL reads the webhook.test event $1.
const testEventSQL = `SELECT id, '` + furrow.EventWebhookTest + `', farm_id, occurred_at_ms, data
		FROM webhook_test_events WHERE id = $1`

// pruneTestEvents removes the test events that occurred before beforeMs.
func (db *DB) pruneTestEvents(ctx context.Context, beforeMs int64) (int64, error) {
	tag, err := db.pool.Exec(ctx, "DELETE FROM webhook_test_events WHERE occurred_at_ms < $1", beforeMs)
	if err != nil {
		return 0, translate(err, "prune test events", "event")
	}
	return tag.RowsAffected(), nil
}
