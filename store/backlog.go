package store

import "context"

// OutboxBacklog returns how many events wait for the dispatcher and when
// the oldest of them occurred (Unix ms, 0 when none). The partial index of
// undispatched events answers both, in the partitions from the outbox
// floor on, so the cost follows the backlog, not the table.
func (db *DB) OutboxBacklog(ctx context.Context) (pending, oldestMs int64, err error) {
	floor, err := db.outboxFloor(ctx)
	if err == nil {
		err = db.pool.QueryRow(ctx, backlogSQL, floor).Scan(&pending, &oldestMs)
	}
	return pending, oldestMs, translate(err, "outbox backlog", "event")
}

// backlogSQL counts the undispatched events from the outbox floor $1 on.
const backlogSQL = `SELECT count(*), coalesce(min(occurred_at_ms), 0) FROM events
	WHERE dispatched_at_ms IS NULL AND occurred_at_ms >= $1`
