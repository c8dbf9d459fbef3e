package store

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/furrowhq/furrow"
)

// Events are range-partitioned by the UTC day of occurred_at_ms (migrations
// 0012 and 0014), one partition per day created ahead like those of
// readings, so that retention drops whole days.
//
// The key of an event is (id, occurred_at_ms): each partition has a unique
// index on it (the pre-partitioning partition of an upgraded database, on
// id alone). Storing again an event with the same id and occurred_at_ms is
// therefore a conflict in one partition: write it with ON CONFLICT DO
// NOTHING, naming no target (the parent index is marked invalid while the
// pre-partitioning partition exists), to make it a no-op. The same id with
// another occurred_at_ms is another row: ids are made unique by
// construction (furrow.NewEventUUID), not by the table. New ids are UUIDv7
// holding occurred_at_ms, so Event finds an event's partition from its id.
//
// The outbox floor (table outbox_floor) is at or before the occurred_at_ms
// of every undispatched event, so the outbox's queries start there: they
// never open older partitions, and a claim's walk of the partial index of
// undispatched events starts there too. Marking an event dispatched leaves
// its entry in that index until a vacuum, so a floor kept close to now is
// what keeps a claim from walking a busy day's dead entries.
//
// Storing an event keeps the rule without touching the floor when the
// event occurred within recentEvent of its writer's now; storing a pending
// event older than that lowers the floor in its transaction (keepFloor).
// Every transaction that stores events commits within writeTimeout of that
// check (boundWrite), so raising the floor to the oldest undispatched event,
// but never later than floorLag before now, leaves above it every event
// still being written, whatever the clocks of the processes differ by
// within clockSlack. Claims raise it every raiseEvery, and retention too.
const (
	recentEvent = 30 * time.Second
	clockSlack  = 30 * time.Second
	floorLag    = recentEvent + writeTimeout + clockSlack
	raiseEvery  = 10 * time.Second
)

// lowerFloorSQL lowers the outbox floor to $1 at most. It always writes
// the row, so that it waits for a raise in progress (which holds the row)
// and a raise waits for its transaction.
const lowerFloorSQL = `UPDATE outbox_floor SET floor_ms = least(floor_ms, $1)`

// lowersFloor reports whether a pending event that occurred at occurredMs,
// stored at nowMs, must lower the outbox floor: its transaction must then
// be one that keepFloor can write to.
func lowersFloor(occurredMs, nowMs int64) bool {
	return occurredMs < nowMs-recentEvent.Milliseconds()
}

// keepFloor lowers the outbox floor to oldestPending, the time of the
// oldest pending event just stored through q, when lowersFloor says so; q
// must then be the events' own transaction.
func keepFloor(ctx context.Context, q execQuerier, oldestPending, nowMs int64) error {
	if !lowersFloor(oldestPending, nowMs) {
		return nil
	}
	_, err := q.Exec(ctx, lowerFloorSQL, oldestPending)
	return err
}

// boundWrite bounds a write of events, from now to its commit, by
// writeTimeout, as the floor's rule needs.
func boundWrite(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, writeTimeout)
}

// outboxFloor returns the outbox floor, raised first when the last raise
// of this DB is raiseEvery old. A failed raise is logged and the floor
// read as it is: it only costs the claim time.
func (db *DB) outboxFloor(ctx context.Context) (int64, error) {
	now := db.nowMs()
	if last := db.floorRaisedMs.Load(); now-last >= raiseEvery.Milliseconds() && db.floorRaisedMs.CompareAndSwap(last, now) {
		floor, err := db.raiseOutboxFloor(ctx)
		switch {
		case err == nil:
			return floor, nil
		case !errors.Is(err, errFloorBusy):
			db.log.Warn("store: outbox floor not raised", "err", err)
		}
	}
	return db.readOutboxFloor(ctx)
}

// readOutboxFloor returns the outbox floor as it is.
func (db *DB) readOutboxFloor(ctx context.Context) (int64, error) {
	var floor int64
	err := db.pool.QueryRow(ctx, "SELECT floor_ms FROM outbox_floor").Scan(&floor)
	return floor, err
}

// errFloorBusy is a raise given up because a write that lowers the floor
// holds its row: the write may take writeTimeout, and the claim that
// raises is bounded by far less; the next raise comes raiseEvery later.
var errFloorBusy = errors.New("store: the outbox floor is being lowered")

// raiseOutboxFloor moves the outbox floor up to the oldest undispatched
// event, or to floorLag before now when that is earlier, and returns it.
// The floor's row is locked before the oldest is read, by a statement of
// its own, so that an old pending event stored meanwhile is either seen or
// lowers the floor after the raise.
func (db *DB) raiseOutboxFloor(ctx context.Context) (int64, error) {
	var floor int64
	err := pgx.BeginFunc(ctx, db.pool, func(tx pgx.Tx) error {
		err := tx.QueryRow(ctx, "SELECT floor_ms FROM outbox_floor FOR UPDATE SKIP LOCKED").Scan(&floor)
		if errors.Is(err, pgx.ErrNoRows) {
			return errFloorBusy
		}
		if err != nil {
			return err
		}
		var oldest *int64
		err = tx.QueryRow(ctx, `SELECT min(occurred_at_ms) FROM events
			WHERE dispatched_at_ms IS NULL AND occurred_at_ms >= $1`, floor).Scan(&oldest)
		if err != nil {
			return err
		}
		raised := db.clock.Now().Add(-floorLag).UnixMilli()
		if oldest != nil {
			raised = min(raised, *oldest)
		}
		if raised <= floor {
			return nil
		}
		floor = raised
		_, err = tx.Exec(ctx, "UPDATE outbox_floor SET floor_ms = $1", floor)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("store: raise outbox floor: %w", err)
	}
	return floor, nil
}

// A delivery chain reads its event again at each attempt and ends skipped,
// unsent, when the event is gone, so retention keeps an event partition
// past the cutoff while a chain started for one of its events may still
// run (furrow.ChainSpan). The table event_day_holds (migration 0019) holds
// UTC days (by their start) until a time. Nothing on the path of ingest or
// dispatch writes it: a redelivery holds the days of the events it starts
// chains for (RedeliveryEvents, HoldEventDays), an attempt of an old event
// holds its day for the rest of its chain, and retention marks
// undispatched a day it keeps for undispatched events, so that the first
// run that finds them dispatched, after their chains started, holds it
// from then on. Expired holds are removed at each run.

// dayMs is a UTC day in ms.
const dayMs = int64(24 * time.Hour / time.Millisecond)

// chainSpan is how long retention holds a day for chains whose schedule
// the store does not know: a redelivery page's, until the chains' own
// attempts hold it for theirs, and a day whose undispatched events were
// all handed to Temporal.
var chainSpan = furrow.ChainSpan(nil)

// holdDaysSQL holds the days $1 (distinct) until $2 at least.
const holdDaysSQL = `INSERT INTO event_day_holds (day_ms, until_ms) SELECT unnest($1::bigint[]), $2
	ON CONFLICT (day_ms) DO UPDATE SET until_ms = greatest(event_day_holds.until_ms, excluded.until_ms)`

// markUndispatchedSQL marks the day $1 as kept for undispatched events.
const markUndispatchedSQL = `INSERT INTO event_day_holds (day_ms, until_ms, undispatched) VALUES ($1, 0, true)
	ON CONFLICT (day_ms) DO UPDATE SET undispatched = true`

// heldSQL reports whether a day in [$1, $2) is held at $3, once the marked
// ones, whose events are now all dispatched, are held until $4.
const heldSQL = `WITH released AS (
		UPDATE event_day_holds SET undispatched = false, until_ms = greatest(until_ms, $4)
		WHERE day_ms >= $1 AND day_ms < $2 AND undispatched RETURNING 1)
	SELECT EXISTS (SELECT 1 FROM released)
		OR EXISTS (SELECT 1 FROM event_day_holds WHERE day_ms >= $1 AND day_ms < $2 AND until_ms > $3)`

// Why keepEventPartition keeps a partition.
const (
	keptUndispatched = "undispatched"
	keptForChains    = "chains"
)

// holdDays holds the UTC days of the times stamps (ms) until until, in q
// (the pool, or the transaction that read the events).
func holdDays(ctx context.Context, q execQuerier, stamps []int64, until time.Time) error {
	days := make([]int64, 0, len(stamps))
	for _, ms := range stamps {
		days = append(days, utcDay(time.UnixMilli(ms)).UnixMilli())
	}
	slices.Sort(days)
	days = slices.Compact(days) // a row is upserted once a statement
	if len(days) == 0 {
		return nil
	}
	_, err := q.Exec(ctx, holdDaysSQL, days, until.UnixMilli())
	return err
}

// keepEventPartition is the keep rule of event partitions past the cutoff.
// One that holds an undispatched event is kept, however old, and marked;
// one whose days are held is kept until the holds end.
func keepEventPartition(ctx context.Context, db *DB, tx pgx.Tx, pt partition) (string, error) {
	undispatched, err := holdsUndispatched(ctx, tx, pt.name)
	if err != nil {
		return "", err
	}
	if undispatched {
		// Its last day stands for a partition of several.
		_, err := tx.Exec(ctx, markUndispatchedSQL, pt.to-dayMs)
		return keptUndispatched, err
	}
	from := int64(math.MinInt64)
	if pt.from != nil {
		from = *pt.from
	}
	now := db.clock.Now()
	var held bool
	err = tx.QueryRow(ctx, heldSQL, from, pt.to, now.UnixMilli(), now.Add(chainSpan).UnixMilli()).Scan(&held)
	if err != nil || !held {
		return "", err
	}
	return keptForChains, nil
}

// holdsUndispatched reports whether partition holds an undispatched event,
// from its index of them.
func holdsUndispatched(ctx context.Context, tx pgx.Tx, partition string) (bool, error) {
	var held bool
	err := tx.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM "+pgx.Identifier{partition}.Sanitize()+
		" WHERE dispatched_at_ms IS NULL)").Scan(&held)
	return held, err
}

// PruneEvents drops the day partitions of events that end at or before
// before, except those still holding an undispatched event or held for
// delivery chains, and returns about how many events went. Whole days go,
// so the cost does not grow with the table, no row is deleted one by one,
// and events are kept up to a day longer than asked. It first raises the
// outbox floor and creates the partitions of the next days, and last
// removes the expired holds.
func (db *DB) PruneEvents(ctx context.Context, before time.Time) (int64, error) {
	if _, err := db.raiseOutboxFloor(ctx); err != nil {
		return 0, err
	}
	r, err := db.eventParts.prune(ctx, db, before)
	if ps := r.kept[keptUndispatched]; len(ps) > 0 {
		db.log.Warn("store: event partitions past retention kept: they hold undispatched events",
			"partitions", ps)
	}
	if ps := r.kept[keptForChains]; len(ps) > 0 {
		db.log.Info("store: event partitions past retention kept: delivery chains started for their events may still read them",
			"partitions", ps)
	}
	if err != nil {
		return r.rows, translate(err, "prune events", "event")
	}
	_, err = db.pool.Exec(ctx, "DELETE FROM event_day_holds WHERE NOT undispatched AND until_ms <= $1", db.nowMs())
	if err != nil {
		return r.rows, translate(err, "prune events", "event")
	}
	return r.rows, translate(db.validateEventKey(ctx), "prune events", "event")
}

// validateEventKey marks the parent index of the events key valid once
// every partition has its own, that is once retention has dropped the
// pre-partitioning partition: attaching a partition's index again makes
// PostgreSQL check them all. The attach locks the partition's index, and
// every claim and read of events queues behind a wait for it, so a lock
// held past retentionLockTimeout leaves it for the next run.
func (db *DB) validateEventKey(ctx context.Context) error {
	var child *string
	err := db.pool.QueryRow(ctx, `SELECT (SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
			WHERE i.inhparent = x.indexrelid LIMIT 1)
		FROM pg_index x WHERE x.indexrelid = 'events_id_occurred'::regclass AND NOT x.indisvalid`).Scan(&child)
	if errors.Is(err, pgx.ErrNoRows) || (err == nil && child == nil) {
		return nil // valid already, or no partition yet
	}
	if err != nil {
		return err
	}
	// While a partition lacks the index, the parent just stays invalid.
	err = pgx.BeginFunc(ctx, db.pool, func(tx pgx.Tx) error {
		if err := setLockTimeout(ctx, tx, retentionLockTimeout); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, "ALTER INDEX events_id_occurred ATTACH PARTITION "+pgx.Identifier{*child}.Sanitize())
		return err
	})
	if sqlState(err) == pgLockNotAvailable {
		db.log.Warn("store: the events key's index is left for retention's next run: a long transaction held the table",
			"partition", *child)
		return nil
	}
	return err
}
