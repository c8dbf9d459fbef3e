package store

import (
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/furrowhq/furrow"
)

// newestFirst ends q, a query of one of the lists whose arguments are
// args, with the order of the lists, newest first by the time column at
// and then by seq, the rows before the cursor only (when there is one),
// and at most limit rows. The cursor's condition bounds at alone too, so
// that PostgreSQL leaves out the day partitions after the cursor's.
func newestFirst(q string, args []any, at string, before *furrow.Cursor, limit int) (string, []any) {
	if before != nil {
		args = append(args, before.TimestampMs, before.Seq)
		n := len(args)
		q += fmt.Sprintf(" AND %[1]s <= $%[2]d AND (%[1]s, seq) < ($%[2]d, $%[3]d)", at, n-1, n)
	}
	args = append(args, limit)
	return q + fmt.Sprintf(" ORDER BY %s DESC, seq DESC LIMIT $%d", at, len(args)), args
}

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
