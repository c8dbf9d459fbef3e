package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/furrowhq/furrow"
	"github.com/furrowhq/furrow/internal/testclock"
	"github.com/furrowhq/furrow/store"
	"github.com/jackc/pgx/v5"
)

// setClock moves clock forward to at.
func setClock(clock *testclock.Clock, at time.Time) { clock.Advance(at.Sub(clock.Now())) }

// pruneThenFind runs retention at the clock's now, keeping
// furrow.AttemptRetention, and reports whether each of ids is still found.
func pruneThenFind(t *testing.T, db *store.DB, clock *testclock.Clock, ids ...string) []bool {
	t.Helper()
	ctx := context.Background()
	if _, err := db.PruneEvents(ctx, clock.Now().Add(-furrow.AttemptRetention)); err != nil {
		t.Fatal(err)
	}
	found := make([]bool, len(ids))
	for i, id := range ids {
		_, err := db.Event(ctx, id)
		if err != nil && furrow.ErrorCode(err) != furrow.ENOTFOUND {
			t.Fatal(err)
		}
		found[i] = err == nil
	}
	return found
}

// wantFound fails t unless found is want, saying when.
func wantFound(t *testing.T, when string, found []bool, want ...bool) {
	t.Helper()
	for i := range want {
		if found[i] != want[i] {
			t.Fatalf("%s: events found %v, want %v", when, found, want)
		}
	}
}

// dayHoldRows counts the rows of event_day_holds.
func dayHoldRows(t *testing.T, url string) int {
	t.Helper()
	var n int
	if err := connect(t, url).QueryRow(context.Background(), "SELECT count(*) FROM event_day_holds").Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// A redelivery since a time reads its events a page at a time; each page
// holds the days of its events past retention for as long as the chains
// it starts may run. The day before, not redelivered, goes at its time.
func TestRedeliveryPageHoldsItsEventsDays(t *testing.T) {
	ctx := context.Background()
	clock := futureClock() // 10 March 2031, a second before midnight
	db, url := newDB(t, clock)
	fx := newFixture(t, db) // no webhook: the events are stored dispatched
	day0, err := db.CreateEvent(ctx, furrow.Event{Type: furrow.EventRecommendationCreated, FarmID: fx.farm.ID,
		OccurredAtMs: clock.Now().Add(-24 * time.Hour).UnixMilli()})
	if err != nil {
		t.Fatal(err)
	}
	e, err := db.CreateEvent(ctx, furrow.Event{Type: furrow.EventTriggerFired, FarmID: fx.farm.ID})
	if err != nil || e.Pending {
		t.Fatalf("CreateEvent = %+v, %v; want a dispatched event", e, err)
	}
	next, err := db.CreateEvent(ctx, furrow.Event{Type: furrow.EventTriggerFired, FarmID: fx.farm.ID,
		OccurredAtMs: clock.Now().Add(24 * time.Hour).UnixMilli()})
	if err != nil {
		t.Fatal(err)
	}
	// An hour before 10 March passes retention, the two are redelivered,
	// a page each.
	setClock(clock, time.Date(2031, 4, 9, 23, 0, 0, 0, time.UTC))
	started := clock.Now()
	set, err := db.RedeliverySet(ctx, fx.farm.ID, []string{furrow.EventTriggerFired}, 0, 10)
	if err != nil || set.Count != 2 {
		t.Fatalf("RedeliverySet = %+v, %v", set, err)
	}
	var after *furrow.Cursor
	for _, want := range []string{e.ID, next.ID} {
		page, more, err := db.RedeliveryEvents(ctx, set, after, 1)
		if err != nil || len(page) != 1 || page[0].ID != want || (more == nil) != (want == next.ID) {
			t.Fatalf("RedeliveryEvents = %+v, %v, %v; want %s", page, more, err, want)
		}
		after = more
	}
	wantFound(t, "retention an hour before the day passes it", pruneThenFind(t, db, clock, day0.ID, e.ID), false, true)
	clock.Advance(time.Hour)
	wantFound(t, "retention once the day passes it", pruneThenFind(t, db, clock, e.ID), true)
	setClock(clock, started.Add(store.ChainSpan-time.Minute)) // past 11 March's cutoff too
	wantFound(t, "retention as the chains may still run", pruneThenFind(t, db, clock, e.ID, next.ID), true, true)
	setClock(clock, started.Add(store.ChainSpan+time.Minute))
	wantFound(t, "retention once the chains are over", pruneThenFind(t, db, clock, e.ID, next.ID), false, false)
	if n := dayHoldRows(t, url); n != 0 {
		t.Fatalf("%d holds left once their day went, want none", n)
	}
}

// A redelivery of named events (the activity of a redelivery by event id)
// holds their days until the time it asks.
func TestHoldEventDaysHoldsTheirDays(t *testing.T) {
	ctx := context.Background()
	clock := futureClock()
	db, _ := newDB(t, clock)
	fx := newFixture(t, db)
	e := storeEvent(t, db, fx)
	setClock(clock, time.Date(2031, 4, 9, 23, 0, 0, 0, time.UTC))
	started := clock.Now()
	until := started.Add(3 * 24 * time.Hour) // a schedule longer than the default
	if err := db.HoldEventDays(ctx, []furrow.Event{e.Event}, until); err != nil {
		t.Fatal(err)
	}
	if err := db.HoldEventDays(ctx, nil, until); err != nil {
		t.Fatalf("HoldEventDays of no event: %v", err)
	}
	clock.Advance(time.Hour)
	wantFound(t, "retention once the day passes it", pruneThenFind(t, db, clock, e.ID), true)
	setClock(clock, until.Add(-time.Minute))
	wantFound(t, "retention before the hold ends", pruneThenFind(t, db, clock, e.ID), true)
	setClock(clock, until.Add(time.Minute))
	wantFound(t, "retention once the hold is over", pruneThenFind(t, db, clock, e.ID), false)
}

// An event kept past retention only because it was not dispatched keeps
// its day for as long as the chain its dispatch started may run, counted
// from the first run that finds it dispatched.
func TestDispatchedLateEventHoldsItsDayForTheChain(t *testing.T) {
	ctx := context.Background()
	clock, db, url, fx := subscribedFarm(t)
	e := pendingEventPastRetention(t, db, clock, fx)
	wantFound(t, "retention before its dispatch", pruneThenFind(t, db, clock, e.ID), true)
	clock.Advance(30 * time.Minute)
	if err := db.MarkDispatched(ctx, []string{e.ID}); err != nil {
		t.Fatal(err)
	}
	clock.Advance(30 * time.Minute)
	found := clock.Now()
	wantFound(t, "retention the run after its dispatch", pruneThenFind(t, db, clock, e.ID), true)
	setClock(clock, found.Add(store.ChainSpan-time.Minute))
	wantFound(t, "retention as the chain may still run", pruneThenFind(t, db, clock, e.ID), true)
	setClock(clock, found.Add(store.ChainSpan+time.Minute))
	wantFound(t, "retention once the chain is over", pruneThenFind(t, db, clock, e.ID), false)
	if n := dayHoldRows(t, url); n != 0 {
		t.Fatalf("%d holds left once their day went, want none", n)
	}
}

// A partition kept for its undispatched events is found kept without
// taking the table's lock: a long reader of events (a report, a dump) does
// not leave it for the next run, and no write waits behind its check.
func TestKeptPartitionTakesNoLock(t *testing.T) {
	ctx := context.Background()
	clock, db, url, fx := subscribedFarm(t)
	e := pendingEventPastRetention(t, db, clock, fx)
	reader, err := connect(t, url).Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer reader.Rollback(ctx)
	if _, err := reader.Exec(ctx, "SELECT count(*) FROM events"); err != nil {
		t.Fatal(err)
	}
	wantFound(t, "retention beside a long reader", pruneThenFind(t, db, clock, e.ID), true)
	if n := dayHoldRows(t, url); n != 1 {
		t.Fatalf("%d day marks after the run, want 1: the partition was left for the next run, not found kept", n)
	}
}

// A page read by RedeliveryEvents is held in the transaction that reads it:
// a retention run between the read and the hold cannot drop the day of
// events the page returns. The window is widened here by a row lock that
// delays the hold's upsert.
func TestRedeliveryPageIsHeldAsItIsRead(t *testing.T) {
	ctx := context.Background()
	clock := futureClock()
	db, url := newDB(t, clock)
	fx := newFixture(t, db)
	e := storeEvent(t, db, fx)
	day := time.UnixMilli(e.OccurredAtMs).UTC().Truncate(24 * time.Hour).UnixMilli()
	setClock(clock, time.Date(2031, 4, 10, 1, 0, 0, 0, time.UTC)) // the day is past retention
	c := connect(t, url)
	if _, err := c.Exec(ctx, "INSERT INTO event_day_holds (day_ms, until_ms) VALUES ($1, 1)", day); err != nil {
		t.Fatal(err)
	}
	tx, err := c.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, "SELECT 1 FROM event_day_holds WHERE day_ms = $1 FOR UPDATE", day); err != nil {
		t.Fatal(err)
	}
	set, err := db.RedeliverySet(ctx, fx.farm.ID, []string{furrow.EventTriggerFired}, 0, 10)
	if err != nil || set.Count != 1 {
		t.Fatalf("set %+v %v", set, err)
	}
	type res struct {
		page []furrow.Event
		err  error
	}
	got := make(chan res, 1)
	go func() {
		p, _, err := db.RedeliveryEvents(ctx, set, nil, 10) // reads, then waits to hold
		got <- res{p, err}
	}()
	waitForALockWait(t, c)
	pruned := make(chan error, 1)
	go func() { _, err := db.PruneEvents(ctx, clock.Now().Add(-furrow.AttemptRetention)); pruned <- err }()
	// Retention's drop waits for the page's transaction (1 s at most),
	// and its removal of ended holds for the row.
	time.Sleep(2 * time.Second)
	tx.Rollback(ctx)
	r := <-got
	if err := <-pruned; err != nil {
		t.Fatal(err)
	}
	if r.err != nil || len(r.page) != 1 {
		t.Fatalf("RedeliveryEvents = %v, %v", r.page, r.err)
	}
	if _, err := db.Event(ctx, r.page[0].ID); furrow.ErrorCode(err) == furrow.ENOTFOUND {
		t.Fatalf("RedeliveryEvents returned (and held) event %s, but its day was dropped between the read and the hold", r.page[0].ID)
	}
}

// waitForALockWait waits until a session of the database waits for a lock.
func waitForALockWait(t *testing.T, c *pgx.Conn) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		var n int
		err := c.QueryRow(context.Background(), `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock'`).Scan(&n)
		if err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			return
		}
	}
	t.Fatal("no session waited for a lock within 10 s")
}

// storeEvent stores an event of fx's farm at the clock's now.
func storeEvent(t *testing.T, db *store.DB, fx fixture) furrow.OutboxEvent {
	t.Helper()
	e, err := db.CreateEvent(context.Background(), furrow.Event{Type: furrow.EventTriggerFired, FarmID: fx.farm.ID})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// pendingEventPastRetention stores an event its farm's webhook is to get,
// not yet dispatched, and moves the clock to when its day is past
// retention.
func pendingEventPastRetention(t *testing.T, db *store.DB, clock *testclock.Clock, fx fixture) furrow.OutboxEvent {
	t.Helper()
	e, err := db.CreateEvent(context.Background(), furrow.Event{Type: furrow.EventTriggerFired, FarmID: fx.farm.ID})
	if err != nil || !e.Pending {
		t.Fatalf("CreateEvent = %+v, %v; want a pending event", e, err)
	}
	setClock(clock, time.Date(2031, 4, 10, 1, 0, 0, 0, time.UTC))
	return e
}
