package store

import (
	"context"
	"errors"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/furrowhq/furrow"
)

// transitionSQL writes a webhook's transition and stores its lifecycle event
// in one statement, so in one transaction: the update happens only while
// the webhook's state_seq is below the transition's ($4), and the event is
// inserted only when it did. The event's id and time derive from the
// transition, so ON CONFLICT DO NOTHING makes even a repeated insert a
// no-op. RETURNING is that of insertEventsSQL, with the farm and the data
// as jsonb stored it (keys reordered), which the worker publishes live.
var transitionSQL = `WITH w AS (
		UPDATE webhooks SET enabled = $2, consecutive_failures = $3,
			state_seq = $4, state_changed_at_ms = $5, state_cause = $6
		WHERE id = $1 AND state_seq < $4
		RETURNING farm_id)
	INSERT INTO events (id, type, farm_id, occurred_at_ms, data, dispatched_at_ms)
	SELECT $7, $8, w.farm_id, $5, $9::jsonb, ` + dispatchedAt("w.farm_id", "$8::text", "$10::bigint") + `
	FROM w
	ON CONFLICT DO NOTHING
	RETURNING farm_id, dispatched_at_ms IS NULL, data`

// TransitionWebhook writes t and stores its lifecycle event in one
// transaction, unless the webhook's state_seq is already t.Seq or more;
// ENOTFOUND if the webhook is gone.
func (db *DB) TransitionWebhook(ctx context.Context, t furrow.WebhookTransition) (furrow.OutboxEvent, bool, error) {
	e := t.Event(uuid.Nil) // The farm comes from the row.
	id, err := furrow.ParseEventID(e.ID)
	if err != nil {
		return furrow.OutboxEvent{}, false, err
	}
	// The event's day may be past the partitions made ahead when a retried
	// transition arrives late, and a late pending event must lower the
	// outbox floor, as insertEvents does, in the same transaction.
	if err := db.eventParts.ensure(ctx, db, t.AtMs); err != nil {
		return furrow.OutboxEvent{}, false, translate(err, "transition webhook", "webhook")
	}
	now := db.nowMs()
	var pending bool
	ctx, cancel := boundWrite(ctx)
	defer cancel()
	err = pgx.BeginFunc(ctx, db.pool, func(tx pgx.Tx) error {
		err := tx.QueryRow(ctx, transitionSQL, t.WebhookID, t.Enabled, t.Failures, t.Seq, t.AtMs, t.Cause(),
			id, e.Type, string(e.Data), now).Scan(&e.FarmID, &pending, &e.Data)
		if err == nil && pending {
			err = keepFloor(ctx, tx, t.AtMs, now)
		}
		return err
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return furrow.OutboxEvent{}, false, db.webhookExists(ctx, t)
	}
	if err != nil {
		return furrow.OutboxEvent{}, false, translate(err, "transition webhook", "webhook")
	}
	return furrow.OutboxEvent{Event: e, Pending: pending}, true, nil
}

// webhookExists tells why a transition wrote nothing: nil when the webhook
// is there (the transition was written before), ENOTFOUND when it is gone.
func (db *DB) webhookExists(ctx context.Context, t furrow.WebhookTransition) error {
	var one int
	err := db.pool.QueryRow(ctx, "SELECT 1 FROM webhooks WHERE id = $1", t.WebhookID).Scan(&one)
	return translate(err, "transition webhook", "webhook")
}
