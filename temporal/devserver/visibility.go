package devserver

import (
	"database/sql"
	"fmt"
	"net/url"

	_ "modernc.org/sqlite" // the driver the Temporal SQLite plugin uses, registered as "sqlite"
)

// sparseVisibilityIndexes are indexes of Temporal's SQLite visibility schema
// that serve filters and sorts rare on a dev server: the custom search
// attribute slots that the dev namespace leaves unmapped (its keyword
// attributes take Keyword01 to Keyword04); sorts by history length, size,
// duration and state transitions; parent, root, batch, pause and worker
// deployment lookups; and the slots of Temporal's own newer features. The
// default list, workflow id, type, status, task queue, execution time,
// schedule and namespace division indexes stay.
//
// Every index also holds the close time, so closing a workflow rewrites an
// entry in each of them, and the upsert that does it is compiled anew each
// time: with all 58 indexes that was a third of the dev server's CPU per
// delivery. Dropping an index changes no query's result, only its plan (a
// scan of a dev-sized table instead of a seek); the server names no index in
// its queries. The list is applied at every start, so files made before are
// trimmed too.
var sparseVisibilityIndexes = []string{
	"by_bool_01", "by_bool_02", "by_bool_03",
	"by_datetime_01", "by_datetime_02", "by_datetime_03",
	"by_double_01", "by_double_02", "by_double_03",
	"by_int_01", "by_int_02", "by_int_03",
	"by_keyword_05", "by_keyword_06", "by_keyword_07", "by_keyword_08", "by_keyword_09", "by_keyword_10",
	"by_history_length", "by_history_size_bytes", "by_execution_duration", "by_state_transition_count",
	"by_temporal_bool_01", "by_temporal_bool_02", "by_temporal_datetime_01", "by_temporal_datetime_02",
	"by_temporal_double_01", "by_temporal_double_02", "by_temporal_int_01", "by_temporal_int_02",
	"by_temporal_keyword_01", "by_temporal_keyword_02", "by_temporal_keyword_03", "by_temporal_keyword_04",
	"by_temporal_low_cardinality_keyword_01",
	"by_parent_workflow_id", "by_parent_run_id", "by_root_workflow_id", "by_root_run_id", "by_batcher_user",
	"by_temporal_pause_info", "by_temporal_worker_deployment_version", "by_temporal_workflow_versioning_behavior", "by_temporal_worker_deployment",
}

// trimVisibilityIndexes drops sparseVisibilityIndexes from the visibility
// SQLite file at path. It returns a wrapped error if the file cannot be
// opened or written.
func trimVisibilityIndexes(path string) error {
	db, err := sql.Open("sqlite", (&url.URL{Scheme: "file", Opaque: path}).String())
	if err != nil {
		return fmt.Errorf("devserver: open %s: %w", path, err)
	}
	defer db.Close()
	for _, name := range sparseVisibilityIndexes {
		// Names come from the constant list above, never from input.
		if _, err := db.Exec("DROP INDEX IF EXISTS " + name); err != nil {
			return fmt.Errorf("devserver: drop visibility index %s in %s: %w", name, path, err)
		}
	}
	return nil
}
