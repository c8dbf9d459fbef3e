package store

import (
	"cmp"
	"context"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/furrowhq/furrow"
)

// ClaimEvents leases up to limit undispatched events whose lease is free or
// expired, oldest first. Rows locked by another claimer are skipped, so two
// dispatchers never receive the same event while its lease lasts.
func (db *DB) ClaimEvents(ctx context.Context, limit int, lease time.Duration) ([]furrow.Event, error) {
	if limit <= 0 {
		return nil, nil
	}
	now := db.nowMs()
	rows, _ := db.pool.Query(ctx, `
		WITH c AS (
			SELECT id FROM events
			WHERE dispatched_at_ms IS NULL AND (lease_until_ms IS NULL OR lease_until_ms <= $1)
			ORDER BY occurred_at_ms, seq
			LIMIT $2
			FOR UPDATE SKIP LOCKED)
		UPDATE events e SET lease_until_ms = $3 FROM c WHERE e.id = c.id
		RETURNING e.seq, e.id, e.type, e.farm_id, e.occurred_at_ms, e.data`,
		now, limit, now+lease.Milliseconds())
	type claimed struct {
		seq int64
		e   furrow.Event
	}
	var out []claimed
	for rows.Next() {
		var c claimed
		var id uuid.UUID
		var data []byte
		if err := rows.Scan(&c.seq, &id, &c.e.Type, &c.e.FarmID, &c.e.OccurredAtMs, &data); err != nil {
			rows.Close()
			return nil, translate(err, "claim events", "event")
		}
		c.e.ID, c.e.Data = furrow.EventID(id), data
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, translate(err, "claim events", "event")
	}
	// RETURNING has no order of its own.
	slices.SortFunc(out, func(a, b claimed) int {
		return cmp.Or(cmp.Compare(a.e.OccurredAtMs, b.e.OccurredAtMs), cmp.Compare(a.seq, b.seq))
	})
	events := make([]furrow.Event, len(out))
	for i, c := range out {
		events[i] = c.e
	}
	return events, nil
}

// MarkDispatched records that the events were handed on; they are never
// claimed again. A malformed id is EINVALID; unknown ids are ignored.
func (db *DB) MarkDispatched(ctx context.Context, ids []string) error {
	us := make([]uuid.UUID, 0, len(ids))
	for _, id := range ids {
		u, err := furrow.ParseEventID(id)
		if err != nil {
			return err
		}
		us = append(us, u)
	}
	if len(us) == 0 {
		return nil
	}
	_, err := db.pool.Exec(ctx,
		"UPDATE events SET dispatched_at_ms = $1, lease_until_ms = NULL WHERE id = ANY($2) AND dispatched_at_ms IS NULL",
		db.nowMs(), us)
	return translate(err, "mark dispatched", "event")
}

// pruneBatch bounds the rows one retention statement deletes, so that no
// statement holds locks or WAL for long.
const pruneBatch = 5000

// PruneEvents deletes dispatched events that occurred before before, in
// batches of pruneBatch rows, and returns how many it deleted. Undispatched
// events are kept whatever their age.
func (db *DB) PruneEvents(ctx context.Context, before time.Time) (int64, error) {
	var total int64
	for {
		tag, err := db.pool.Exec(ctx, `DELETE FROM events WHERE id IN (
			SELECT id FROM events WHERE dispatched_at_ms IS NOT NULL AND occurred_at_ms < $1 LIMIT $2)`,
			before.UnixMilli(), pruneBatch)
		if err != nil {
			return total, translate(err, "prune events", "event")
		}
		total += tag.RowsAffected()
		if tag.RowsAffected() < pruneBatch {
			return total, nil
		}
	}
}
