package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
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

// holdsUndispatched is the keep rule of event partitions: one that holds
// an undispatched event is kept, however old, and said so in the log.
func holdsUndispatched(ctx context.Context, tx pgx.Tx, partition string) (bool, error) {
	var held bool
	err := tx.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM "+pgx.Identifier{partition}.Sanitize()+
		" WHERE dispatched_at_ms IS NULL)").Scan(&held)
	return held, err
}

// PruneEvents drops the day partitions of events that end at or before
// before, except those still holding an undispatched event, and returns
// about how many events went. Whole days go, so the cost does not grow with
// the table, no row is deleted one by one, and events are kept up to a day
// longer than asked. It first raises the outbox floor and creates the
// partitions of the next days.
func (db *DB) PruneEvents(ctx context.Context, before time.Time) (int64, error) {
	if _, err := db.raiseOutboxFloor(ctx); err != nil {
		return 0, err
	}
	r, err := db.eventParts.prune(ctx, db, before)
	if len(r.kept) > 0 {
		db.log.Warn("store: event partitions past retention kept: they hold undispatched events",
			"partitions", r.kept)
	}
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
