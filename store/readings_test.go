package store_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/furrowhq/furrow"
	"github.com/furrowhq/furrow/store"
)

func reading(fx fixture, metric int32, value string) furrow.Reading {
	return furrow.Reading{FarmID: fx.farm.ID, DeviceID: fx.device.ID, MetricID: metric, Value: value}
}

func TestCreateReadingStoresReadingEventAndLastSeen(t *testing.T) {
	ctx := context.Background()
	clock := newClock()
	db, _ := newDB(t, clock)
	fx := newFixture(t, db)
	r, ev, err := db.CreateReading(ctx, reading(fx, 220, "21.50"), nil)
	if err != nil {
		t.Fatal(err)
	}
	now := clock.Now().UnixMilli()
	if r.Timestamp != now || ev.OccurredAtMs != now || ev.Type != furrow.EventMetricValue || ev.FarmID != fx.farm.ID {
		t.Fatalf("reading %+v event %+v, want timestamp %d", r, ev, now)
	}
	var data furrow.MetricValueData
	if err := json.Unmarshal(ev.Data, &data); err != nil {
		t.Fatal(err)
	}
	if data != (furrow.MetricValueData{DeviceID: fx.device.ID, MetricID: 220, Value: "21.50", Timestamp: now}) {
		t.Fatalf("event data = %+v", data)
	}
	stored, err := db.Event(ctx, ev.ID)
	if err != nil || stored.ID != ev.ID || string(stored.Data) == "" {
		t.Fatalf("Event(%s) = %+v, %v", ev.ID, stored, err)
	}
	d, _ := db.DeviceByID(ctx, fx.device.ID)
	if d.LastSeenMs == nil || *d.LastSeenMs != now {
		t.Fatalf("last seen = %v, want %d", d.LastSeenMs, now)
	}
	rs, _, err := db.Readings(ctx, furrow.ReadingFilter{FarmID: fx.farm.ID})
	if err != nil || len(rs) != 1 || rs[0] != r {
		t.Fatalf("Readings = %+v, %v; want [%+v]", rs, err, r)
	}
}

func TestCreateReadingRejectsBadInput(t *testing.T) {
	ctx := context.Background()
	db, _ := newDB(t, newClock())
	fx := newFixture(t, db)
	long := make([]byte, furrow.MaxValueBytes+1)
	for i := range long {
		long[i] = '1'
	}
	for _, v := range []string{"", string(long), "a\x00b", "\xff"} {
		_, _, err := db.CreateReading(ctx, reading(fx, 1, v), nil)
		wantCode(t, err, furrow.EINVALID)
	}
	_, _, err := db.CreateReading(ctx, furrow.Reading{FarmID: fx.farm.ID, DeviceID: uuid.New(), MetricID: 1, Value: "1"}, nil)
	wantCode(t, err, furrow.ENOTFOUND)
}

func TestCreateReadingConcurrentGroupCommit(t *testing.T) {
	ctx := context.Background()
	clock := newClock()
	db, url := newDB(t, clock)
	fx := newFixture(t, db)
	second, _, err := db.CreateDevice(ctx, fx.farm.ID, "probe-2")
	if err != nil {
		t.Fatal(err)
	}
	const n = 500
	var wg sync.WaitGroup
	errs := make([]error, n)
	events := make([]furrow.OutboxEvent, n)
	for i := range n {
		wg.Go(func() {
			r := reading(fx, int32(i%3+1), fmt.Sprint(i))
			if i%2 == 1 {
				r.DeviceID = second.ID
			}
			_, events[i], errs[i] = db.CreateReading(ctx, r, nil)
		})
	}
	wg.Wait()
	ids := map[string]bool{}
	for i, err := range errs {
		if err != nil {
			t.Fatalf("reading %d: %v", i, err)
		}
		ids[events[i].ID] = true
	}
	if len(ids) != n {
		t.Fatalf("%d distinct event ids, want %d", len(ids), n)
	}
	conn := connect(t, url)
	var readings, matched, wrongTime int
	err = conn.QueryRow(ctx, `SELECT
		(SELECT count(*) FROM readings),
		(SELECT count(*) FROM readings r JOIN events e ON e.type = 'metric.value'
			AND (e.data->>'device_id')::uuid = r.device_id AND e.data->>'value' = r.value
			AND (e.data->>'timestamp')::bigint = r.ts_ms AND e.occurred_at_ms = r.ts_ms),
		(SELECT count(*) FROM readings WHERE ts_ms <> $1)`, clock.Now().UnixMilli()).Scan(&readings, &matched, &wrongTime)
	if err != nil {
		t.Fatal(err)
	}
	if readings != n || matched != n || wrongTime != 0 {
		t.Fatalf("readings %d, with their event %d, off-clock %d; want %d, %d, 0", readings, matched, wrongTime, n, n)
	}
	for _, id := range []uuid.UUID{fx.device.ID, second.ID} {
		d, _ := db.DeviceByID(ctx, id)
		if d.LastSeenMs == nil || *d.LastSeenMs != clock.Now().UnixMilli() {
			t.Fatalf("device %s last seen %v", id, d.LastSeenMs)
		}
	}
}

// doomedDevice makes a store with a fixture, a second device of its farm to
// delete, and a connection to its database.
func doomedDevice(t *testing.T) (*store.DB, fixture, furrow.Device, *pgx.Conn) {
	t.Helper()
	db, url := newDB(t, newClock())
	fx := newFixture(t, db)
	doomed, _, err := db.CreateDevice(context.Background(), fx.farm.ID, "doomed")
	if err != nil {
		t.Fatal(err)
	}
	return db, fx, doomed, connect(t, url)
}

func TestBatchWithBadRowStoresTheOthers(t *testing.T) {
	ctx := context.Background()
	db, fx, doomed, conn := doomedDevice(t)
	if _, err := conn.Exec(ctx, "DELETE FROM devices WHERE id = $1", doomed.ID); err != nil {
		t.Fatal(err)
	}
	rs := []furrow.Reading{reading(fx, 1, "a"), reading(fx, 1, "b"), reading(fx, 1, "c")}
	rs[1].DeviceID = doomed.ID
	errs := store.CommitTogether(db, rs)
	if errs[0] != nil || errs[2] != nil {
		t.Fatalf("good rows failed: %v, %v", errs[0], errs[2])
	}
	wantCode(t, errs[1], furrow.ENOTFOUND)
	if furrow.ErrorMessage(errs[1]) != "The device was not found." {
		t.Errorf("message %q", furrow.ErrorMessage(errs[1]))
	}
	var readings, events int
	if err := conn.QueryRow(ctx, "SELECT (SELECT count(*) FROM readings), (SELECT count(*) FROM events)").Scan(&readings, &events); err != nil {
		t.Fatal(err)
	}
	if readings != 2 || events != 2 {
		t.Fatalf("stored %d readings and %d events, want 2 and 2", readings, events)
	}
}

// A device deleted while a batch waits for its row is not written to: the
// reading is refused and leaves no row behind, as the foreign key ensured
// before migration 0016.
func TestReadingOfDeviceDeletedMeanwhileIsRefused(t *testing.T) {
	ctx := context.Background()
	db, fx, doomed, conn := doomedDevice(t)
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, "DELETE FROM devices WHERE id = $1", doomed.ID); err != nil {
		t.Fatal(err)
	}
	r := reading(fx, 1, "late")
	r.DeviceID = doomed.ID
	errc := make(chan error, 1)
	go func() {
		_, _, err := db.CreateReading(ctx, r, nil)
		errc <- err
	}()
	waitForLockWait(t, conn.Config().ConnString())
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-errc:
		wantCode(t, err, furrow.ENOTFOUND)
	case <-time.After(10 * time.Second):
		t.Fatal("CreateReading still waiting 10 s after the delete committed")
	}
	var readings, events int
	if err := conn.QueryRow(ctx, `SELECT (SELECT count(*) FROM readings WHERE device_id = $1),
		(SELECT count(*) FROM events WHERE data->>'device_id' = $1::text)`, doomed.ID).Scan(&readings, &events); err != nil {
		t.Fatal(err)
	}
	if readings != 0 || events != 0 {
		t.Fatalf("the deleted device has %d readings and %d events, want none", readings, events)
	}
}

// waitForLockWait waits until a session of url's database waits for a row
// lock.
func waitForLockWait(t *testing.T, url string) {
	t.Helper()
	ctx := context.Background()
	conn := connect(t, url)
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		var waiting bool
		if err := conn.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock')`).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		if waiting {
			return
		}
	}
	t.Fatal("no session waited for a lock within 10 s")
}

func TestCreateReadingAfterCloseFails(t *testing.T) {
	db, err := store.Open(context.Background(), "postgres://postgres@127.0.0.1:1/none?sslmode=disable", store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	_, _, err = db.CreateReading(context.Background(), furrow.Reading{FarmID: uuid.New(), DeviceID: uuid.New(), MetricID: 1, Value: "1"}, nil)
	if err == nil {
		t.Fatal("CreateReading on a closed store succeeded")
	}
}

func TestCreateReadingHonoursCancelledContext(t *testing.T) {
	db, _ := newDB(t, newClock())
	fx := newFixture(t, db)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, _, err := db.CreateReading(ctx, reading(fx, 1, "1"), nil); err == nil {
		t.Fatal("cancelled CreateReading succeeded")
	}
	// Others are unaffected.
	if _, _, err := db.CreateReading(context.Background(), reading(fx, 1, "2"), nil); err != nil {
		t.Fatal(err)
	}
}

func TestReadingsPagingAndFilters(t *testing.T) {
	ctx := context.Background()
	clock := newClock()
	db, _ := newDB(t, clock)
	fx := newFixture(t, db)
	other, _, err := db.CreateDevice(ctx, fx.farm.ID, "probe-2")
	if err != nil {
		t.Fatal(err)
	}
	start := clock.Now().UnixMilli()
	var want []furrow.Reading // newest first
	for i := range 25 {
		if i%3 == 0 {
			clock.Advance(time.Millisecond) // some readings share a millisecond
		}
		r := reading(fx, int32(i%2+1), fmt.Sprint(i))
		if i%5 == 0 {
			r.DeviceID = other.ID
		}
		stored, _, err := db.CreateReading(ctx, r, nil)
		if err != nil {
			t.Fatal(err)
		}
		want = append([]furrow.Reading{stored}, want...)
	}
	var got []furrow.Reading
	var cursor *furrow.Cursor
	for page := 0; ; page++ {
		rs, next, err := db.Readings(ctx, furrow.ReadingFilter{FarmID: fx.farm.ID, Before: cursor, Limit: 10})
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, rs...)
		// Newer readings arriving between pages must not shift the pages.
		if _, _, err := db.CreateReading(ctx, reading(fx, 1, "late"), nil); err != nil {
			t.Fatal(err)
		}
		if next == nil {
			break
		}
		if page > 3 {
			t.Fatal("paging does not end")
		}
		cursor = next
	}
	if len(got) != len(want) {
		t.Fatalf("paged %d readings, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("reading %d = %+v, want %+v", i, got[i], want[i])
		}
	}

	metric := int32(2)
	rs, _, err := db.Readings(ctx, furrow.ReadingFilter{FarmID: fx.farm.ID, DeviceID: &fx.device.ID, MetricID: &metric, Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rs {
		if r.DeviceID != fx.device.ID || r.MetricID != 2 {
			t.Fatalf("filter let through %+v", r)
		}
	}
	if len(rs) != 10 { // odd i below 25 not divisible by 5: 12 odd, minus 5 and 15
		t.Fatalf("device+metric filter gave %d readings, want 10", len(rs))
	}
	since := start + 5
	rs, _, err = db.Readings(ctx, furrow.ReadingFilter{FarmID: fx.farm.ID, SinceMs: &since, Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rs {
		if r.Timestamp < since {
			t.Fatalf("since filter let through %+v", r)
		}
	}
	if rs, _, _ := db.Readings(ctx, furrow.ReadingFilter{FarmID: uuid.New()}); len(rs) != 0 {
		t.Fatalf("another farm sees %d readings", len(rs))
	}
}

// The key a reading came with is checked in the transaction that stores it,
// so a key revoked after a caller cached it stores nothing.
func TestCreateReadingChecksTheKeyWhenStoring(t *testing.T) {
	ctx := context.Background()
	db, url := newDB(t, newClock())
	fx := newFixture(t, db)
	keyHash := furrow.HashSecret(fx.key)
	if _, _, err := db.CreateReading(ctx, reading(fx, 1, "old key"), &keyHash); err != nil {
		t.Fatalf("reading with the current key: %v", err)
	}
	newKey, err := db.RotateDeviceKey(ctx, fx.farm.ID, fx.device.ID)
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = db.CreateReading(ctx, reading(fx, 1, "revoked"), &keyHash)
	wantCode(t, err, furrow.EUNAUTHORIZED)
	if strings.Contains(furrow.ErrorMessage(err), fx.key) {
		t.Fatalf("the error quotes the key: %v", err)
	}
	other := reading(fx, 1, "other farm")
	other.FarmID = newFixture(t, db).farm.ID
	// One batch: the new key, the revoked key, no key (a certificate), and
	// a reading claiming another farm.
	errs := store.CommitTogether(db, []furrow.Reading{
		reading(fx, 2, "new key"), reading(fx, 2, "revoked"), reading(fx, 2, "certificate"), other,
	}, newKey, fx.key, "", "")
	if errs[0] != nil || errs[2] != nil {
		t.Fatalf("valid readings failed: %v, %v", errs[0], errs[2])
	}
	wantCode(t, errs[1], furrow.EUNAUTHORIZED)
	wantCode(t, errs[3], furrow.ENOTFOUND)

	conn := connect(t, url)
	rows, _ := conn.Query(ctx, "SELECT value FROM readings ORDER BY seq")
	values, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(values)
	if want := []string{"certificate", "new key", "old key"}; !slices.Equal(values, want) {
		t.Fatalf("stored readings %q, want %q", values, want)
	}
	var events int
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM events").Scan(&events); err != nil || events != 3 {
		t.Fatalf("stored %d events (%v), want 3", events, err)
	}
}

// The writers' statement is planned once, generically, however small its
// batches: a custom plan for each batch of one or two readings cost
// PostgreSQL more than the rows did.
func TestReadingWritersPlanTheirStatementOnce(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	db, _ := newDB(t, newClock())
	fx := newFixture(t, db)
	for i := range 8 {
		if _, _, err := db.CreateReading(ctx, reading(fx, int32(i+1), "1"), nil); err != nil {
			t.Fatal(err)
		}
	}
	generic, custom, err := store.WriterPlans(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	if generic < 8 || custom != 0 {
		t.Fatalf("8 readings one at a time: %d generic and %d custom plans of the writers' statement, want 8 or more and 0", generic, custom)
	}
}
