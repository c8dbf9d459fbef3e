package store_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/furrowhq/furrow"
	"github.com/furrowhq/furrow/internal/testclock"
	"github.com/furrowhq/furrow/store"
)

// partitionsOf lists the partitions of parent by name, with their row
// counts.
func partitionsOf(t *testing.T, url, parent string) map[string]int {
	t.Helper()
	ctx := context.Background()
	conn := connect(t, url)
	rows, _ := conn.Query(ctx, `SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
		WHERE i.inhparent = $1::regclass`, parent)
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, n := range names {
		var c int
		if err := conn.QueryRow(ctx, "SELECT count(*) FROM "+pgx.Identifier{n}.Sanitize()).Scan(&c); err != nil {
			t.Fatal(err)
		}
		out[n] = c
	}
	return out
}

// eventsOnDays stores one pending event at the clock's now on each of n
// days, advancing the clock a day after each.
func eventsOnDays(t *testing.T, db *store.DB, clock interface{ Advance(time.Duration) }, farm uuid.UUID, n int) []furrow.Event {
	t.Helper()
	var out []furrow.Event
	for range n {
		e, err := db.CreateEvent(context.Background(), furrow.Event{Type: furrow.EventTriggerFired, FarmID: farm})
		if err != nil || !e.Pending {
			t.Fatalf("CreateEvent = %+v, %v; want a pending event", e, err)
		}
		out = append(out, e.Event)
		clock.Advance(24 * time.Hour)
	}
	return out
}

func TestPruneEventsDropsDaysButKeepsUndispatched(t *testing.T) {
	ctx := context.Background()
	clock, db, url, fx := subscribedFarm(t)          // 10 March 2031, a second before midnight
	all := eventsOnDays(t, db, clock, fx.farm.ID, 4) // 10, 11, 12, 13 March
	if err := db.MarkDispatched(ctx, []string{all[0].ID, all[2].ID, all[3].ID}); err != nil {
		t.Fatal(err)
	}
	// Each is read once first, so that the pool's connections hold the
	// statement of its day's partition when the partition goes.
	for i, e := range all {
		if _, err := db.Event(ctx, e.ID); err != nil {
			t.Fatalf("event of day %d before pruning: %v", i, err)
		}
	}
	// Keep from 13 March 06:00: 10 and 12 March go, 11 March holds an
	// undispatched event and stays, 13 March is not over.
	if _, err := db.PruneEvents(ctx, time.Date(2031, 3, 13, 6, 0, 0, 0, time.UTC)); err != nil {
		t.Fatal(err)
	}
	parts := partitionsOf(t, url, "events")
	for _, gone := range []string{"events_p20310310", "events_p20310312"} {
		if _, ok := parts[gone]; ok {
			t.Fatalf("partitions %v: %s should be dropped", parts, gone)
		}
	}
	if parts["events_p20310311"] != 1 || parts["events_p20310313"] != 1 {
		t.Fatalf("partitions %v: 11 March (undispatched) and 13 March (recent) should stay", parts)
	}
	for _, day := range []string{"20310314", "20310315", "20310316"} {
		if _, ok := parts["events_p"+day]; !ok {
			t.Fatalf("partitions %v: want events_p%s created ahead", parts, day)
		}
	}
	for i, wantKept := range []bool{false, true, false, true} {
		_, err := db.Event(ctx, all[i].ID)
		if (err == nil) != wantKept || (!wantKept && furrow.ErrorCode(err) != furrow.ENOTFOUND) {
			t.Fatalf("event of day %d: err %v, want kept = %v (else not_found)", i, err, wantKept)
		}
	}
	// The floor rose to the undispatched event; once dispatched, its day
	// is kept while the chain its dispatch started may run, then goes, and
	// the floor follows.
	if floor, _ := store.OutboxFloor(ctx, db); floor != all[1].OccurredAtMs {
		t.Fatalf("outbox floor %d, want the undispatched event's time %d", floor, all[1].OccurredAtMs)
	}
	if err := db.MarkDispatched(ctx, []string{all[1].ID}); err != nil {
		t.Fatal(err)
	}
	for i, wantKept := range []bool{true, false} {
		clock.Advance(time.Duration(i) * store.ChainSpan)
		if _, err := db.PruneEvents(ctx, time.Date(2031, 3, 13, 6, 0, 0, 0, time.UTC)); err != nil {
			t.Fatal(err)
		}
		if _, ok := partitionsOf(t, url, "events")["events_p20310311"]; ok != wantKept {
			t.Fatalf("11 March kept = %v once its event was dispatched, want %v", ok, wantKept)
		}
	}
	if floor, _ := store.OutboxFloor(ctx, db); floor != clock.Now().Add(-store.FloorLag).UnixMilli() {
		t.Fatalf("outbox floor %d with nothing undispatched, want FloorLag before now", floor)
	}
}

func TestOldPendingEventLowersOutboxFloor(t *testing.T) {
	ctx := context.Background()
	clock, db, _, fx := subscribedFarm(t)
	clock.Advance(72 * time.Hour)
	floor, err := store.RaiseOutboxFloor(ctx, db)
	if err != nil || floor != clock.Now().Add(-store.FloorLag).UnixMilli() {
		t.Fatalf("raised floor %d, %v", floor, err)
	}
	// An event that occurred days ago, stored now, waits for the dispatcher.
	old := time.Date(2031, 3, 9, 12, 0, 0, 0, time.UTC).UnixMilli()
	e, err := db.CreateEvent(ctx, furrow.Event{Type: furrow.EventTriggerFired, FarmID: fx.farm.ID, OccurredAtMs: old})
	if err != nil || !e.Pending {
		t.Fatalf("CreateEvent = %+v, %v", e, err)
	}
	wantFloorLoweredAndClaimed(t, db, old, e.ID, "the old event")
	if n, oldest, err := db.OutboxBacklog(ctx); err != nil || n != 1 || oldest != old {
		t.Fatalf("OutboxBacklog = %d, %d, %v", n, oldest, err)
	}
	// Retention raises the floor no further than the undispatched event.
	if floor, _ := store.RaiseOutboxFloor(ctx, db); floor != old {
		t.Fatalf("raised floor %d past the undispatched event at %d", floor, old)
	}
}

// wantFloorLoweredAndClaimed fails t unless the outbox floor was lowered to
// floor, the time of the event id (named what), and a claim then finds that
// event and no other.
func wantFloorLoweredAndClaimed(t *testing.T, db *store.DB, floor int64, id, what string) {
	t.Helper()
	ctx := context.Background()
	if got, _ := store.OutboxFloor(ctx, db); got != floor {
		t.Fatalf("outbox floor %d, want lowered to %s's time %d", got, what, floor)
	}
	got, err := db.ClaimEvents(ctx, furrow.Claim{Owner: uuid.New(), Limit: 10, Lease: time.Minute})
	if err != nil || len(got) != 1 || got[0].ID != id {
		t.Fatalf("ClaimEvents = %+v, %v; want %s", got, err, what)
	}
}

// planRelations returns the relations an EXPLAIN (FORMAT JSON) plan reads.
// The target tables an update lists are left out: a generic plan of
// PostgreSQL 15 names every partition there, though it scans only those
// that its start did not prune.
func planRelations(t *testing.T, conn *pgx.Conn, sql string, args ...any) []string {
	t.Helper()
	return planNames(t, conn, "Relation Name", sql, args...)
}

// planIndexes returns the indexes the plan of sql reads, sorted.
func planIndexes(t *testing.T, conn *pgx.Conn, sql string, args ...any) []string {
	t.Helper()
	return planNames(t, conn, "Index Name", sql, args...)
}

// planNames returns the values of field in the nodes of sql's plan,
// sorted, each once.
func planNames(t *testing.T, conn *pgx.Conn, field, sql string, args ...any) []string {
	t.Helper()
	var plan []byte
	if err := conn.QueryRow(context.Background(), "EXPLAIN (FORMAT JSON) "+sql, args...).Scan(&plan); err != nil {
		t.Fatal(err)
	}
	var doc any
	if err := json.Unmarshal(plan, &doc); err != nil {
		t.Fatal(err)
	}
	var names []string
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			if n, ok := x[field].(string); ok && !slices.Contains(names, n) {
				names = append(names, n)
			}
			for k, c := range x {
				if k != "Target Tables" {
					walk(c)
				}
			}
		case []any:
			for _, c := range x {
				walk(c)
			}
		}
	}
	walk(doc)
	slices.Sort(names)
	return names
}

func TestOutboxQueriesReadOnlyPartitionsFromTheFloor(t *testing.T) {
	ctx := context.Background()
	clock, db, url, fx := subscribedFarm(t)
	all := eventsOnDays(t, db, clock, fx.farm.ID, 4) // 10 to 13 March
	if err := db.MarkDispatched(ctx, []string{all[0].ID, all[1].ID}); err != nil {
		t.Fatal(err)
	}
	floor, err := store.RaiseOutboxFloor(ctx, db)
	if err != nil || floor != all[2].OccurredAtMs {
		t.Fatalf("floor %d, %v; want the oldest undispatched event's time", floor, err)
	}
	conn := connect(t, url)
	parts := partitionsOf(t, url, "events")
	if _, ok := parts["events_p20310310"]; !ok {
		t.Fatalf("partitions %v: want the dispatched days still there", parts)
	}
	check := func(what string, got []string) {
		t.Helper()
		for _, name := range got {
			if strings.HasPrefix(name, "events_p") && name < "events_p20310312" {
				t.Errorf("%s reads %s, before the floor's day: %v", what, name, got)
			}
		}
		if !slices.Contains(got, "events_p20310312") {
			t.Errorf("%s does not read the floor's day: %v", what, got)
		}
	}
	now := clock.Now().UnixMilli()
	claimArgs := []any{now, 10, now + 60000, uuid.New(), []uuid.UUID{}, floor}
	check("claim", planRelations(t, conn, store.ClaimSQL, claimArgs...))
	check("backlog", planRelations(t, conn, store.BacklogSQL, floor))

	// A generic plan prunes when it starts, as a cached statement does.
	if _, err := conn.Exec(ctx, "SET plan_cache_mode = force_generic_plan"); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, "PREPARE backlog(bigint) AS "+store.BacklogSQL); err != nil {
		t.Fatal(err)
	}
	check("generic backlog", planRelations(t, conn, fmt.Sprintf("EXECUTE backlog(%d)", floor)))
	if _, err := conn.Exec(ctx, "PREPARE claim(bigint, int, bigint, uuid, uuid[], bigint) AS "+store.ClaimSQL); err != nil {
		t.Fatal(err)
	}
	check("generic claim", planRelations(t, conn, fmt.Sprintf("EXECUTE claim(%d, 10, %d, '%s', '{}', %d)", now, now+60000, uuid.New(), floor)))
}

func TestEventByIDFindsItsPartition(t *testing.T) {
	ctx := context.Background()
	clock := futureClock()
	db, _ := newDB(t, clock)
	fx := newFixture(t, db)
	hook, err := db.CreateWebhook(ctx, furrow.Webhook{FarmID: fx.farm.ID, URL: "https://hooks.example.com/in",
		Secret: furrow.WebhookSecretPrefix + "c2VjcmV0", Enabled: true})
	if err != nil {
		t.Fatal(err)
	}
	// A v7 id whose time is the event's, one whose time is another day,
	// and a random v4 id.
	at := clock.Now().UnixMilli()
	ids := []string{
		furrow.EventID(furrow.NewEventUUID(at)),
		furrow.EventID(furrow.NewEventUUID(at - 5*86400000)),
		furrow.EventID(uuid.New()),
	}
	for _, id := range ids {
		e, err := db.CreateEvent(ctx, furrow.Event{ID: id, Type: furrow.EventTriggerFired, FarmID: fx.farm.ID, OccurredAtMs: at})
		if err != nil {
			t.Fatal(err)
		}
		got, err := db.Event(ctx, id)
		if err != nil || got.ID != id || got.OccurredAtMs != e.OccurredAtMs {
			t.Fatalf("Event(%s) = %+v, %v", id, got, err)
		}
		// A delivery attempt's batched read finds it too, even when the
		// partition its id names is not there and ended the batch.
		p, err := db.AttemptParts(ctx, hook.ID, id, false)
		if err != nil || !p.WebhookFound || p.Webhook.ID != hook.ID || !p.EventFound || p.Event.ID != id {
			t.Fatalf("AttemptParts(%s) = %+v, %v", id, p, err)
		}
		// The key is (id, occurred_at_ms): the same pair again conflicts.
		_, err = db.CreateEvent(ctx, furrow.Event{ID: id, Type: furrow.EventTriggerFired, FarmID: fx.farm.ID, OccurredAtMs: at})
		wantCode(t, err, furrow.ECONFLICT)
	}
	// A new event's id holds its time.
	e, err := db.CreateEvent(ctx, furrow.Event{Type: furrow.EventTriggerFired, FarmID: fx.farm.ID})
	if err != nil {
		t.Fatal(err)
	}
	u, _ := furrow.ParseEventID(e.ID)
	if ms, ok := furrow.EventUUIDTime(u); !ok || ms != e.OccurredAtMs {
		t.Fatalf("new event id %s holds %d, %v; want %d", e.ID, ms, ok, e.OccurredAtMs)
	}
}

func TestMigrationPartitionsPopulatedEvents(t *testing.T) {
	ctx := context.Background()
	url, conn := dbUpTo(t, "0010_webhooks_secret_key_id.sql")
	farm := uuid.New()
	now := time.Now().UnixMilli()
	setup := []string{
		fmt.Sprintf("INSERT INTO farms (id, name, created_at_ms) VALUES ('%s', 'f', 0)", farm),
		// 3,000 events over the last 30 days, oldest first; every 100th
		// is not yet dispatched.
		fmt.Sprintf(`INSERT INTO events (id, type, farm_id, occurred_at_ms, data, dispatched_at_ms)
			SELECT gen_random_uuid(), CASE WHEN g %% 3 = 0 THEN 'trigger.fired' ELSE 'metric.value' END, '%s',
				%d - (3000 - g)::bigint * 864000, jsonb_build_object('n', g), CASE WHEN g %% 100 = 0 THEN NULL ELSE 1 END
			FROM generate_series(1, 3000) g`, farm, now),
	}
	for _, q := range setup {
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	var beforeSum, beforeMax int64
	if err := conn.QueryRow(ctx, "SELECT sum(seq), max(seq) FROM events").Scan(&beforeSum, &beforeMax); err != nil {
		t.Fatal(err)
	}
	var oldID uuid.UUID
	if err := conn.QueryRow(ctx, "SELECT id FROM events ORDER BY seq LIMIT 1").Scan(&oldID); err != nil {
		t.Fatal(err)
	}

	if err := store.Migrate(ctx, url); err != nil {
		t.Fatalf("Migrate over a populated events table: %v", err)
	}

	kind, n, afterSum := tableShape(ctx, t, conn, "events")
	if kind != "p" || n != 3000 || afterSum != beforeSum {
		t.Fatalf("after migration: relkind %q, %d events, seq sum %d; want partitioned, 3000, %d", kind, n, afterSum, beforeSum)
	}
	if parts := partitionsOf(t, url, "events"); parts["events_p_legacy"] != 3000 {
		t.Fatalf("partitions %v: want the old rows in events_p_legacy", parts)
	}
	if fks := foreignKeysOf(ctx, t, conn, "events"); len(fks) != 0 {
		t.Fatalf("foreign keys %v left on events and its partitions, want none (migration 0016)", fks)
	}
	assertOtherTypesIndex(ctx, t, conn)

	clock := futureClock()
	db, err := store.Open(ctx, url, store.Options{Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	// Old random ids are found; new events follow the old sequence, in
	// day partitions, and list with the old ones newest first.
	if e, err := db.Event(ctx, furrow.EventID(oldID)); err != nil || e.FarmID != farm {
		t.Fatalf("Event(old id) = %+v, %v", e, err)
	}
	e, err := db.CreateEvent(ctx, furrow.Event{Type: furrow.EventTriggerFired, FarmID: farm})
	if err != nil {
		t.Fatal(err)
	}
	var newSeq int64
	if err := conn.QueryRow(ctx, "SELECT seq FROM events_p20310310").Scan(&newSeq); err != nil || newSeq <= beforeMax {
		t.Fatalf("new event's seq %d (%v), want above %d in its day's partition", newSeq, err, beforeMax)
	}
	es, _, err := db.Events(ctx, furrow.EventFilter{FarmID: farm, Type: furrow.EventTriggerFired, Limit: 3})
	if err != nil || len(es) != 3 || es[0].ID != e.ID || es[1].OccurredAtMs < es[2].OccurredAtMs {
		t.Fatalf("Events = %+v, %v; want the new one first, then the old ones newest first", es, err)
	}
	assertTypeFilterReadsOtherTypesIndex(t, conn, furrow.EventFilter{FarmID: farm, Type: furrow.EventTriggerFired, Limit: 3})

	// The 30 undispatched events are claimed; until then retention keeps
	// their partition, and once it is gone the key index is whole.
	got, err := db.ClaimEvents(ctx, furrow.Claim{Owner: uuid.New(), Limit: 100, Lease: time.Minute})
	if err != nil || len(got) != 30 {
		t.Fatalf("claimed %d old undispatched events (%v), want 30", len(got), err)
	}
	if _, err := db.PruneEvents(ctx, clock.Now()); err != nil {
		t.Fatal(err)
	}
	if _, ok := partitionsOf(t, url, "events")["events_p_legacy"]; !ok {
		t.Fatal("the pre-partitioning partition went with undispatched events in it")
	}
	if err := db.MarkDispatched(ctx, ids(got)); err != nil {
		t.Fatal(err)
	}
	if _, err := db.PruneEvents(ctx, clock.Now()); err != nil {
		t.Fatal(err)
	}
	if _, ok := partitionsOf(t, url, "events")["events_p_legacy"]; !ok {
		t.Fatal("the pre-partitioning partition went under the chains of its events just dispatched")
	}
	clock.Advance(store.ChainSpan)
	if _, err := db.PruneEvents(ctx, clock.Now()); err != nil {
		t.Fatal(err)
	}
	var valid bool
	if err := conn.QueryRow(ctx, "SELECT indisvalid FROM pg_index WHERE indexrelid = 'events_id_occurred'::regclass").Scan(&valid); err != nil || !valid {
		t.Fatalf("events_id_occurred valid = %v (%v) once the old partition is gone", valid, err)
	}
	if _, ok := partitionsOf(t, url, "events")["events_p_legacy"]; ok {
		t.Fatal("the pre-partitioning partition stayed once its events were dispatched")
	}
	// With a valid key, a re-insert naming it as the conflict target is a no-op.
	tag, err := conn.Exec(ctx, `INSERT INTO events (id, type, farm_id, occurred_at_ms, data)
		SELECT id, type, farm_id, occurred_at_ms, data FROM events ON CONFLICT (id, occurred_at_ms) DO NOTHING`)
	if err != nil || tag.RowsAffected() != 0 {
		t.Fatalf("re-insert: %v, %v", tag, err)
	}
}

// ids returns the ids of es.
func ids(es []furrow.Event) []string {
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = e.ID
	}
	return out
}

func TestHeldEventsArePending(t *testing.T) {
	ctx := context.Background()
	clock, db, _, fx := subscribedFarm(t)
	var ids []string
	for range 2 {
		e, err := db.CreateEvent(ctx, furrow.Event{Type: furrow.EventTriggerFired, FarmID: fx.farm.ID})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, e.ID)
		clock.Advance(time.Second)
	}
	first := clock.Now().Add(-2 * time.Second).UnixMilli()
	owner := uuid.New()
	if _, err := db.ClaimEvents(ctx, furrow.Claim{Owner: owner, Limit: 2, Lease: time.Minute}); err != nil {
		t.Fatal(err)
	}
	if n, err := db.HoldEvents(ctx, owner, []furrow.Hold{{EventID: ids[0], For: time.Hour}}); err != nil || n != 1 {
		t.Fatalf("HoldEvents = %d, %v", n, err)
	}
	// A held event is not yet handed to Temporal: it is pending, and ages
	// the backlog like any other.
	if n, oldest, err := db.OutboxBacklog(ctx); err != nil || n != 2 || oldest != first {
		t.Fatalf("OutboxBacklog = %d, %d, %v; want 2 pending, the oldest at %d", n, oldest, err, first)
	}
}

// subscribedFarm is a database at futureClock's time with a farm whose
// webhook subscribes to every type, so that its events wait for the
// dispatcher.
func subscribedFarm(t *testing.T) (*testclock.Clock, *store.DB, string, fixture) {
	t.Helper()
	clock := futureClock()
	db, url := newDB(t, clock)
	fx := newFixture(t, db)
	subscribe(t, db, fx)
	return clock, db, url, fx
}

// assertOtherTypesIndex checks migration 0017's end: the whole type index
// of events is gone, and every partition has its index of other types,
// attached, so that the parent's is valid.
func assertOtherTypesIndex(ctx context.Context, t *testing.T, conn *pgx.Conn) {
	t.Helper()
	assertPartitionIndex(ctx, t, conn, "0017", "events", "events_farm_other_occurred", "events_farm_type_occurred")
}

// assertPartitionIndex checks the end of a migration that builds index on
// every partition of table in place of replaced: replaced is gone, and
// every partition has its index, attached, so that the parent's is valid.
func assertPartitionIndex(ctx context.Context, t *testing.T, conn *pgx.Conn, migration, table, index, replaced string) {
	t.Helper()
	var old *string
	var valid bool
	var missing int
	err := conn.QueryRow(ctx, `SELECT to_regclass($3)::text,
		(SELECT indisvalid FROM pg_index WHERE indexrelid = $2::regclass),
		(SELECT count(*) FROM pg_inherits i WHERE i.inhparent = $1::regclass AND NOT EXISTS (
			SELECT 1 FROM pg_inherits ii JOIN pg_index x ON x.indexrelid = ii.inhrelid
			WHERE ii.inhparent = $2::regclass AND x.indrelid = i.inhrelid))`, table, index, replaced).Scan(&old, &valid, &missing)
	if err != nil {
		t.Fatal(err)
	}
	if old != nil || !valid || missing != 0 {
		t.Fatalf("after migration %s: %s left %v, %s valid %v, %d partitions without it; want gone, valid, 0",
			migration, replaced, old != nil, index, valid, missing)
	}
}

// assertTypeFilterReadsOtherTypesIndex checks that Events filtered by a
// type other than metric.value reads only the partitions' indexes of other
// types, with a custom plan and with a generic one.
func assertTypeFilterReadsOtherTypesIndex(t *testing.T, conn *pgx.Conn, f furrow.EventFilter) {
	t.Helper()
	ctx := context.Background()
	// The tables are small: without this a scan of the heap is cheaper.
	if _, err := conn.Exec(ctx, "SET enable_seqscan = off"); err != nil {
		t.Fatal(err)
	}
	defer conn.Exec(ctx, "RESET enable_seqscan")
	q, args := store.EventsQuery(f)
	check := func(what string, got []string) {
		t.Helper()
		if len(got) == 0 {
			t.Fatalf("%s reads no index", what)
		}
		for _, name := range got {
			var other bool
			err := conn.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_inherits
				WHERE inhrelid = $1::regclass AND inhparent = 'events_farm_other_occurred'::regclass)`, name).Scan(&other)
			if err != nil || !other {
				t.Fatalf("%s reads %v; want only the indexes of other types (%s: %v)", what, got, name, err)
			}
		}
	}
	check("custom plan", planIndexes(t, conn, q, args...))
	if _, err := conn.Exec(ctx, "SET plan_cache_mode = force_generic_plan"); err != nil {
		t.Fatal(err)
	}
	defer conn.Exec(ctx, "RESET plan_cache_mode")
	if _, err := conn.Exec(ctx, "PREPARE typed AS "+q); err != nil {
		t.Fatal(err)
	}
	defer conn.Exec(ctx, "DEALLOCATE typed")
	check("generic plan", planIndexes(t, conn, fmt.Sprintf("EXECUTE typed('%s', '%s', %d)", f.FarmID, f.Type, args[2])))
}

// An interrupted run of migration 0017 is finished by the next: a
// partition's index of other types left built but not attached is
// attached, not built again, and the whole type index is then dropped.
func TestMigrationOtherTypesIndexFinishesAnInterruptedRun(t *testing.T) {
	ctx := context.Background()
	url, conn := dbUpTo(t, "0016_readings_events_unchecked_keys.sql")
	setup := []string{
		"CREATE TABLE events_p_early PARTITION OF events FOR VALUES FROM (0) TO (86400000)",
		`INSERT INTO events (id, type, farm_id, occurred_at_ms, data, dispatched_at_ms)
			SELECT gen_random_uuid(), CASE WHEN g % 2 = 0 THEN 'trigger.fired' ELSE 'metric.value' END,
				gen_random_uuid(), g, '{}', 1 FROM generate_series(1, 200) g`,
	}
	for _, q := range setup {
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	if err := store.MigrateUpTo(ctx, url, "0017_events_type_index_partial.sql"); err != nil {
		t.Fatal(err)
	}
	// What a run stopped after the build and before the attach leaves.
	if _, err := conn.Exec(ctx, `CREATE INDEX events_p_early_farm_other_occurred ON events_p_early
		(farm_id, type, occurred_at_ms, seq) WHERE type <> 'metric.value'`); err != nil {
		t.Fatal(err)
	}
	var oid uint32
	if err := conn.QueryRow(ctx, "SELECT 'events_p_early_farm_other_occurred'::regclass::oid").Scan(&oid); err != nil {
		t.Fatal(err)
	}
	if err := store.Migrate(ctx, url); err != nil {
		t.Fatalf("Migrate after an interrupted 0017: %v", err)
	}
	assertOtherTypesIndex(ctx, t, conn)
	var after uint32
	if err := conn.QueryRow(ctx, "SELECT 'events_p_early_farm_other_occurred'::regclass::oid").Scan(&after); err != nil || after != oid {
		t.Fatalf("the partition's index is %d (%v), want the one left, %d, attached", after, err, oid)
	}
	if err := store.Migrate(ctx, url); err != nil {
		t.Fatalf("Migrate again: %v", err)
	}
}

// A page of events after a cursor reads only the day partitions up to the
// cursor's day: the later days' are pruned from the plan.
func TestEventsPageSkipsPartitionsAfterTheCursor(t *testing.T) {
	ctx := context.Background()
	clock := futureClock()
	db, url := newDB(t, clock)
	fx := newFixture(t, db)
	conn := connect(t, url)
	at := clock.Now().UnixMilli()
	var ids []string // one event a day, oldest first
	for d := range int64(3) {
		e, err := db.CreateEvent(ctx, furrow.Event{Type: furrow.EventTriggerFired, FarmID: fx.farm.ID, OccurredAtMs: at + d*86400000})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, e.ID)
	}
	partition := func(id string) string {
		u, _ := furrow.ParseEventID(id)
		var name string
		if err := conn.QueryRow(ctx, "SELECT tableoid::regclass::text FROM events WHERE id = $1", u).Scan(&name); err != nil {
			t.Fatal(err)
		}
		return name
	}
	f := furrow.EventFilter{FarmID: fx.farm.ID, Limit: 2}
	es, next, err := db.Events(ctx, f)
	if err != nil || len(es) != 2 || es[1].ID != ids[1] || next == nil {
		t.Fatalf("first page %+v, cursor %v, %v; want the two newest events and a cursor", es, next, err)
	}
	f.Before = next
	if es, next, err = db.Events(ctx, f); err != nil || len(es) != 1 || es[0].ID != ids[0] || next != nil {
		t.Fatalf("second page %+v, cursor %v, %v; want the oldest event and no cursor", es, next, err)
	}
	q, args := store.EventsQuery(f)
	read := planNames(t, conn, "Relation Name", q, args...)
	if !slices.Contains(read, partition(ids[1])) || slices.Contains(read, partition(ids[2])) {
		t.Fatalf("a page after a cursor in %s reads %v; want that partition and not the next day's, %s", partition(ids[1]), read, partition(ids[2]))
	}
}

// Like the events list's, a page of readings or of a webhook's delivery
// log after a cursor reads no partition of a day after the cursor's.
func TestReadingsAndAttemptsPagesSkipPartitionsAfterTheCursor(t *testing.T) {
	ctx := context.Background()
	clock := futureClock()
	db, url := newDB(t, clock)
	fx := newFixture(t, db)
	conn := connect(t, url)
	hook := subscribe(t, db, fx)
	day := clock.Now().UnixMilli()
	for d := range int64(3) {
		if _, _, err := db.CreateReading(ctx, furrow.Reading{FarmID: fx.farm.ID, DeviceID: fx.device.ID, MetricID: 1, Value: "1"}, nil); err != nil {
			t.Fatal(err)
		}
		err := db.AddAttempt(ctx, furrow.Attempt{WebhookID: hook.ID, EventID: furrow.NewEventID(), Attempt: 1, AtMs: day + d*86400000})
		if err != nil {
			t.Fatal(err)
		}
		clock.Advance(24 * time.Hour)
	}
	// The partitions of the rows of the days after the first.
	later := func(table, column string) []string {
		rows, _ := conn.Query(ctx, fmt.Sprintf("SELECT DISTINCT tableoid::regclass::text FROM %s WHERE %s > $1", table, column), day)
		names, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil || len(names) != 2 {
			t.Fatalf("%s: later partitions %v, %v; want 2", table, names, err)
		}
		return names
	}
	cursor := &furrow.Cursor{TimestampMs: day, Seq: math.MaxInt64}
	rq, rargs := store.ReadingsQuery(furrow.ReadingFilter{FarmID: fx.farm.ID, Before: cursor, Limit: 10})
	aq, aargs := store.AttemptsQuery(furrow.AttemptFilter{WebhookID: hook.ID, Before: cursor, Limit: 10})
	for _, c := range []struct {
		table, column, q string
		args             []any
	}{{"readings", "ts_ms", rq, rargs}, {"delivery_attempts", "at_ms", aq, aargs}} {
		read := planNames(t, conn, "Relation Name", c.q, c.args...)
		for _, p := range later(c.table, c.column) {
			if slices.Contains(read, p) {
				t.Errorf("%s: a page after a cursor on the first day reads %v, among them %s of a later day", c.table, read, p)
			}
		}
	}
}

// On a database upgraded with events in it, retention attaches a
// partition's key index again each run until the old rows are gone (see
// validateEventKey). Behind a long reader of events that attach gives up
// after retentionLockTimeout, so claims and reads of events, which would
// queue behind its wait, go on.
func TestPruneEventsKeyIndexGivesUpBehindALongReader(t *testing.T) {
	ctx := context.Background()
	url, conn := dbUpTo(t, "0010_webhooks_secret_key_id.sql")
	farm := uuid.New()
	for _, q := range []string{
		fmt.Sprintf("INSERT INTO farms (id, name, created_at_ms) VALUES ('%s', 'f', 0)", farm),
		// One undispatched event keeps the old rows' partition.
		fmt.Sprintf(`INSERT INTO events (id, type, farm_id, occurred_at_ms, data, dispatched_at_ms)
			SELECT gen_random_uuid(), 'trigger.fired', '%s', %d - g * 1000, '{}', CASE WHEN g = 5 THEN NULL ELSE 1 END
			FROM generate_series(1, 100) g`, farm, time.Now().UnixMilli()),
	} {
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	if err := store.Migrate(ctx, url); err != nil {
		t.Fatal(err)
	}
	db, err := store.Open(ctx, url, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	reader := connect(t, url)
	tx, err := reader.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if _, err := tx.Exec(ctx, "SELECT count(*) FROM events"); err != nil {
		t.Fatal(err)
	}
	bounded, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	began := time.Now()
	if _, err := db.PruneEvents(bounded, time.Now().Add(-30*24*time.Hour)); err != nil {
		t.Fatalf("PruneEvents behind a reader: %v; want the index left for the next run", err)
	}
	if took := time.Since(began); took > 4*time.Second {
		t.Fatalf("PruneEvents gave up after %s, want about a second", took)
	}
	claim, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if got, err := db.ClaimEvents(claim, furrow.Claim{Owner: uuid.New(), Limit: 10, Lease: time.Minute}); err != nil || len(got) != 1 {
		t.Fatalf("ClaimEvents behind the reader: %d events, %v; want the undispatched one", len(got), err)
	}
}
