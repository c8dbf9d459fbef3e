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
// ENOTFOUND if the webhook is gone. For a transition made by a failed
// chain that ended at failedAtMs (0: none) it first locks the webhook's
// row in the same transaction and, unless t was written already, writes
// nothing and returns superseded when a delivery began after failedAtMs
// (see SetWebhookState).
func (db *DB) TransitionWebhook(ctx context.Context, t furrow.WebhookTransition, failedAtMs int64) (
	ev furrow.OutboxEvent, written, superseded bool, err error) {
	e := t.Event(uuid.Nil) // The farm comes from the row.
	id, err := furrow.ParseEventID(e.ID)
	if err != nil {
		return furrow.OutboxEvent{}, false, false, err
	}
	// The event's day may be past the partitions made ahead when a retried
	// transition arrives late, and a late pending event must lower the
	// outbox floor, as insertEvents does, in the same transaction.
	if err := db.eventParts.ensure(ctx, db, t.AtMs); err != nil {
		return furrow.OutboxEvent{}, false, false, translate(err, "transition webhook", "webhook")
	}
	now := db.nowMs()
	var pending bool
	ctx, cancel := boundWrite(ctx)
	defer cancel()
	err = pgx.BeginFunc(ctx, db.pool, func(tx pgx.Tx) error {
		if failedAtMs != 0 {
			// A transition written already (its answer lost, the call
			// retried) stays written: transitionSQL then finds it.
			seq, err := lockWebhook(ctx, tx, t.WebhookID)
			if err == nil && seq < t.Seq {
				superseded, err = deliveredSince(ctx, tx, t.WebhookID, failedAtMs)
			}
			if err != nil || superseded {
				return err
			}
		}
		err := tx.QueryRow(ctx, transitionSQL, t.WebhookID, t.Enabled, t.Failures, t.Seq, t.AtMs, t.Cause(),
			id, e.Type, string(e.Data), now).Scan(&e.FarmID, &pending, &e.Data)
		if err == nil && pending {
			err = keepFloor(ctx, tx, t.AtMs, now)
		}
		return err
	})
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return furrow.OutboxEvent{}, false, false, db.webhookExists(ctx, t)
	case err != nil:
		return furrow.OutboxEvent{}, false, false, translate(err, "transition webhook", "webhook")
	case superseded:
		return furrow.OutboxEvent{}, false, true, nil
	}
	return furrow.OutboxEvent{Event: e, Pending: pending}, true, false, nil
}

// SetWebhookState writes the enabled flag and failure counter; ENOTFOUND
// if the webhook is gone. For a change made by a failed chain that ended
// at failedAtMs (0: none, one plain UPDATE) it writes nothing, and returns
// superseded, when an attempt of the webhook that began after failedAtMs
// was answered 2xx (deliveredAfterSQL), for the count restarted after that
// chain.
//
// The check and the write are one transaction that locks the webhook's
// row FOR UPDATE first and then checks in a statement of its own, whose
// snapshot, under READ COMMITTED, is taken after the lock was granted.
// A delivery's row is inserted by a statement that reads the counter
// FOR KEY SHARE (AddDeliveredAttempt), which conflicts with FOR UPDATE,
// so one of the two waits for the other to commit:
//   - the insert locked first: this lock waits for its commit, and the
//     check sees its row; the chain is superseded, and the delivery,
//     having read the count of before, need not report;
//   - this lock came first: the insert's read waits for this commit and
//     returns the count written here, above 0, so the delivery reports
//     its chain and the webhook's workflow restarts the count.
//
// A delivery that began before the chain ended supersedes nothing: the two
// overlap, and the count ends as the order of their locks has it.
//
// Checked apart, a delivery still waiting for its answer had no row to
// find, and had read the count of before: the failed chain stayed counted
// after a delivered one.
func (db *DB) SetWebhookState(ctx context.Context, id uuid.UUID, enabled bool, failures int, failedAtMs int64) (bool, error) {
	const update = "UPDATE webhooks SET enabled = $1, consecutive_failures = $2 WHERE id = $3"
	if failedAtMs == 0 {
		tag, err := db.pool.Exec(ctx, update, enabled, failures, id)
		if err == nil && tag.RowsAffected() == 0 {
			return false, furrow.Errorf(furrow.ENOTFOUND, "The webhook was not found.")
		}
		return false, translate(err, "set webhook state", "webhook")
	}
	var superseded bool
	ctx, cancel := context.WithTimeout(ctx, writeTimeout) // the row stays locked until it ends
	defer cancel()
	err := pgx.BeginFunc(ctx, db.pool, func(tx pgx.Tx) error {
		_, err := lockWebhook(ctx, tx, id)
		if err == nil {
			superseded, err = deliveredSince(ctx, tx, id, failedAtMs)
		}
		if err != nil || superseded {
			return err
		}
		_, err = tx.Exec(ctx, update, enabled, failures, id)
		return err
	})
	return superseded, translate(err, "set webhook state", "webhook")
}

// lockWebhook locks the webhook's row FOR UPDATE, which a delivery's read
// of the counter waits for (countedAttemptSQL), and returns its
// state_seq; pgx.ErrNoRows when it is gone.
func lockWebhook(ctx context.Context, tx pgx.Tx, id uuid.UUID) (int64, error) {
	var seq int64
	err := tx.QueryRow(ctx, "SELECT state_seq FROM webhooks WHERE id = $1 FOR UPDATE", id).Scan(&seq)
	return seq, err
}

// deliveredSince runs deliveredAfterSQL in tx, in a statement of its own.
func deliveredSince(ctx context.Context, tx pgx.Tx, id uuid.UUID, afterMs int64) (bool, error) {
	var found bool
	err := tx.QueryRow(ctx, deliveredAfterSQL, id, afterMs).Scan(&found)
	return found, err
}

// webhookExists tells why a transition wrote nothing: nil when the webhook
// is there (the transition was written before), ENOTFOUND when it is gone.
func (db *DB) webhookExists(ctx context.Context, t furrow.WebhookTransition) error {
	var one int
	err := db.pool.QueryRow(ctx, "SELECT 1 FROM webhooks WHERE id = $1", t.WebhookID).Scan(&one)
	return translate(err, "transition webhook", "webhook")
}
