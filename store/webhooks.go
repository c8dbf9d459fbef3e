package store

import (
	"context"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/furrowhq/furrow"
)

const webhookColumns = "id, farm_id, url, secret, secret_key_id, enabled, consecutive_failures, event_types, " +
	"secret_version, previous_secret, previous_secret_key_id, coalesce(previous_secret_until_ms, 0), " +
	"state_seq, coalesce(state_changed_at_ms, 0), coalesce(state_cause, ''), max_per_second"

// scanWebhook reads a row of webhookColumns and opens its secrets. A
// previous secret whose overlap has ended by the store's clock is left
// out, unopened, and expired reports it so that the caller clears it.
func (db *DB) scanWebhook(row pgx.Row) (w furrow.Webhook, expired bool, err error) {
	var keyID, previous, previousKeyID *string
	err = row.Scan(&w.ID, &w.FarmID, &w.URL, &w.Secret, &keyID, &w.Enabled, &w.ConsecutiveFailures, &w.EventTypes,
		&w.SecretVersion, &previous, &previousKeyID, &w.PreviousSecretUntilMs,
		&w.StateSeq, &w.StateChangedAtMs, &w.StateCause, &w.MaxPerSecond)
	if w.EventTypes == nil {
		w.EventTypes = []string{}
	}
	if err != nil {
		return w, false, err
	}
	if w.Secret, err = db.openSecret(w.ID, w.Secret, keyID); err != nil {
		return w, false, err
	}
	switch {
	case previous == nil:
	case w.PreviousSecretUntilMs <= db.nowMs():
		w.PreviousSecretUntilMs, expired = 0, true
	default:
		w.PreviousSecret, err = db.openSecret(w.ID, *previous, previousKeyID)
	}
	return w, expired, err
}

// readWebhook reads one webhook by query and clears its previous secret
// when that has expired.
func (db *DB) readWebhook(ctx context.Context, query string, args ...any) (furrow.Webhook, error) {
	w, expired, err := db.scanWebhook(db.pool.QueryRow(ctx, query, args...))
	return db.clearIfExpired(ctx, w, expired, err)
}

// writeWebhook is readWebhook for a query that writes the row it returns.
// The write commits only once the row's secrets opened: a process that
// cannot answer (it lacks a key that sealed one) leaves the webhook as it
// was, rather than saving a change, a new secret above all, that nobody
// was shown and that a retry would build on.
func (db *DB) writeWebhook(ctx context.Context, query string, args ...any) (furrow.Webhook, error) {
	var w furrow.Webhook
	var expired bool
	err := pgx.BeginFunc(ctx, db.pool, func(tx pgx.Tx) (err error) {
		w, expired, err = db.scanWebhook(tx.QueryRow(ctx, query, args...))
		return err
	})
	// Cleared after the commit: until then the transaction holds the row.
	return db.clearIfExpired(ctx, w, expired, err)
}

// clearIfExpired passes on a scanned webhook, clearing its previous secret
// first when it was read and that has expired.
func (db *DB) clearIfExpired(ctx context.Context, w furrow.Webhook, expired bool, err error) (furrow.Webhook, error) {
	if err == nil && expired {
		db.clearExpired(ctx, []uuid.UUID{w.ID})
	}
	return w, err
}

// clearExpired removes the previous secrets of the webhooks ids whose
// overlap has ended, so that no expired secret stays stored. Reads call it
// once they saw one; a failure is logged and left to the next read, which
// leaves the expired secret out all the same.
func (db *DB) clearExpired(ctx context.Context, ids []uuid.UUID) {
	_, err := db.pool.Exec(ctx, `UPDATE webhooks SET previous_secret = NULL, previous_secret_key_id = NULL,
		previous_secret_until_ms = NULL WHERE id = ANY($1) AND previous_secret_until_ms <= $2`, ids, db.nowMs())
	if err != nil {
		db.log.WarnContext(ctx, "clearing expired previous webhook secrets failed", "webhooks", len(ids), "err", err)
	}
}

// CreateWebhook stores w as given (a nil ID gets a new one; no transition
// yet) and returns it; nil or empty EventTypes means the default types. An
// unknown farm is ENOTFOUND, a taken id or a farm that has
// MaxWebhooksPerFarm already ECONFLICT.
func (db *DB) CreateWebhook(ctx context.Context, w furrow.Webhook) (furrow.Webhook, error) {
	if w.ID == uuid.Nil {
		w.ID = uuid.New()
	}
	w.StateSeq, w.StateChangedAtMs, w.StateCause = 0, 0, ""
	if w.EventTypes == nil {
		w.EventTypes = []string{}
	}
	w.SecretVersion, w.PreviousSecret, w.PreviousSecretUntilMs = 1, "", 0
	stored, keyID := db.sealSecret(w.ID, w.Secret)
	err := pgx.BeginFunc(ctx, db.pool, func(tx pgx.Tx) error {
		// The farm's row, locked against other creations (not against the
		// key-share locks of rows that refer to it), makes the count exact;
		// the insert counts in a statement of its own, after the lock.
		var one int
		if err := tx.QueryRow(ctx, "SELECT 1 FROM farms WHERE id = $1 FOR NO KEY UPDATE", w.FarmID).Scan(&one); err != nil {
			return translate(err, "create webhook", "farm")
		}
		tag, err := tx.Exec(ctx, `INSERT INTO webhooks
			(id, farm_id, url, secret, secret_key_id, enabled, consecutive_failures, event_types, created_at_ms,
			max_per_second)
			SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9, $10
			WHERE (SELECT count(*) FROM webhooks WHERE farm_id = $2) < $11`,
			w.ID, w.FarmID, w.URL, stored, keyID, w.Enabled, w.ConsecutiveFailures, w.EventTypes, db.nowMs(),
			w.MaxPerSecond, furrow.MaxWebhooksPerFarm)
		if err != nil {
			return translate(err, "create webhook", "webhook")
		}
		if tag.RowsAffected() == 0 {
			return furrow.ErrTooManyWebhooks()
		}
		return nil
	})
	if err != nil {
		return furrow.Webhook{}, err
	}
	return w, nil
}

// Webhook returns the farm's webhook; ENOTFOUND if the farm has no such
// webhook.
func (db *DB) Webhook(ctx context.Context, farmID, id uuid.UUID) (furrow.Webhook, error) {
	w, err := db.readWebhook(ctx, "SELECT "+webhookColumns+" FROM webhooks WHERE id = $1 AND farm_id = $2", id, farmID)
	return w, translate(err, "webhook", "webhook")
}

// WebhookByID returns a webhook whatever its farm; ENOTFOUND if none.
func (db *DB) WebhookByID(ctx context.Context, id uuid.UUID) (furrow.Webhook, error) {
	w, err := db.readWebhook(ctx, webhookByIDSQL, id)
	return w, translate(err, "webhook", "webhook")
}

// webhookByIDSQL reads the webhook $1 whatever its farm.
const webhookByIDSQL = "SELECT " + webhookColumns + " FROM webhooks WHERE id = $1"

// Webhooks lists a farm's webhooks, oldest first.
func (db *DB) Webhooks(ctx context.Context, farmID uuid.UUID) ([]furrow.Webhook, error) {
	rows, _ := db.pool.Query(ctx,
		"SELECT "+webhookColumns+" FROM webhooks WHERE farm_id = $1 ORDER BY seq", farmID)
	var expired []uuid.UUID
	ws, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (furrow.Webhook, error) {
		w, gone, err := db.scanWebhook(r)
		if gone {
			expired = append(expired, w.ID)
		}
		return w, err
	})
	if err != nil {
		return nil, translate(err, "list webhooks", "farm")
	}
	if len(expired) > 0 {
		db.clearExpired(ctx, expired)
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

// RotateWebhookSecret makes secret the webhook's current secret, sealed
// like every secret, in one statement: the secret it replaces moves,
// still sealed, to previous_secret (the shared binding of a webhook's
// secret columns allows it) until the store's now plus overlap, or is
// dropped when overlap is not above zero. ENOTFOUND if the farm has no
// such webhook. A secret of the answer that does not open here fails it
// with nothing written (writeWebhook).
func (db *DB) RotateWebhookSecret(ctx context.Context, farmID, id uuid.UUID, secret string, overlap time.Duration) (furrow.Webhook, error) {
	stored, keyID := db.sealSecret(id, secret)
	var until *int64
	if overlap > 0 {
		u := db.nowMs() + overlap.Milliseconds()
		until = &u
	}
	w, err := db.writeWebhook(ctx, `UPDATE webhooks SET
		previous_secret = CASE WHEN @until::bigint IS NULL THEN NULL ELSE secret END,
		previous_secret_key_id = CASE WHEN @until::bigint IS NULL THEN NULL ELSE secret_key_id END,
		previous_secret_until_ms = @until,
		secret = @secret, secret_key_id = @key, secret_version = secret_version + 1
		WHERE id = @id AND farm_id = @farm RETURNING `+webhookColumns,
		pgx.NamedArgs{"until": until, "secret": stored, "key": keyID, "id": id, "farm": farmID})
	return w, translate(err, "rotate webhook secret", "webhook")
}
