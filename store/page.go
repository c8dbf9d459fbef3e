package store

import (
	"github.com/jackc/pgx/v5"

	"github.com/furrowhq/furrow"
)

// collectPage reads a page of one of the lists from rows, whose first
// column is seq and whose query asked for limit+1 rows (one more tells
// whether a page follows): the rows as scan reads their other columns, at
// most limit, and the cursor of the next page, placed by at (nil when no
// row is left).
func collectPage[T any](rows pgx.Rows, limit int, scan func(pgx.Row) (T, error), at func(T) int64) ([]T, *furrow.Cursor, error) {
	seqs := make([]int64, 0, limit+1)
	page, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (T, error) {
		var seq int64
		v, err := scan(seqFirst{r, &seq})
		seqs = append(seqs, seq)
		return v, err
	})
	if err != nil || len(page) <= limit {
		return page, nil, err
	}
	page = page[:limit]
	return page, &furrow.Cursor{TimestampMs: at(page[limit-1]), Seq: seqs[limit-1]}, nil
}

// seqFirst is a row whose first column, seq, goes to its own destination
// and the rest to the scan of the row's value.
type seqFirst struct {
	pgx.Row
	seq *int64
}

// Scan implements pgx.Row.
func (r seqFirst) Scan(dest ...any) error {
	return r.Row.Scan(append([]any{r.seq}, dest...)...)
}
