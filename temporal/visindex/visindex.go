// Package visindex names the indexes of Temporal's SQL visibility schema
// that serve no query of Furrow, its operators or the Temporal UI, and drops
// them from a PostgreSQL visibility database.
//
// Every index of the executions_visibility table also holds the close time,
// so each workflow writes an entry in each index when it starts and again
// when it closes: with the 74 indexes of the PostgreSQL schema of Temporal
// v1.32, that was the largest single cost of a delivery in PostgreSQL
// (BENCHMARKS.md). Dropping an index changes no query's result, only its
// plan; the server names no index in its queries.
package visindex

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/jackc/pgx/v5"
)

// Unused are the indexes that stay unused by Furrow's deliveries: custom
// search attribute slots of types Furrow registers none of (it registers
// keywords and one integer, FurrowLastStatus; the server gives each the
// first free slot of its type in no fixed order, so every keyword and
// integer slot stays); sorts by history length, size, duration and state
// transitions; parent, root, batch, pause and worker deployment lookups;
// build ids and binary checksums; and the slots of Temporal's own newer
// features. The default list, workflow id, type, status, task queue,
// execution time, schedule and namespace division indexes stay.
var Unused = []string{
	"by_bool_01", "by_bool_02", "by_bool_03",
	"by_datetime_01", "by_datetime_02", "by_datetime_03",
	"by_double_01", "by_double_02", "by_double_03",
	"by_text_01", "by_text_02", "by_text_03",
	"by_keyword_list_01", "by_keyword_list_02", "by_keyword_list_03",
	"by_history_length", "by_history_size_bytes", "by_execution_duration", "by_state_transition_count",
	"by_temporal_bool_01", "by_temporal_bool_02", "by_temporal_datetime_01", "by_temporal_datetime_02",
	"by_temporal_double_01", "by_temporal_double_02", "by_temporal_int_01", "by_temporal_int_02",
	"by_temporal_keyword_01", "by_temporal_keyword_02", "by_temporal_keyword_03", "by_temporal_keyword_04",
	"by_temporal_keyword_list_01", "by_temporal_keyword_list_02", "by_temporal_low_cardinality_keyword_01",
	"by_parent_workflow_id", "by_parent_run_id", "by_root_workflow_id", "by_root_run_id", "by_batcher_user",
	"by_temporal_pause_info", "by_temporal_worker_deployment_version", "by_temporal_workflow_versioning_behavior",
	"by_temporal_worker_deployment", "by_used_deployment_versions", "by_temporal_reported_problems",
	"by_temporal_change_version", "by_binary_checksums", "by_build_ids",
	"by_temporal_external_payload_count", "by_temporal_external_payload_size_bytes",
}

// Restored are the indexes an earlier Furrow dropped that its own search
// attributes need (FurrowLastStatus takes one of the integer slots), with
// their definitions in Temporal's PostgreSQL visibility schema.
var Restored = map[string]string{
	"by_int_01": intSlotIndex("01"),
	"by_int_02": intSlotIndex("02"),
	"by_int_03": intSlotIndex("03"),
}

func intSlotIndex(n string) string {
	return "CREATE INDEX CONCURRENTLY IF NOT EXISTS by_int_" + n + " ON executions_visibility (namespace_id, Int" + n +
		", (COALESCE(close_time, '9999-12-31 23:59:59')) DESC, start_time DESC, run_id)"
}

// Trimmed says what TrimPostgres changed.
type Trimmed struct {
	Dropped  int // indexes of Unused that existed
	Restored int // indexes of Restored that were missing
}

// TrimPostgres drops the Unused indexes from the visibility database at
// url and makes the Restored ones that are missing, each CONCURRENTLY so
// that the server's writes are never blocked. Running it again changes
// nothing. It returns an error naming the index when a step fails; an
// index left invalid by an interrupted run is made again by the next.
func TrimPostgres(ctx context.Context, url string) (Trimmed, error) {
	var done Trimmed
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return done, fmt.Errorf("visindex: connect: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var present, valid []string
	if err := conn.QueryRow(ctx, `SELECT coalesce(array_agg(c.relname::text), '{}'),
			coalesce(array_agg(c.relname::text) FILTER (WHERE i.indisvalid), '{}')
		FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
		WHERE i.indrelid = 'executions_visibility'::regclass`).Scan(&present, &valid); err != nil {
		return done, fmt.Errorf("visindex: list indexes: %w", err)
	}
	for _, name := range Unused {
		if !slices.Contains(present, name) {
			continue
		}
		// Names come from the constant list above, never from input.
		if _, err := conn.Exec(ctx, "DROP INDEX CONCURRENTLY IF EXISTS "+pgx.Identifier{name}.Sanitize()); err != nil {
			return done, fmt.Errorf("visindex: drop %s: %w", name, err)
		}
		done.Dropped++
	}
	for _, name := range slices.Sorted(maps.Keys(Restored)) {
		if slices.Contains(valid, name) {
			continue
		}
		if slices.Contains(present, name) {
			if _, err := conn.Exec(ctx, "DROP INDEX CONCURRENTLY IF EXISTS "+pgx.Identifier{name}.Sanitize()); err != nil {
				return done, fmt.Errorf("visindex: drop invalid %s: %w", name, err)
			}
		}
		if _, err := conn.Exec(ctx, Restored[name]); err != nil {
			return done, fmt.Errorf("visindex: create %s: %w", name, err)
		}
		done.Restored++
	}
	return done, nil
}
