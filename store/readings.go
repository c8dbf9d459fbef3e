package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/furrowhq/furrow"
)

// Readings lists a farm's readings newest first, by (timestamp, seq), with
// optional device, metric and since (inclusive) filters. Before continues
// from a cursor returned earlier, so pages stay stable while readings
// arrive. Limit defaults to 100 and is capped at 1000. The cursor returned
// is nil when no reading is left.
func (db *DB) Readings(ctx context.Context, f furrow.ReadingFilter) ([]furrow.Reading, *furrow.Cursor, error) {
	// A value is at most furrow.MaxValueBytes: the page is one statement.
	rs, next, err := readPage(ctx, db, furrow.ListLimit(f.Limit), 0, f.Before,
		func(before *furrow.Cursor, n int) (string, []any) { return readingsQuery(f, before, n) },
		func(r pgx.Row) (furrow.Reading, error) {
			var x furrow.Reading
			err := r.Scan(&x.DeviceID, &x.FarmID, &x.MetricID, &x.Value, &x.Timestamp)
			return x, err
		}, func(r furrow.Reading) int64 { return r.Timestamp })
	if err != nil {
		return nil, nil, translate(err, "list readings", "farm")
	}
	return rs, next, nil
}

// readingsQuery builds the query of f, for limit rows before the cursor
// before (f.Before is the first page's), with only the conditions in use,
// so that the planner picks the farm or the device-metric index.
func readingsQuery(f furrow.ReadingFilter, before *furrow.Cursor, limit int) (string, []any) {
	q := "SELECT seq, device_id, farm_id, metric_id, value, ts_ms FROM readings WHERE farm_id = $1"
	args := []any{f.FarmID}
	cond := func(format string, vs ...any) {
		idx := make([]any, len(vs))
		for i, v := range vs {
			args = append(args, v)
			idx[i] = len(args)
		}
		q += fmt.Sprintf(format, idx...)
	}
	if f.DeviceID != nil {
		cond(" AND device_id = $%d", *f.DeviceID)
	}
	if f.MetricID != nil {
		cond(" AND metric_id = $%d", *f.MetricID)
	}
	if f.SinceMs != nil {
		cond(" AND ts_ms >= $%d", *f.SinceMs)
	}
	return newestFirst(q, args, "ts_ms", before, limit)
}

// PruneReadings creates the partitions of readings for the next days and,
// unless before is zero, drops the day partitions that end at or before
// it: whole days go, so readings are kept up to a day longer than asked and
// the cost does not grow with the table. The count returned is the
// planner's estimate of the rows dropped.
func (db *DB) PruneReadings(ctx context.Context, before time.Time) (int64, error) {
	if before.IsZero() {
		return 0, db.readingParts.ensureAhead(ctx, db.pool, db.clock.Now())
	}
	n, _, err := db.readingParts.prune(ctx, db, before)
	return n, err
}
