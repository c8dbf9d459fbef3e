package devserver

import (
	"database/sql"
	"fmt"
	"net/url"

	_ "modernc.org/sqlite" // the driver the Temporal SQLite plugin uses, registered as "sqlite"
)

// sparseVisibilityIndexes are indexes of Temporal's SQLite visibility schema
// that serve only filters and sorts nobody makes on a dev server: the
// pre-allocated custom search attribute slots that the dev namespace leaves
// unmapped (its keyword attributes take Keyword01 to Keyword04), and sorts by
// history length, size, duration and state transitions.
//
// Every index also holds the close time, so closing a workflow rewrites an
// entry in each of them: with all 58, that upsert was a third of the dev
// server's CPU per delivery. Dropping an index changes no query's result, only
// its plan; a search attribute registered later on a dropped slot is still
// found, by a scan. The list is applied at every start, so a file made by an
// older version is trimmed too.
var sparseVisibilityIndexes = []string{
	"by_bool_01", "by_bool_02", "by_bool_03",
	"by_datetime_01", "by_datetime_02", "by_datetime_03",
	"by_double_01", "by_double_02", "by_double_03",
	"by_int_01", "by_int_02", "by_int_03",
	"by_keyword_05", "by_keyword_06", "by_keyword_07", "by_keyword_08", "by_keyword_09", "by_keyword_10",
	"by_history_length", "by_history_size_bytes", "by_execution_duration", "by_state_transition_count",
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
