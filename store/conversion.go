package store

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// conversion is a table's change into a partitioned one over several
// migrations: the first step adds bound, a NOT VALID CHECK constraint
// (column < a boundary: the start of the UTC day after tomorrow, or later)
// that spares the swap a scan; a later step validates it; swap partitions
// the table. PostgreSQL enforces a NOT VALID constraint on new rows, so
// from its boundary a bound left behind by a run that stopped would refuse
// every write of the release still serving. So a conversion is finished
// in the run that begins it: one found begun and unfinished, when a run
// starts or fails, is undone (the bound dropped, the steps un-recorded),
// and the next run starts it over with a new boundary.
type conversion struct {
	table, bound string
	steps        []string // the migrations before swap, the one adding bound first
	swap         string
}

// conversions are the readings' (0003 to 0005) and the events' (0012 to
// 0014; 0013 is another table's).
var conversions = []conversion{
	{table: "readings", bound: "readings_before_partitioning",
		steps: []string{"0003_readings_bound.sql", "0004_readings_bound_validate.sql"}, swap: "0005_readings_partitioned.sql"},
	{table: "events", bound: "events_before_partitioning",
		steps: []string{"0012_events_bound.sql", "0013a_events_bound_validate.sql"}, swap: "0014_events_partitioned.sql"},
}

// undoGrace bounds the undoing of conversions after a cancelled run: a
// SIGTERM, such as at the Helm job's deadline, is followed by a kill 30 s
// later unless the pod says otherwise.
const undoGrace = 20 * time.Second

// abandonConversions undoes every conversion begun and not finished.
func abandonConversions(ctx context.Context, conn *pgx.Conn, p lockPatience, log *slog.Logger) error {
	for _, c := range conversions {
		if err := c.abandon(ctx, conn, p, log); err != nil {
			return err
		}
	}
	return nil
}

// abandonAfter is abandonConversions after a run failed with cause, which
// it returns with whatever kept a conversion from being undone. A cancelled
// run gets undoGrace of its own; a connection that the cancellation closed
// is replaced (see relock).
func abandonAfter(ctx context.Context, conn *pgx.Conn, databaseURL string, opts MigrateOptions, p lockPatience, log *slog.Logger, cause error) error {
	if ctx.Err() != nil {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(context.WithoutCancel(ctx), undoGrace)
		defer cancel()
	}
	if conn.IsClosed() {
		var err error
		if conn, err = relock(ctx, databaseURL, opts, log); err != nil {
			return errors.Join(cause, unchecked(err))
		}
		defer conn.Close(context.WithoutCancel(ctx))
	}
	if err := abandonConversions(ctx, conn, p, log); err != nil {
		return errors.Join(cause, err)
	}
	return cause
}

// relock opens a new connection and takes the migrations' lock on it,
// waiting at most undoGrace: until the closed connection's session has
// ended, or, if another migrate holds the lock, leaving that run to undo
// what it finds unfinished.
func relock(ctx context.Context, databaseURL string, opts MigrateOptions, log *slog.Logger) (*pgx.Conn, error) {
	ctx, cancel := context.WithTimeout(ctx, undoGrace)
	defer cancel()
	conn, err := connectMigrate(ctx, databaseURL, opts)
	if err != nil {
		return nil, err
	}
	if err := lockMigrations(ctx, conn, log); err != nil {
		conn.Close(context.WithoutCancel(ctx))
		return nil, err
	}
	return conn, nil
}

// abandon undoes c if it was begun and not finished, with p's patience.
func (c conversion) abandon(ctx context.Context, conn *pgx.Conn, p lockPatience, log *slog.Logger) error {
	var begun bool
	var boundary *int64
	err := conn.QueryRow(ctx, `SELECT
		EXISTS (SELECT 1 FROM schema_migrations WHERE version = ANY($1))
			AND NOT EXISTS (SELECT 1 FROM schema_migrations WHERE version = $2),
		(SELECT (regexp_match(pg_get_constraintdef(oid), '< \(?''?(-?\d+)'))[1]::bigint
			FROM pg_constraint WHERE conname = $3 AND conrelid = to_regclass($4))`,
		c.steps, c.swap, c.bound, c.table).Scan(&begun, &boundary)
	if err != nil {
		return unchecked(err)
	}
	if !begun {
		return nil
	}
	log.Warn("undoing an unfinished table conversion, to be started over",
		"table", c.table, "constraint", c.bound)
	err = patiently(ctx, p, "undoing the "+c.table+" conversion", func() error {
		return pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			if err := setLockTimeout(ctx, tx, p.timeout); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, c.dropBound()); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, "DELETE FROM schema_migrations WHERE version = ANY($1)", c.steps)
			return err
		})
	})
	if err != nil {
		return c.stuck(boundary, err)
	}
	return nil
}

// dropBound is the statement that removes c's bound.
func (c conversion) dropBound() string {
	return "ALTER TABLE " + c.table + " DROP CONSTRAINT IF EXISTS " + c.bound
}

// stuck is the error of a conversion that could not be undone: from when
// its bound refuses writes (boundary ms, nil if unknown), and what to run.
func (c conversion) stuck(boundary *int64, cause error) error {
	from := "the time in its definition"
	if boundary != nil {
		from = time.UnixMilli(*boundary).UTC().Format("2006-01-02 15:04 MST")
	}
	return fmt.Errorf("store: the %s conversion (migrations %s to %s) is unfinished and could not be undone: %w; "+
		"its constraint %s refuses every new row of %s from %s on, the old release's too: before then, run furrow migrate again "+
		"(it undoes the conversion first), or undo it by hand: %s; DELETE FROM schema_migrations WHERE version IN ('%s')",
		c.table, c.steps[0][:4], c.swap[:4], cause, c.bound, c.table, from, c.dropBound(), strings.Join(c.steps, "', '"))
}

// unchecked is the error of a failed check for unfinished conversions.
func unchecked(cause error) error {
	var bounds []string
	for _, c := range conversions {
		bounds = append(bounds, c.bound)
	}
	return fmt.Errorf("store: could not check for an unfinished table conversion: %w; if one was left, its constraint (%s) "+
		"refuses new rows from the time in its definition: run furrow migrate again before then", cause, strings.Join(bounds, " or "))
}
