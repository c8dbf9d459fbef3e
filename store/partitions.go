package store

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// partitionsAhead is how many days of partitions, today's first, retention
// keeps made: a week, so that writers never make one, which needs the
// parent's strongest lock, even while retention is down for days.
const partitionsAhead = 7

// partitionLockKey serializes partition DDL across processes.
const partitionLockKey = 0x66757273

// dayPartitions manages a table range-partitioned by a bigint column of
// epoch milliseconds, one partition per UTC day named prefix+YYYYMMDD.
// Other partitions (such as the pre-partitioning rows of readings) are
// left alone, and no day overlapping them is created.
type dayPartitions struct {
	parent string
	prefix string
	// estimate makes prune report the planner's row estimate of a dropped
	// partition instead of counting it, for tables whose days are large.
	estimate bool
	// keep, unless nil, is asked under the parent's lock before a partition
	// is dropped; a reason keeps it (events that must not go), and what it
	// wrote through tx is committed.
	keep  func(ctx context.Context, db *DB, tx pgx.Tx, pt partition) (reason string, err error)
	known sync.Map // day start (ms) -> struct{}: partitions known to exist
}

// newDayPartitions returns the day partitions of the delivery log, of
// readings and of events.
func newDayPartitions() (attempts, readings, events *dayPartitions) {
	return &dayPartitions{parent: "delivery_attempts", prefix: "delivery_attempts_p"},
		&dayPartitions{parent: "readings", prefix: "readings_p", estimate: true},
		&dayPartitions{parent: "events", prefix: "events_p", estimate: true, keep: keepEventPartition}
}

// partition is one partition of a parent and its range [from, to) in ms;
// from is nil for MINVALUE.
type partition struct {
	name string
	from *int64
	to   int64
}

// day is a UTC day.
func utcDay(t time.Time) time.Time {
	y, m, d := t.UTC().Date()
	return time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
}

func (p *dayPartitions) name(day time.Time) string {
	return p.prefix + day.UTC().Format("20060102")
}

// ensure creates the partitions of the days of stamps (ms) not known to
// exist. It costs a map lookup when they all are.
func (p *dayPartitions) ensure(ctx context.Context, db *DB, stamps ...int64) error {
	var days []time.Time
	for _, ms := range stamps {
		if d := utcDay(time.UnixMilli(ms)); !p.isKnown(d) {
			days = append(days, d)
		}
	}
	if len(days) == 0 {
		return nil
	}
	return p.create(ctx, db.pool, days, lockTimeout)
}

// withPartitions runs write once the day partitions of stamps exist in
// each of parts: known ones cost a map lookup, and one dropped by another
// process meanwhile is found by the insert and created again.
func (db *DB) withPartitions(ctx context.Context, stamps []int64, write func() error, parts ...*dayPartitions) error {
	ensure := func() error {
		for _, p := range parts {
			if err := p.ensure(ctx, db, stamps...); err != nil {
				return err
			}
		}
		return nil
	}
	if err := ensure(); err != nil {
		return err
	}
	err := write()
	if isMissingPartition(err) {
		for _, p := range parts {
			p.forget()
		}
		if err = ensure(); err == nil {
			err = write()
		}
	}
	return err
}

// ensureAhead creates the partitions of the partitionsAhead days from now,
// waiting at most wait for the parent's lock.
func (p *dayPartitions) ensureAhead(ctx context.Context, db beginner, now time.Time, wait time.Duration) error {
	days := make([]time.Time, partitionsAhead)
	for i := range days {
		days[i] = utcDay(now).AddDate(0, 0, i)
	}
	return p.create(ctx, db, days, wait)
}

func (p *dayPartitions) isKnown(day time.Time) bool {
	_, ok := p.known.Load(day.UnixMilli())
	return ok
}

// forget drops what p believes exists, after an insert found a partition
// missing (dropped by another process).
func (p *dayPartitions) forget() { p.known.Clear() }

// beginner is a pool or a connection.
type beginner interface {
	Begin(ctx context.Context) (pgx.Tx, error)
}

// create makes the missing partitions of days, under a lock that keeps
// processes from racing on the same DDL, waiting at most wait for the
// parent's lock.
func (p *dayPartitions) create(ctx context.Context, db beginner, days []time.Time, wait time.Duration) error {
	err := pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
		if err := setLockTimeout(ctx, tx, wait); err != nil {
			return err
		}
		if err := lockPartitions(ctx, tx); err != nil {
			return err
		}
		existing, err := p.list(ctx, tx)
		if err != nil {
			return err
		}
		for _, day := range days {
			from, to := day.UnixMilli(), day.AddDate(0, 0, 1).UnixMilli()
			if overlaps(existing, from, to) {
				continue
			}
			// Names and bounds are computed here, never taken from input.
			sql := fmt.Sprintf("CREATE TABLE %s PARTITION OF %s FOR VALUES FROM (%d) TO (%d)",
				p.name(day), p.parent, from, to)
			if _, err := tx.Exec(ctx, sql); err != nil {
				return err
			}
			existing = append(existing, partition{name: p.name(day), from: &from, to: to})
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("store: create %s partitions: %w", p.parent, err)
	}
	for _, day := range days {
		p.known.Store(day.UnixMilli(), struct{}{})
	}
	return nil
}

// overlaps reports whether [from, to) meets a partition of parts. A day
// already covered, by its own partition or another, needs none.
func overlaps(parts []partition, from, to int64) bool {
	for _, pt := range parts {
		if (pt.from == nil || *pt.from < to) && from < pt.to {
			return true
		}
	}
	return false
}

// boundRE reads a range partition's bound as pg_get_expr prints it.
var boundRE = regexp.MustCompile(`^FOR VALUES FROM \((MINVALUE|'?(-?\d+)'?)\) TO \('?(-?\d+)'?\)$`)

// defaultBound is the bound of a DEFAULT partition, which an operator may
// add: it covers no range of its own, so days are made beside it, and it
// is never dropped.
const defaultBound = "DEFAULT"

type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// list returns the partitions of p's parent with their ranges, leaving
// out a DEFAULT partition.
func (p *dayPartitions) list(ctx context.Context, q querier) ([]partition, error) {
	rows, _ := q.Query(ctx, `SELECT c.relname, pg_get_expr(c.relpartbound, c.oid)
		FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
		WHERE i.inhparent = $1::regclass`, p.parent)
	type raw struct{ name, bound string }
	rs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (raw, error) {
		var x raw
		err := r.Scan(&x.name, &x.bound)
		return x, err
	})
	if err != nil {
		return nil, fmt.Errorf("store: list %s partitions: %w", p.parent, err)
	}
	parts := make([]partition, 0, len(rs))
	for _, x := range rs {
		if x.bound == defaultBound {
			continue
		}
		m := boundRE.FindStringSubmatch(x.bound)
		if m == nil {
			return nil, fmt.Errorf("store: partition %s has an unexpected bound %q", x.name, x.bound)
		}
		pt := partition{name: x.name}
		if m[1] != "MINVALUE" {
			from, _ := strconv.ParseInt(m[2], 10, 64)
			pt.from = &from
		}
		pt.to, _ = strconv.ParseInt(m[3], 10, 64)
		parts = append(parts, pt)
	}
	return parts, nil
}

// lockTimeout bounds each wait of a schema change for a table's lock: the
// creation or drop of a partition, and a migration. Every query of the
// table queues behind a waiting change, so the change gives up instead:
// the next run makes the partitions (they are made days ahead), and
// Migrate tries again (lockPatience).
const lockTimeout = 5 * time.Second

// setLockTimeout bounds tx's waits for locks to d.
func setLockTimeout(ctx context.Context, tx pgx.Tx, d time.Duration) error {
	_, err := tx.Exec(ctx, fmt.Sprintf("SET LOCAL lock_timeout = %d", d.Milliseconds()))
	return err
}

// lockPartitions takes the lock that keeps processes from racing on
// partition DDL, for the rest of tx. Set tx's lock timeout first: it bounds
// the wait for this lock too, so that no process waits without end behind
// one that holds it.
func lockPartitions(ctx context.Context, tx pgx.Tx) error {
	_, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", partitionLockKey)
	return err
}

// retentionLockTimeout bounds retention's own waits for a table's lock, as
// a write of the table queues behind each such wait: a second, where the
// request deadline is 5 s. What it could not lock waits for the next run,
// an hour later, long before it matters.
const retentionLockTimeout = time.Second

// pruned is what one prune did.
type pruned struct {
	rows int64               // held by the dropped partitions (estimated when p.estimate)
	kept map[string][]string // past the cutoff but kept by p.keep, by reason
	busy []string            // partitions, or "ahead", left for the next run: their lock was held
}

// prune creates the partitions ahead of now, then drops every partition
// that ends at or before before (unless before is zero), each in its own
// short transaction. A step whose lock is held past retentionLockTimeout
// is left for the next run (pruned.busy); any other failure is returned,
// after the other partitions were tried all the same.
func (p *dayPartitions) prune(ctx context.Context, db *DB, before time.Time) (pruned, error) {
	var r pruned
	var errs []error
	defer func() {
		if len(r.busy) > 0 {
			db.log.Warn("store: retention left partitions for its next run: a long transaction held the table",
				"table", p.parent, "partitions", r.busy)
		}
	}()
	if err := p.ensureAhead(ctx, db.pool, db.clock.Now(), retentionLockTimeout); sqlState(err) == pgLockNotAvailable {
		r.busy = append(r.busy, "ahead")
	} else if err != nil {
		errs = append(errs, err)
	}
	if before.IsZero() {
		return r, errors.Join(errs...)
	}
	parts, err := p.list(ctx, db.pool)
	if err != nil {
		return r, errors.Join(append(errs, err)...)
	}
	for _, pt := range parts {
		if pt.to > before.UnixMilli() {
			continue
		}
		n, reason, err := p.drop(ctx, db, pt)
		switch {
		case reason != "":
			if r.kept == nil {
				r.kept = map[string][]string{}
			}
			r.kept[reason] = append(r.kept[reason], pt.name)
		case sqlState(err) == pgLockNotAvailable:
			r.busy = append(r.busy, pt.name)
		case err != nil:
			errs = append(errs, err)
		default:
			r.rows += n
		}
	}
	return r, errors.Join(errs...)
}

// drop drops the partition pt, unless p.keep keeps it, and returns how
// many rows it held, or the reason it was kept.
func (p *dayPartitions) drop(ctx context.Context, db *DB, pt partition) (n int64, kept string, err error) {
	ident := pgx.Identifier{pt.name}.Sanitize()
	count := "SELECT count(*) FROM " + ident
	if p.estimate {
		count = "SELECT greatest(reltuples, 0)::bigint FROM pg_class WHERE oid = '" + ident + "'::regclass"
	}
	err = pgx.BeginFunc(ctx, db.pool, func(tx pgx.Tx) error {
		if err := setLockTimeout(ctx, tx, retentionLockTimeout); err != nil {
			return err
		}
		// Counted before the lock that every process's partition creation
		// takes too: an exact count of a day of the delivery log takes
		// seconds, and the first write of each day would wait on it. No row
		// is written into a day this old meanwhile.
		if err := tx.QueryRow(ctx, count).Scan(&n); err != nil {
			return err
		}
		if p.keep != nil {
			// Asked first without a lock, so that a partition kept takes
			// none: a lock waiting behind a long reader would make every
			// write of the table wait behind it, and the walk of the
			// partition's index happens while nothing waits.
			if kept, err = p.keep(ctx, db, tx, pt); err != nil || kept != "" {
				return err
			}
		}
		if err := lockPartitions(ctx, tx); err != nil {
			return err
		}
		if p.keep != nil {
			// The parent first, as every query locks it before its
			// partitions: no insert can then reach the partition between
			// the check and the drop.
			if _, err := tx.Exec(ctx, "LOCK TABLE ONLY "+pgx.Identifier{p.parent}.Sanitize()+" IN ACCESS EXCLUSIVE MODE"); err != nil {
				return err
			}
			if kept, err = p.keep(ctx, db, tx, pt); err != nil || kept != "" {
				return err
			}
		}
		_, err := tx.Exec(ctx, "DROP TABLE "+ident)
		return err
	})
	if err != nil {
		return 0, "", fmt.Errorf("store: drop %s partition: %w", p.parent, err)
	}
	if kept != "" {
		return 0, kept, nil
	}
	p.forget()
	return n, "", nil
}
