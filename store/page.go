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
// whether a page follows): the rows as scan reads their other columns, as
// many as furrow.PageFull lets in, and the cursor of the next page, placed
// by at (nil when no row is left). The rows a page leaves out are read
// from the connection and dropped, one at a time.
func collectPage[T furrow.Sized](rows pgx.Rows, limit int, scan func(pgx.Row) (T, error), at func(T) int64) ([]T, *furrow.Cursor, error) {
	defer rows.Close()
	page, size := []T{}, 0
	var last int64 // the seq of page's last row
	for rows.Next() {
		if furrow.PageFull(len(page), limit, size) {
			return page, &furrow.Cursor{TimestampMs: at(page[len(page)-1]), Seq: last}, nil
		}
		var seq int64
		v, err := scan(seqFirst{rows, &seq})
		if err != nil {
			return nil, nil, err
		}
		page, last, size = append(page, v), seq, size+v.Size()
	}
	return page, nil, rows.Err()
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
