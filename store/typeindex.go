package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/furrowhq/furrow"
)

// otherTypesIndex is migration 0017's index of events: every type but
// metric.value (otherTypesWhere), by farm, type and time. The partitions'
// indexes that finishOtherTypesIndex builds are named after the partition
// with otherTypesSuffix; those of partitions made later get PostgreSQL's
// names.
const (
	otherTypesIndex  = "events_farm_other_occurred"
	otherTypesSuffix = "_farm_other_occurred"
	otherTypesWhere  = "type <> '" + furrow.EventMetricValue + "'"
	otherTypesDef    = "(farm_id, type, occurred_at_ms, seq) WHERE " + otherTypesWhere
)

// finishOtherTypesIndex completes migration 0017, which a transaction
// cannot: it builds the index of other types on each partition of events
// that has none, concurrently so that writes go on, attaches it to the
// parent's, and once every partition has its own, drops the whole
// events_farm_type_occurred it replaces. Every step can be done again, so
// an interrupted run is finished by the next. Lock waits are bounded as
// migrations' are.
func finishOtherTypesIndex(ctx context.Context, conn *pgx.Conn, p lockPatience) error {
	parts, err := partitionsWithoutOtherTypes(ctx, conn)
	if err != nil {
		return fmt.Errorf("store: migration 0017: %w", err)
	}
	for _, part := range parts {
		err := patiently(ctx, p, "migration 0017 on "+part, func() error {
			return buildOtherTypesIndex(ctx, conn, part, p)
		})
		if err != nil {
			return err
		}
	}
	return patiently(ctx, p, "migration 0017: dropping events_farm_type_occurred", func() error {
		return pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			if err := setLockTimeout(ctx, tx, p.timeout); err != nil {
				return err
			}
			var valid bool
			if err := tx.QueryRow(ctx, "SELECT indisvalid FROM pg_index WHERE indexrelid = $1::regclass", otherTypesIndex).Scan(&valid); err != nil {
				return err
			}
			if !valid {
				return errors.New("store: migration 0017: a partition of events still lacks its index of other types; run furrow migrate again")
			}
			_, err := tx.Exec(ctx, "DROP INDEX IF EXISTS events_farm_type_occurred")
			return err
		})
	})
}

// partitionsWithoutOtherTypes lists the partitions of events with no index
// attached to otherTypesIndex.
func partitionsWithoutOtherTypes(ctx context.Context, conn *pgx.Conn) ([]string, error) {
	rows, _ := conn.Query(ctx, `
		SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
		WHERE i.inhparent = 'events'::regclass AND NOT EXISTS (
			SELECT 1 FROM pg_inherits ii JOIN pg_index x ON x.indexrelid = ii.inhrelid
			WHERE ii.inhparent = $1::regclass AND x.indrelid = c.oid)
		ORDER BY c.relname`, otherTypesIndex)
	return pgx.CollectRows(rows, pgx.RowTo[string])
}

// buildOtherTypesIndex builds part's index of other types, unless a valid
// one is left from an interrupted run (an invalid one is dropped first),
// and attaches it. A partition dropped meanwhile by retention is skipped.
func buildOtherTypesIndex(ctx context.Context, conn *pgx.Conn, part string, p lockPatience) error {
	index := pgx.Identifier{part + otherTypesSuffix}.Sanitize()
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
			index, pgx.Identifier{part}.Sanitize(), otherTypesDef))
		if sqlState(err) == pgUndefinedTable {
			return nil
		}
		if err != nil {
			return err
		}
	}
	_, err = conn.Exec(ctx, fmt.Sprintf("ALTER INDEX %s ATTACH PARTITION %s", otherTypesIndex, index))
	return err
}
