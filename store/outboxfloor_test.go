package store_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/furrowhq/furrow"
	"github.com/furrowhq/furrow/store"
)

func TestClaimsRaiseTheOutboxFloorEveryFewSeconds(t *testing.T) {
	ctx := context.Background()
	clock, db, _, fx := subscribedFarm(t)
	claim := furrow.Claim{Owner: uuid.New(), Limit: 10, Lease: time.Minute}
	dispatchOne := func() {
		t.Helper()
		e, err := db.CreateEvent(ctx, furrow.Event{Type: furrow.EventTriggerFired, FarmID: fx.farm.ID})
		if err != nil || !e.Pending {
			t.Fatalf("CreateEvent = %+v, %v", e, err)
		}
		if err := db.MarkDispatched(ctx, []string{e.ID}); err != nil {
			t.Fatal(err)
		}
	}
	dispatchOne()
	clock.Advance(time.Hour)
	if _, err := db.ClaimEvents(ctx, claim); err != nil {
		t.Fatal(err)
	}
	want := clock.Now().Add(-store.FloorLag).UnixMilli()
	if floor, _ := store.OutboxFloor(ctx, db); floor != want {
		t.Fatalf("floor after the first claim %d, want FloorLag before now, %d", floor, want)
	}
	dispatchOne()
	clock.Advance(store.RaiseEvery / 2)
	if _, err := db.ClaimEvents(ctx, claim); err != nil {
		t.Fatal(err)
	}
	if floor, _ := store.OutboxFloor(ctx, db); floor != want {
		t.Fatalf("floor %d raised again before RaiseEvery, want %d", floor, want)
	}
	clock.Advance(store.RaiseEvery / 2)
	if _, _, err := db.OutboxBacklog(ctx); err != nil {
		t.Fatal(err)
	}
	want = clock.Now().Add(-store.FloorLag).UnixMilli()
	if floor, _ := store.OutboxFloor(ctx, db); floor != want {
		t.Fatalf("floor %d after RaiseEvery, want %d", floor, want)
	}
	// An event stored now is above the raised floor, and claimed.
	e, err := db.CreateEvent(ctx, furrow.Event{Type: furrow.EventTriggerFired, FarmID: fx.farm.ID})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := db.ClaimEvents(ctx, claim); err != nil || len(got) != 1 || got[0].ID != e.ID {
		t.Fatalf("ClaimEvents = %+v, %v; want the new event", got, err)
	}
}

// A claim due to raise the floor while a write that lowers it holds its
// row (for up to the write's bound) leaves the raise for later rather than
// wait past its own deadline.
func TestClaimDoesNotWaitForAWriteLoweringTheFloor(t *testing.T) {
	ctx := context.Background()
	clock, db, url, _ := subscribedFarm(t)
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if _, err := tx.Exec(ctx, "UPDATE outbox_floor SET floor_ms = floor_ms"); err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Hour)
	cctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	claim := furrow.Claim{Owner: uuid.New(), Limit: 10, Lease: time.Minute}
	if _, err := db.ClaimEvents(cctx, claim); err != nil {
		t.Fatalf("a claim behind a write holding the floor: %v", err)
	}
}

func TestReadingThatWaitedForItsBatchLowersTheOutboxFloor(t *testing.T) {
	ctx := context.Background()
	clock, db, _, fx := subscribedFarm(t)
	raised, err := store.RaiseOutboxFloor(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	late := clock.Now().Add(-2 * store.FloorLag).UnixMilli() // below the raised floor
	r := furrow.Reading{FarmID: fx.farm.ID, DeviceID: fx.device.ID, MetricID: 220, Value: "21.5", Timestamp: late}
	ev, err := store.WriteReadingLate(ctx, db, r)
	if err != nil || !ev.Pending {
		t.Fatalf("WriteReadingLate = %+v, %v", ev, err)
	}
	wantFloorLoweredAndClaimed(t, db, late, ev.ID, "the late reading's event")
	// A reading stamped within RecentEvent leaves the floor alone.
	clock.Advance(time.Hour)
	raised, _ = store.RaiseOutboxFloor(ctx, db)
	r.Timestamp = clock.Now().Add(-store.RecentEvent + time.Second).UnixMilli()
	if _, err := store.WriteReadingLate(ctx, db, r); err != nil {
		t.Fatal(err)
	}
	if floor, _ := store.OutboxFloor(ctx, db); floor != raised {
		t.Fatalf("outbox floor %d moved by a recent reading, want %d", floor, raised)
	}
}

// TestClaimWalksOnlyRecentDispatchedEvents checks what keeps a busy day's
// claims cheap without a vacuum: an hour of events, all dispatched, left
// as many dead entries in the index of undispatched events, and a claim
// reads only those of the last minutes.
func TestClaimWalksOnlyRecentDispatchedEvents(t *testing.T) {
	ctx := context.Background()
	clock, db, url, fx := subscribedFarm(t)
	clock.Advance(12 * time.Hour) // midday, so that the hour is one partition's
	if _, err := db.CreateEvent(ctx, furrow.Event{Type: furrow.EventTriggerFired, FarmID: fx.farm.ID}); err != nil {
		t.Fatal(err)
	}
	conn := connect(t, url)
	now := clock.Now().UnixMilli()
	const n = 120_000
	if _, err := conn.Exec(ctx, `INSERT INTO events (id, type, farm_id, occurred_at_ms, data)
		SELECT gen_random_uuid(), 'trigger.fired', $1, $2::bigint - 3600000 + i * 3600000 / $3, '{}'
		FROM generate_series(1, $3::bigint) i`, fx.farm.ID, now, n); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, "UPDATE events SET dispatched_at_ms = $1 WHERE dispatched_at_ms IS NULL", now); err != nil {
		t.Fatal(err)
	}
	claim := furrow.Claim{Owner: uuid.New(), Limit: 100, Lease: 5 * time.Second}
	if got, err := db.ClaimEvents(ctx, claim); err != nil || len(got) != 0 {
		t.Fatalf("ClaimEvents = %d events, %v", len(got), err)
	}
	var indexPages int64
	if err := conn.QueryRow(ctx, `SELECT sum(pg_relation_size(i.indexrelid)) / current_setting('block_size')::bigint
		FROM pg_index i JOIN pg_class c ON c.oid = i.indrelid
		WHERE c.relname LIKE 'events_p%' AND pg_get_expr(i.indpred, i.indrelid) LIKE '%dispatched_at_ms IS NULL%'`).Scan(&indexPages); err != nil {
		t.Fatal(err)
	}
	floor, err := store.OutboxFloor(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	read := claimBlocks(t, conn, now, claim, floor)
	if read*10 > indexPages {
		t.Fatalf("a claim read %d blocks, a tenth or more of the %d pages of the undispatched events' index", read, indexPages)
	}
}

// claimBlocks runs the claim at the floor under EXPLAIN (ANALYZE, BUFFERS),
// rolled back, and returns the blocks it read.
func claimBlocks(t *testing.T, conn *pgx.Conn, now int64, c furrow.Claim, floor int64) int64 {
	t.Helper()
	ctx := context.Background()
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	var plan []byte
	if err := tx.QueryRow(ctx, "EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) "+store.ClaimSQL,
		now, c.Limit, now+c.Lease.Milliseconds(), c.Owner, []uuid.UUID{}, floor).Scan(&plan); err != nil {
		t.Fatal(err)
	}
	var doc []struct {
		Plan struct {
			Hit  int64 `json:"Shared Hit Blocks"`
			Read int64 `json:"Shared Read Blocks"`
		}
	}
	if err := json.Unmarshal(plan, &doc); err != nil || len(doc) != 1 {
		t.Fatalf("plan %s: %v", plan, err)
	}
	return doc[0].Plan.Hit + doc[0].Plan.Read
}
