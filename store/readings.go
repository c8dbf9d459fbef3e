package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/furrowhq/furrow"
)

// Readings lists a farm's readings newest first, by (timestamp, seq), with
// optional device, metric and since (inclusive) filters. Before continues
// from a cursor returned earlier, so pages stay stable while readings
// arrive. Limit defaults to 100 and is capped at 1000. A page filtered by
// a metric alone or a device alone reads at most f.ScanLimit() of the
// farm's readings and, when it found fewer than its limit there, ends with
// the cursor of the last it read. The cursor returned is nil when no
// reading is left.
func (db *DB) Readings(ctx context.Context, f furrow.ReadingFilter) ([]furrow.Reading, *furrow.Cursor, error) {
	edge, err := db.readingsEdge(ctx, f)
	if err != nil {
		return nil, nil, translate(err, "list readings", "farm")
	}
	// A value is at most furrow.MaxValueBytes: the page is one statement.
	rs, next, err := readPage(ctx, db, furrow.ListLimit(f.Limit), 0, f.Before,
		func(before *furrow.Cursor, n int) (string, []any) {
			return readingsQuery(readingColumns, f, before, edge, n)
		},
		func(r pgx.Row) (furrow.Reading, error) {
			var x furrow.Reading
			err := r.Scan(&x.DeviceID, &x.FarmID, &x.MetricID, &x.Value, &x.Timestamp)
			return x, err
		}, func(r furrow.Reading) int64 { return r.Timestamp })
	if err != nil {
		return nil, nil, translate(err, "list readings", "farm")
	}
	if next == nil && edge != nil {
		next = edge
	}
	return rs, next, nil
}

// readingsEdge returns the place of the last of the farm's readings a page
// of f may read, the f.ScanLimit()-th after its cursor and since, read
// from the farm's index alone; nil when fewer are left, or f has no limit.
func (db *DB) readingsEdge(ctx context.Context, f furrow.ReadingFilter) (*furrow.Cursor, error) {
	scan := f.ScanLimit()
	if scan == 0 {
		return nil, nil
	}
	q, args := readingsQuery("ts_ms, seq", furrow.ReadingFilter{FarmID: f.FarmID, SinceMs: f.SinceMs}, f.Before, nil, 1)
	args = append(args, scan-1)
	var c furrow.Cursor
	err := db.pool.QueryRow(ctx, fmt.Sprintf("%s OFFSET $%d", q, len(args)), args...).Scan(&c.TimestampMs, &c.Seq)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	return &c, err
}

// readingColumns are the columns of a page of readings: seq, then what a
// furrow.Reading holds.
const readingColumns = "seq, device_id, farm_id, metric_id, value, ts_ms"

// readingsQuery builds the query of cols of f, for limit rows before the
// cursor before (f.Before is the first page's) and not past edge (nil: no
// edge), with only the conditions in use, so that the planner picks the
// farm or the device-metric index.
func readingsQuery(cols string, f furrow.ReadingFilter, before, edge *furrow.Cursor, limit int) (string, []any) {
	q := "SELECT " + cols + " FROM readings WHERE farm_id = $1"
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
	if edge != nil {
		cond(" AND ts_ms >= $%d AND (ts_ms, seq) >= ($%d, $%d)", edge.TimestampMs, edge.TimestampMs, edge.Seq)
	}
	return newestFirst(q, args, "ts_ms", before, limit)
}

// PruneReadings creates the partitions of readings for the next days and,
// unless before is zero, drops the day partitions that end at or before
// it: whole days go, so readings are kept up to a day longer than asked and
// the cost does not grow with the table. The count returned is the
// planner's estimate of the rows dropped.
func (db *DB) PruneReadings(ctx context.Context, before time.Time) (int64, error) {
	r, err := db.readingParts.prune(ctx, db, before)
	return r.rows, translate(err, "prune readings", "reading")
}
