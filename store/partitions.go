package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// partitionsAhead is how many days of delivery-log partitions exist ahead
// of today, so that inserts rarely create one.
const partitionsAhead = 3

// partitionLockKey serializes partition DDL across processes.
const partitionLockKey = 0x66757273

const partitionPrefix = "delivery_attempts_p"

// partitionName is the table holding the attempts of day (UTC).
func partitionName(day time.Time) string {
	return partitionPrefix + day.UTC().Format("20060102")
}

func utcDay(t time.Time) time.Time {
	y, m, d := t.UTC().Date()
	return time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
}

// ensurePartitions creates the day partitions of the delivery log for
// days days from the day of from, those missing only.
func (db *DB) ensurePartitions(ctx context.Context, from time.Time, days int) error {
	err := pgx.BeginFunc(ctx, db.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", partitionLockKey); err != nil {
			return err
		}
		for i := range days {
			day := utcDay(from).AddDate(0, 0, i)
			// Names and bounds are computed here, never taken from input.
			sql := fmt.Sprintf(
				"CREATE TABLE IF NOT EXISTS %s PARTITION OF delivery_attempts FOR VALUES FROM (%d) TO (%d)",
				partitionName(day), day.UnixMilli(), day.AddDate(0, 0, 1).UnixMilli())
			if _, err := tx.Exec(ctx, sql); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("store: create attempts partitions: %w", err)
	}
	return nil
}

// partitionDays returns the days of the existing delivery-log partitions.
func (db *DB) partitionDays(ctx context.Context) ([]time.Time, error) {
	rows, _ := db.pool.Query(ctx, `SELECT c.relname FROM pg_inherits i
		JOIN pg_class c ON c.oid = i.inhrelid
		WHERE i.inhparent = 'delivery_attempts'::regclass`)
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("store: list attempts partitions: %w", err)
	}
	var days []time.Time
	for _, n := range names {
		if len(n) <= len(partitionPrefix) {
			continue
		}
		day, err := time.Parse("20060102", n[len(partitionPrefix):])
		if err == nil {
			days = append(days, day)
		}
	}
	return days, nil
}
