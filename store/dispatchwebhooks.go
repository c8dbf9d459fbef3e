package store

import (
	"context"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/furrowhq/furrow"
)

// DispatchWebhooks lists a farm's webhooks, oldest first, with only what
// the outbox dispatcher reads of them: ID, FarmID, URL, Enabled,
// EventTypes and MaxPerSecond. It reads no secret, so it opens none: a
// secret this process cannot open (sealed with a key missing from its
// ring) fails the deliveries to its own webhook, in their attempts, not
// the dispatch of its farm's events to every webhook, and a dispatch pass
// decrypts nothing.
func (db *DB) DispatchWebhooks(ctx context.Context, farmID uuid.UUID) ([]furrow.Webhook, error) {
	rows, _ := db.pool.Query(ctx, `SELECT id, farm_id, url, enabled, event_types, max_per_second
		FROM webhooks WHERE farm_id = $1 ORDER BY seq`, farmID)
	ws, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (furrow.Webhook, error) {
		var w furrow.Webhook
		err := r.Scan(&w.ID, &w.FarmID, &w.URL, &w.Enabled, &w.EventTypes, &w.MaxPerSecond)
		if w.EventTypes == nil {
			w.EventTypes = []string{}
		}
		return w, err
	})
	if err != nil {
		return nil, translate(err, "list webhooks for dispatch", "farm")
	}
	return ws, nil
}
