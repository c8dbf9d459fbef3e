package store

import (
	"context"

	"github.com/google/uuid"

	"github.com/furrowhq/furrow"
)

// UpdateWebhook applies p to the farm's webhook in one statement and
// returns the webhook as stored; ENOTFOUND if the farm has no such webhook.
// A secret of the answer that does not open here fails it with nothing
// written (writeWebhook).
func (db *DB) UpdateWebhook(ctx context.Context, farmID, id uuid.UUID, p furrow.WebhookPatch) (furrow.Webhook, error) {
	w, err := db.writeWebhook(ctx, `UPDATE webhooks SET
		url = coalesce($3, url),
		event_types = coalesce($4, event_types),
		max_per_second = CASE WHEN $5 THEN $6 ELSE max_per_second END
		WHERE id = $1 AND farm_id = $2 RETURNING `+webhookColumns,
		id, farmID, p.URL, p.EventTypes, p.SetMaxPerSecond, p.MaxPerSecond)
	return w, translate(err, "update webhook", "webhook")
}
