package store

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
)

// seenMinuteBatch is how many devices a statement of fillSeenMinute looks
// at. Each is its own transaction, so a device's row is locked for
// milliseconds, while readings update it.
const seenMinuteBatch = 1000

// fillSeenMinute sets seen_minute_ms from last_seen_ms wherever a device
// has reported and has none: migration 0009 adds the column empty, and an
// older release, still serving during an upgrade, stores readings without
// it. It walks the devices in id order (the order in which readings lock
// them) from the first such device, seenMinuteBatch a statement; a run
// stopped partway is finished by the next.
func fillSeenMinute(ctx context.Context, conn *pgx.Conn, p lockPatience, log *slog.Logger) error {
	var next pgtype.UUID
	err := conn.QueryRow(ctx, `SELECT id FROM devices WHERE `+seenMinuteDue+` ORDER BY id LIMIT 1`).Scan(&next)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("store: migration 0009: %w", err)
	}
	log.Info("filling devices' seen_minute_ms (migration 0009)")
	for next.Valid {
		err := patiently(ctx, p, "migration 0009: filling seen_minute_ms", func() (err error) {
			next, err = fillSeenMinuteFrom(ctx, conn, next, p.timeout)
			return err
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// fillSeenMinuteFrom runs fillSeenMinuteSQL from the device from, in a
// transaction of its own. It returns the device to go on from, or an
// invalid id past the last one; from on error.
func fillSeenMinuteFrom(ctx context.Context, conn *pgx.Conn, from pgtype.UUID, timeout time.Duration) (pgtype.UUID, error) {
	var next pgtype.UUID // stays invalid past the last device
	err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		if err := setLockTimeout(ctx, tx, timeout); err != nil {
			return err
		}
		err := tx.QueryRow(ctx, fillSeenMinuteSQL, from, seenMinuteBatch).Scan(&next)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		return err
	})
	if err != nil {
		return from, err
	}
	return next, nil
}

// seenMinuteDue selects the devices fillSeenMinute fills.
const seenMinuteDue = "seen_minute_ms IS NULL AND last_seen_ms IS NOT NULL"

// fillSeenMinuteSQL fills the devices due among $2 from $1 on, locking them
// in id order, and returns the id after them, if any.
const fillSeenMinuteSQL = `
WITH b AS (SELECT id FROM devices WHERE id >= $1 ORDER BY id LIMIT $2 + 1),
due AS (
	SELECT id FROM devices WHERE id IN (SELECT id FROM b ORDER BY id LIMIT $2) AND ` + seenMinuteDue + `
	ORDER BY id FOR UPDATE),
filled AS (
	UPDATE devices d SET seen_minute_ms = d.last_seen_ms - d.last_seen_ms % ` + seenMinute + `
	FROM due WHERE d.id = due.id)
SELECT id FROM b ORDER BY id OFFSET $2`
