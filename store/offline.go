package store

import (
	"context"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/furrowhq/furrow"
)

// MarkOffline marks at most limit devices whose last reading is older than
// now-offlineAfter and that are not yet offline, and stores one
// device.offline event for each, in one transaction. A device stays marked
// until its next reading clears the mark, so each silence is announced
// once. The candidates come from one scan of a partial index, and rows
// locked by a concurrent sweep are skipped.
func (db *DB) MarkOffline(ctx context.Context, offlineAfter time.Duration, limit int) ([]furrow.Event, error) {
	if limit <= 0 {
		return nil, nil
	}
	now := db.nowMs()
	ctx, cancel := boundWrite(ctx)
	defer cancel()
	if err := db.eventParts.ensure(ctx, db, now); err != nil {
		return nil, translate(err, "mark offline", "device")
	}
	var events []furrow.Event
	err := pgx.BeginFunc(ctx, db.pool, func(tx pgx.Tx) error {
		rows, _ := tx.Query(ctx, `
			WITH c AS (`+sweepCandidatesSQL+`)
			UPDATE devices d SET offline_since_ms = $3 FROM c WHERE d.id = c.id
			RETURNING d.id, d.farm_id, d.last_seen_ms`,
			now-offlineAfter.Milliseconds(), limit, now)
		var batch eventRows
		events = events[:0]
		for rows.Next() {
			var dev, farm uuid.UUID
			var lastSeen int64
			if err := rows.Scan(&dev, &farm, &lastSeen); err != nil {
				rows.Close()
				return err
			}
			e, id := offlineEvent(dev, farm, lastSeen, offlineAfter, now)
			batch.add(id, e)
			events = append(events, e)
		}
		if err := rows.Err(); err != nil || len(events) == 0 {
			return err
		}
		_, _, err := insertEvents(ctx, tx, &batch, now)
		return err
	})
	if err != nil {
		return nil, translate(err, "mark offline", "device")
	}
	return events, nil
}

// seenMinute is the granule of devices.seen_minute_ms, the column the
// sweep's index holds instead of last_seen_ms (migration 0009).
const seenMinute = "60000"

// sweepCandidatesSQL selects at most $2 devices whose last reading is older
// than $1 and that are not yet offline, about the oldest first. It reads the
// partial index devices_online_seen_minute: a last reading before $1 has its
// minute before $1 too, and last_seen_ms then settles the rest of that
// minute exactly.
const sweepCandidatesSQL = `SELECT id FROM devices
	WHERE offline_since_ms IS NULL AND seen_minute_ms IS NOT NULL AND seen_minute_ms < $1 AND last_seen_ms < $1
	ORDER BY seen_minute_ms
	LIMIT $2
	FOR UPDATE SKIP LOCKED`

func offlineEvent(dev, farm uuid.UUID, lastSeen int64, after time.Duration, now int64) (furrow.Event, uuid.UUID) {
	id := furrow.NewEventUUID(now)
	return furrow.NewDeviceOfflineEvent(id, farm, furrow.DeviceOfflineData{
		DeviceID: dev, LastSeenMs: lastSeen, OfflineAfterMs: after.Milliseconds(),
	}, now), id
}
