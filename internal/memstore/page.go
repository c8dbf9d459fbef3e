package memstore

import (
	"cmp"
	"slices"

	"github.com/furrowhq/furrow"
)

// newestPage is how the lists page, as the store does: rows newest first
// by place (their time, then the order stored), those before the cursor
// only, as many as furrow.PageFull lets in of furrow.ListLimit(limit),
// each row as out makes it, and the cursor of the next page (nil when none
// is left).
func newestPage[R any, T furrow.Sized](rows []R, place func(R) furrow.Cursor, before *furrow.Cursor, limit int, out func(R) T) ([]T, *furrow.Cursor) {
	if before != nil {
		rows = slices.DeleteFunc(rows, func(r R) bool { return compareAt(place(r), *before) >= 0 })
	}
	slices.SortFunc(rows, func(a, b R) int { return -compareAt(place(a), place(b)) })
	limit = furrow.ListLimit(limit)
	page, size := []T{}, 0
	for i, r := range rows {
		if furrow.PageFull(len(page), limit, size) {
			c := place(rows[i-1])
			return page, &c
		}
		v := out(r)
		page, size = append(page, v), size+v.Size()
	}
	return page, nil
}

// compareAt orders the rows of the lists, and their cursors, by time and
// then by the order stored, as the store does.
func compareAt(a, b furrow.Cursor) int {
	return cmp.Or(cmp.Compare(a.TimestampMs, b.TimestampMs), cmp.Compare(a.Seq, b.Seq))
}
