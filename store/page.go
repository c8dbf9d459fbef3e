package store

import (
	"context"
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

// readPage reads a page of one of the lists: at most limit rows after
// before, as many as furrow.PageFull lets in, and the cursor of the next
// page (nil when no row is left). query gives the statement of the n rows
// after a cursor, whose first column is seq; scan reads a row's other
// columns and at its time. PostgreSQL reads and sends every row a
// statement asks for, whether the page takes it or not, so a list whose
// rows may be large asks for first rows, then twice as many at a time
// until the page is full; first 0 asks for the whole page at once. Each
// statement asks for one row more, which tells whether more follow.
func readPage[T furrow.Sized](ctx context.Context, db *DB, limit, first int, before *furrow.Cursor,
	query func(before *furrow.Cursor, n int) (string, []any), scan func(pgx.Row) (T, error), at func(T) int64) ([]T, *furrow.Cursor, error) {
	p := pager[T]{limit: limit, scan: scan, page: []T{}}
	n := limit
	if first > 0 {
		n = min(first, limit)
	}
	for {
		q, args := query(before, n+1)
		rows, _ := db.pool.Query(ctx, q, args...) // rows.Err() has its error
		more, err := p.collect(rows, n)
		if err != nil || !more {
			return p.page, nil, err
		}
		before = &furrow.Cursor{TimestampMs: at(p.page[len(p.page)-1]), Seq: p.last}
		if p.full() {
			return p.page, before, nil
		}
		n = min(2*n, limit-len(p.page))
	}
}

// pager gathers a page of one of the lists from one statement or more.
type pager[T furrow.Sized] struct {
	limit int
	scan  func(pgx.Row) (T, error)
	page  []T
	last  int64 // the seq of page's last row
	size  int   // the sizes of page's rows
}

// full says whether the page takes no further row.
func (p *pager[T]) full() bool { return furrow.PageFull(len(p.page), p.limit, p.size) }

// collect adds the rows of a statement that asked for n+1 to the page
// while it takes them, and says whether a row was left. The rows left are
// read from the connection and dropped.
func (p *pager[T]) collect(rows pgx.Rows, n int) (more bool, err error) {
	defer rows.Close()
	for got := 0; rows.Next(); got++ {
		if got == n || p.full() {
			return true, nil
		}
		var seq int64
		v, err := p.scan(seqFirst{rows, &seq})
		if err != nil {
			return false, err
		}
		p.page, p.last, p.size = append(p.page, v), seq, p.size+v.Size()
	}
	return false, rows.Err()
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
