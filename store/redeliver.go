package store

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/furrowhq/furrow"
)

// redeliveryWhere selects a redelivery's events: those of the farm $1 of
// the types $2 that occurred at or after $3. It reads the farm's index
// (events_farm_occurred), the time bound leaving out the day partitions
// before it.
const redeliveryWhere = "farm_id = $1 AND type = ANY($2::text[]) AND occurred_at_ms >= $3"

// RedeliverySet fixes what a redelivery since sinceMs sends: it counts at
// most limit+1 of the events, and the newest place in the order stored
// among them bounds the set, so that events stored later are left out.
func (db *DB) RedeliverySet(ctx context.Context, farmID uuid.UUID, types []string, sinceMs int64, limit int) (furrow.RedeliverySet, error) {
	set := furrow.RedeliverySet{FarmID: farmID, Types: types, SinceMs: sinceMs}
	err := db.pool.QueryRow(ctx, `SELECT count(*), coalesce(max(seq), 0)
		FROM (SELECT seq FROM events WHERE `+redeliveryWhere+` LIMIT $4) s`,
		farmID, types, sinceMs, limit+1).Scan(&set.Count, &set.ThroughSeq)
	if err != nil {
		return furrow.RedeliverySet{}, translate(err, "count redelivery", "farm")
	}
	return set, nil
}

// RedeliveryEvents lists a page of set's events, oldest first, after the
// place after, without their data: a redelivery's workflow holds them in
// its history, and each delivery reads its event's data when it sends.
// Their days are held past retention for the chains the caller starts
// (HoldEventDays).
func (db *DB) RedeliveryEvents(ctx context.Context, set furrow.RedeliverySet, after *furrow.Cursor, limit int) ([]furrow.Event, *furrow.Cursor, error) {
	limit = furrow.ListLimit(limit)
	q := "SELECT seq, id, type, farm_id, occurred_at_ms FROM events WHERE " + redeliveryWhere + " AND seq <= $4"
	args := []any{set.FarmID, set.Types, set.SinceMs, set.ThroughSeq}
	if after != nil {
		// The time alone too, so that the day partitions before the
		// cursor's are left out.
		args = append(args, after.TimestampMs, after.Seq)
		q += " AND occurred_at_ms >= $5 AND (occurred_at_ms, seq) > ($5, $6)"
	}
	args = append(args, limit+1)
	q += fmt.Sprintf(" ORDER BY occurred_at_ms, seq LIMIT $%d", len(args))
	var page []furrow.Event
	var next *furrow.Cursor
	// One transaction: retention, which drops a day under the table's
	// lock, waits for it and then finds the hold, or dropped the day
	// before the read.
	err := pgx.BeginFunc(ctx, db.pool, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, q, args...)
		if err != nil {
			return err
		}
		if page, next, err = scanRedeliveryPage(rows, limit); err != nil {
			return err
		}
		return holdDays(ctx, tx, eventStamps(page), db.clock.Now().Add(chainSpan))
	})
	if err != nil {
		return nil, nil, translate(err, "list redelivery", "farm")
	}
	return page, next, nil
}

// scanRedeliveryPage reads up to limit events of rows, and the cursor after
// them when more follow.
func scanRedeliveryPage(rows pgx.Rows, limit int) ([]furrow.Event, *furrow.Cursor, error) {
	defer rows.Close()
	page := []furrow.Event{}
	var last furrow.Cursor
	for rows.Next() {
		if len(page) == limit {
			return page, &last, nil
		}
		var e furrow.Event
		var id uuid.UUID
		if err := rows.Scan(&last.Seq, &id, &e.Type, &e.FarmID, &e.OccurredAtMs); err != nil {
			return nil, nil, err
		}
		e.ID, last.TimestampMs = furrow.EventID(id), e.OccurredAtMs
		page = append(page, e)
	}
	return page, nil, rows.Err()
}

// HoldEventDays holds the days of events past retention until until, so
// that a redelivery that calls it before it starts their chains finds each
// event at every attempt. An event whose day is gone already stays gone.
func (db *DB) HoldEventDays(ctx context.Context, events []furrow.Event, until time.Time) error {
	return translate(holdDays(ctx, db.pool, eventStamps(events), until), "hold events", "event")
}

// eventStamps returns the times of events.
func eventStamps(events []furrow.Event) []int64 {
	stamps := make([]int64, len(events))
	for i, e := range events {
		stamps[i] = e.OccurredAtMs
	}
	return stamps
}
