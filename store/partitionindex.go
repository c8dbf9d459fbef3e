package store

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/furrowhq/furrow"
)

// partitionIndex is an index of a partitioned table that a migration
// creates on the parent only (instant, and invalid until every partition
// has its own) and that Migrate then builds on each existing partition
// concurrently, so that writes go on, before dropping the index it
// replaces. Partitions made later get theirs when they are made, with
// PostgreSQL's names.
type partitionIndex struct {
	migration string // the migration that creates it on the parent, for messages
	table     string
	name      string // the parent's index
	suffix    string // of the partitions' index names, after the partition's
	def       string // columns and predicate, as in the migration
	replaces  string // the index dropped once every partition has this one
}

// otherTypesIndex is migration 0017's index of events: every type but
// metric.value (otherTypesWhere), by farm, type and time.
var otherTypesIndex = partitionIndex{
	migration: "0017", table: "events", name: "events_farm_other_occurred", suffix: "_farm_other_occurred",
	def:      "(farm_id, type, occurred_at_ms, seq) WHERE " + otherTypesWhere,
	replaces: "events_farm_type_occurred",
}

const otherTypesWhere = "type <> '" + furrow.EventMetricValue + "'"

// partitionIndexes are finished by Migrate in this order.
var partitionIndexes = []partitionIndex{otherTypesIndex, outcomeIndex}

// finishPartitionIndexes finishes every partitionIndex.
func finishPartitionIndexes(ctx context.Context, conn *pgx.Conn, p lockPatience) error {
	for _, x := range partitionIndexes {
		if err := x.finish(ctx, conn, p); err != nil {
			return err
		}
	}
	return nil
}

// finish completes x's migration, which a transaction cannot: it builds
// the index on each partition that has none, concurrently, attaches it to
// the parent's, and once every partition has its own, drops the index it
// replaces. Every step can be done again, so an interrupted run is
// finished by the next. Lock waits are bounded as migrations' are.
func (x partitionIndex) finish(ctx context.Context, conn *pgx.Conn, p lockPatience) error {
	parts, err := x.partitionsWithout(ctx, conn)
	if err != nil {
		return fmt.Errorf("store: migration %s: %w", x.migration, err)
	}
	for _, part := range parts {
		err := patiently(ctx, p, "migration "+x.migration+" on "+part, func() error {
			return x.build(ctx, conn, part, p)
		})
		if err != nil {
			return err
		}
	}
	return patiently(ctx, p, "migration "+x.migration+": dropping "+x.replaces, func() error {
		return pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			if err := setLockTimeout(ctx, tx, p.timeout); err != nil {
				return err
			}
			var valid bool
			if err := tx.QueryRow(ctx, "SELECT indisvalid FROM pg_index WHERE indexrelid = $1::regclass", x.name).Scan(&valid); err != nil {
				return err
			}
			if !valid {
				return fmt.Errorf("store: migration %s: a partition of %s still lacks its %s; run furrow migrate again", x.migration, x.table, x.name)
			}
			_, err := tx.Exec(ctx, "DROP INDEX IF EXISTS "+pgx.Identifier{x.replaces}.Sanitize())
			return err
		})
	})
}

// partitionsWithout lists the partitions of x's table with no index
// attached to x's.
func (x partitionIndex) partitionsWithout(ctx context.Context, conn *pgx.Conn) ([]string, error) {
	rows, _ := conn.Query(ctx, `
		SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
		WHERE i.inhparent = $1::regclass AND NOT EXISTS (
			SELECT 1 FROM pg_inherits ii JOIN pg_index x ON x.indexrelid = ii.inhrelid
			WHERE ii.inhparent = $2::regclass AND x.indrelid = c.oid)
		ORDER BY c.relname`, x.table, x.name)
	return pgx.CollectRows(rows, pgx.RowTo[string])
}

// build builds part's index, unless a valid one is left from an
// interrupted run (an invalid one is dropped first), and attaches it. A
// partition dropped meanwhile by retention is skipped.
func (x partitionIndex) build(ctx context.Context, conn *pgx.Conn, part string, p lockPatience) error {
	index := pgx.Identifier{part + x.suffix}.Sanitize()
	// CONCURRENTLY runs outside a transaction: the session's timeout bounds
	// its waits, for table locks and for older transactions alike.
	if _, err := conn.Exec(ctx, fmt.Sprintf("SET lock_timeout = %d", p.timeout.Milliseconds())); err != nil {
		return err
	}
	defer func() { _, _ = conn.Exec(context.WithoutCancel(ctx), "RESET lock_timeout") }()
	var valid *bool
	err := conn.QueryRow(ctx, "SELECT (SELECT indisvalid FROM pg_index WHERE indexrelid = to_regclass($1))", index).Scan(&valid)
	if err != nil {
		return err
	}
	if valid != nil && !*valid {
		if _, err := conn.Exec(ctx, "DROP INDEX CONCURRENTLY IF EXISTS "+index); err != nil {
			return err
		}
	}
	if valid == nil || !*valid {
		_, err := conn.Exec(ctx, fmt.Sprintf("CREATE INDEX CONCURRENTLY IF NOT EXISTS %s ON %s %s",
			index, pgx.Identifier{part}.Sanitize(), x.def))
		if sqlState(err) == pgUndefinedTable {
			return nil
		}
		if err != nil {
			return err
		}
	}
	_, err = conn.Exec(ctx, fmt.Sprintf("ALTER INDEX %s ATTACH PARTITION %s", pgx.Identifier{x.name}.Sanitize(), index))
	return err
}
