package devserver

import (
	"database/sql"
	"fmt"
	"net/url"

	_ "modernc.org/sqlite" // the driver the Temporal SQLite plugin uses, registered as "sqlite"

	"github.com/furrowhq/furrow/temporal/visindex"
)

// sparseVisibilityIndexes are the visibility indexes the dev server drops:
// those of visindex.Unused, and the keyword slots 05 to 10, which the dev
// namespace leaves unmapped (its keyword attributes take Keyword01 to
// Keyword04). With all 58 indexes of the SQLite schema, closing a workflow
// rewrote an entry in each, and the upsert that does it was compiled anew
// each time: a third of the dev server's CPU per delivery. The list is
// applied at every start, so files made before are trimmed too.
var sparseVisibilityIndexes = append([]string{
	"by_keyword_05", "by_keyword_06", "by_keyword_07", "by_keyword_08", "by_keyword_09", "by_keyword_10",
}, visindex.Unused...)

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
