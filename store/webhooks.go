package store

import (
	"context"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/furrowhq/furrow"
)

const webhookColumns = "id, farm_id, url, secret, secret_key_id, enabled, consecutive_failures, event_types" +
	", max_per_second"

// scanWebhook reads a row of webhookColumns and opens its secret.
func (db *DB) scanWebhook(row pgx.Row) (furrow.Webhook, error) {
	var w furrow.Webhook
	var keyID *string
	err := row.Scan(&w.ID, &w.FarmID, &w.URL, &w.Secret, &keyID, &w.Enabled, &w.ConsecutiveFailures, &w.EventTypes,
		&w.MaxPerSecond)
	if w.EventTypes == nil {
		w.EventTypes = []string{}
	}
	if err != nil {
		return w, err
	}
	w.Secret, err = db.openSecret(w.ID, w.Secret, keyID)
	return w, err
}

// CreateWebhook stores w as given (a nil ID gets a new one) and returns it;
// nil or empty EventTypes means every type. An unknown farm is ENOTFOUND,
// a taken id ECONFLICT.
func (db *DB) CreateWebhook(ctx context.Context, w furrow.Webhook) (furrow.Webhook, error) {
	if w.ID == uuid.Nil {
		w.ID = uuid.New()
	}
	if w.EventTypes == nil {
		w.EventTypes = []string{}
	}
	stored, keyID := db.sealSecret(w.ID, w.Secret)
	_, err := db.pool.Exec(ctx, `INSERT INTO webhooks
		(id, farm_id, url, secret, secret_key_id, enabled, consecutive_failures, event_types, created_at_ms,
		max_per_second)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
		w.ID, w.FarmID, w.URL, stored, keyID, w.Enabled, w.ConsecutiveFailures, w.EventTypes, db.nowMs(),
		w.MaxPerSecond)
	if err != nil {
		return furrow.Webhook{}, translate(err, "create webhook", "webhook")
	}
	return w, nil
}

// Webhook returns the farm's webhook; ENOTFOUND if the farm has no such
// webhook.
func (db *DB) Webhook(ctx context.Context, farmID, id uuid.UUID) (furrow.Webhook, error) {
	w, err := db.scanWebhook(db.pool.QueryRow(ctx,
		"SELECT "+webhookColumns+" FROM webhooks WHERE id = $1 AND farm_id = $2", id, farmID))
	return w, translate(err, "webhook", "webhook")
}

// WebhookByID returns a webhook whatever its farm; ENOTFOUND if none.
func (db *DB) WebhookByID(ctx context.Context, id uuid.UUID) (furrow.Webhook, error) {
	w, err := db.scanWebhook(db.pool.QueryRow(ctx, "SELECT "+webhookColumns+" FROM webhooks WHERE id = $1", id))
	return w, translate(err, "webhook", "webhook")
}

// Webhooks lists a farm's webhooks, oldest first.
func (db *DB) Webhooks(ctx context.Context, farmID uuid.UUID) ([]furrow.Webhook, error) {
	rows, _ := db.pool.Query(ctx,
		"SELECT "+webhookColumns+" FROM webhooks WHERE farm_id = $1 ORDER BY seq", farmID)
	ws, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (furrow.Webhook, error) { return db.scanWebhook(r) })
	if err != nil {
		return nil, translate(err, "list webhooks", "farm")
	}
	return ws, nil
}

// DeleteWebhook removes the farm's webhook; ENOTFOUND if there is none. Its
// attempts stay in the delivery log until retention removes them.
func (db *DB) DeleteWebhook(ctx context.Context, farmID, id uuid.UUID) error {
	tag, err := db.pool.Exec(ctx, "DELETE FROM webhooks WHERE id = $1 AND farm_id = $2", id, farmID)
	if err != nil {
		return translate(err, "delete webhook", "webhook")
	}
	if tag.RowsAffected() == 0 {
		return furrow.Errorf(furrow.ENOTFOUND, "The webhook was not found.")
	}
	return nil
}

// SetWebhookState writes the enabled flag and failure counter; ENOTFOUND if
// the webhook is gone.
func (db *DB) SetWebhookState(ctx context.Context, id uuid.UUID, enabled bool, failures int) error {
	tag, err := db.pool.Exec(ctx,
		"UPDATE webhooks SET enabled = $1, consecutive_failures = $2 WHERE id = $3", enabled, failures, id)
	if err != nil {
		return translate(err, "set webhook state", "webhook")
	}
	if tag.RowsAffected() == 0 {
		return furrow.Errorf(furrow.ENOTFOUND, "The webhook was not found.")
	}
	return nil
}
