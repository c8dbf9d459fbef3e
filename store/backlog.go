package store

import "context"

// OutboxBacklog returns how many events wait for the dispatcher and when
// the oldest of them not held for a webhook's rate occurred (Unix ms, 0
// when none): a held event waits by design, and must not read as a stuck
// dispatcher. The partial index of undispatched events answers both, in
// the partitions from the outbox floor on, so the cost follows the
// backlog, not the table.
func (db *DB) OutboxBacklog(ctx context.Context) (pending, oldestMs int64, err error) {
	floor, err := db.outboxFloor(ctx)
	if err == nil {
		err = db.pool.QueryRow(ctx, backlogSQL, floor, db.nowMs()).Scan(&pending, &oldestMs)
	}
	return pending, oldestMs, translate(err, "outbox backlog", "event")
}

// backlogSQL counts the undispatched events from the outbox floor $1 on,
// and walks them oldest first to the first not held at $2 (see
// DB.HoldEvents).
const backlogSQL = `SELECT
	(SELECT count(*) FROM events WHERE dispatched_at_ms IS NULL AND occurred_at_ms >= $1),
	coalesce((SELECT occurred_at_ms FROM events
		WHERE dispatched_at_ms IS NULL AND occurred_at_ms >= $1
			AND (lease_owner IS NOT NULL OR lease_until_ms IS NULL OR lease_until_ms <= $2)
		ORDER BY occurred_at_ms, seq LIMIT 1), 0)`
