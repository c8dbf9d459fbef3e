package devserver

import (
	"database/sql"
	"fmt"
	"net/url"

	_ "modernc.org/sqlite" // the driver the Temporal SQLite plugin uses, registered as "sqlite"

	"github.com/furrowhq/furrow/temporal/visindex"
)

// sparseVisibilityIndexes are the visibility indexes the dev server drops
// at every start, so that files made before are trimmed too: those of
// visindex.Unused. With all 58 indexes of the SQLite schema, closing a
// workflow rewrote an entry in each, and the upsert that does it was
// compiled anew each time: a third of the dev server's CPU per delivery.
// The slots of custom search attributes are fitted once the namespace is
// (fitSlotIndexes).
var sparseVisibilityIndexes = visindex.Unused

// slotKinds are the custom search attribute slots of the SQLite schema
// whose indexes follow the namespaces' use: the column's prefix, its
// index's, and how many there are.
var slotKinds = []struct {
	column, index string
	n             int
}{{"Keyword", "by_keyword_", 10}, {"Int", "by_int_", 3}}

// fitSlotIndexes gives the keyword and integer slots that a namespace
// maps a search attribute to their index, and drops the others'. The
// server gives an attribute the first free slot of its type in no fixed
// order, so which slots Furrow's attributes hold is read from the
// namespaces (used: field name to alias, of them all), not assumed.
func fitSlotIndexes(path string, used map[string]bool) error {
	db, err := sql.Open("sqlite", (&url.URL{Scheme: "file", Opaque: path, RawQuery: "_pragma=busy_timeout(10000)"}).String())
	if err != nil {
		return fmt.Errorf("devserver: open %s: %w", path, err)
	}
	defer db.Close()
	for _, k := range slotKinds {
		for i := 1; i <= k.n; i++ {
			column, index := fmt.Sprintf("%s%02d", k.column, i), fmt.Sprintf("%s%02d", k.index, i)
			// Names come from the constants above, never from input; the
			// definition is the schema's.
			q := "DROP INDEX IF EXISTS " + index
			if used[column] {
				q = fmt.Sprintf("CREATE INDEX IF NOT EXISTS %s ON executions_visibility (namespace_id, %s, "+
					"(COALESCE(close_time, '9999-12-31 23:59:59+00:00')) DESC, start_time DESC, run_id)", index, column)
			}
			if _, err := db.Exec(q); err != nil {
				return fmt.Errorf("devserver: fit visibility index %s in %s: %w", index, path, err)
			}
		}
	}
	return nil
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
