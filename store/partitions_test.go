package store_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/furrowhq/furrow"
	"github.com/furrowhq/furrow/internal/testclock"
	"github.com/furrowhq/furrow/store"
)

// futureClock is far past any partitioning boundary a template database
// may have, so its readings go to day partitions.
func futureClock() *testclock.Clock {
	return testclock.New(time.Date(2031, 3, 10, 23, 59, 59, 0, time.UTC))
}

// readingPartitions lists the partitions of readings by name, with their
// row counts.
func readingPartitions(t *testing.T, url string) map[string]int {
	t.Helper()
	ctx := context.Background()
	conn := connect(t, url)
	rows, _ := conn.Query(ctx, `SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
		WHERE i.inhparent = 'readings'::regclass`)
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

func TestMigrationPartitionsPopulatedReadings(t *testing.T) {
	ctx := context.Background()
	url, conn := dbUpTo(t, "0001_init.sql")
	farm, device := uuid.New(), uuid.New()
	now := time.Now().UnixMilli()
	setup := []string{
		fmt.Sprintf("INSERT INTO farms (id, name, created_at_ms) VALUES ('%s', 'f', 0)", farm),
		fmt.Sprintf("INSERT INTO devices (id, farm_id, name, key_hash, created_at_ms) VALUES ('%s', '%s', 'd', '\\x01', 0)", device, farm),
		// 5,000 readings over the last 50 days, oldest first.
		fmt.Sprintf(`INSERT INTO readings (device_id, farm_id, metric_id, value, ts_ms)
			SELECT '%s', '%s', g %% 7, g::text, %d - (5000 - g)::bigint * 864000 FROM generate_series(1, 5000) g`, device, farm, now),
	}
	for _, q := range setup {
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	var beforeSum, beforeMax int64
	if err := conn.QueryRow(ctx, "SELECT sum(seq), max(seq) FROM readings").Scan(&beforeSum, &beforeMax); err != nil {
		t.Fatal(err)
	}

	if err := store.Migrate(ctx, url); err != nil {
		t.Fatalf("Migrate over a populated readings table: %v", err)
	}

	kind, n, afterSum := tableShape(ctx, t, conn, "readings")
	if kind != "p" || n != 5000 || afterSum != beforeSum {
		t.Fatalf("after migration: relkind %q, %d readings, seq sum %d; want partitioned, 5000, %d", kind, n, afterSum, beforeSum)
	}
	if parts := readingPartitions(t, url); parts["readings_p_legacy"] != 5000 {
		t.Fatalf("partitions %v: want the old rows in readings_p_legacy", parts)
	}
	if fks := foreignKeysOf(ctx, t, conn, "readings"); len(fks) != 0 {
		t.Fatalf("foreign keys %v left on readings and its partitions, want none (migration 0016)", fks)
	}

	// The store pages through old and new rows alike, and new rows follow
	// the old sequence.
	db, err := store.Open(ctx, url, store.Options{Clock: futureClock()})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	d := furrow.Device{ID: device, FarmID: farm}
	r, _, err := db.CreateReading(ctx, furrow.Reading{FarmID: farm, DeviceID: d.ID, MetricID: 1, Value: "new"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var newSeq int64
	if err := conn.QueryRow(ctx, "SELECT seq FROM readings WHERE value = 'new'").Scan(&newSeq); err != nil {
		t.Fatal(err)
	}
	if newSeq <= beforeMax {
		t.Fatalf("new reading's seq %d, want above %d", newSeq, beforeMax)
	}
	all := pageAll(t, db, furrow.ReadingFilter{FarmID: farm, Limit: 777})
	if len(all) != 5001 || all[0] != r || all[len(all)-1].Value != "1" {
		t.Fatalf("paged %d readings (first %+v, last %+v); want 5001 newest first", len(all), all[0], all[len(all)-1])
	}
}

// pageAll follows the cursor of f to the end.
func pageAll(t *testing.T, db *store.DB, f furrow.ReadingFilter) []furrow.Reading {
	t.Helper()
	var all []furrow.Reading
	for {
		rs, next, err := db.Readings(context.Background(), f)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, rs...)
		if next == nil {
			return all
		}
		f.Before = next
	}
}

func TestReadingsPageAcrossPartitionBoundary(t *testing.T) {
	ctx := context.Background()
	clock := futureClock() // one second before midnight
	db, url := newDB(t, clock)
	fx := newFixture(t, db)
	var want []furrow.Reading
	for i := range 6 {
		r, _, err := db.CreateReading(ctx, reading(fx, 1, fmt.Sprint(i)), nil)
		if err != nil {
			t.Fatal(err)
		}
		want = append([]furrow.Reading{r}, want...)
		clock.Advance(400 * time.Millisecond)
	}
	parts := readingPartitions(t, url)
	if parts["readings_p20310310"] != 3 || parts["readings_p20310311"] != 3 {
		t.Fatalf("partitions %v: want 3 readings on each side of midnight", parts)
	}
	got := pageAll(t, db, furrow.ReadingFilter{FarmID: fx.farm.ID, Limit: 2})
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("pages = %v, want %v", got, want)
	}
	since := want[3].Timestamp // the last reading before midnight
	got = pageAll(t, db, furrow.ReadingFilter{FarmID: fx.farm.ID, SinceMs: &since, Limit: 1})
	if fmt.Sprint(got) != fmt.Sprint(want[:4]) {
		t.Fatalf("since midnight-1: %v, want %v", got, want[:4])
	}
}

func TestPruneReadingsCreatesAheadAndDropsOnlyExpired(t *testing.T) {
	ctx := context.Background()
	clock := futureClock()
	db, url := newDB(t, clock)
	fx := newFixture(t, db)
	start := clock.Now()
	for range 4 { // one reading on each of 4 days: 10, 11, 12, 13 March
		if _, _, err := db.CreateReading(ctx, reading(fx, 1, "1"), nil); err != nil {
			t.Fatal(err)
		}
		clock.Advance(24 * time.Hour)
	}
	// Keep forever: nothing dropped, the next days created.
	if n, err := db.PruneReadings(ctx, time.Time{}); err != nil || n != 0 {
		t.Fatalf("PruneReadings(keep forever) = %d, %v", n, err)
	}
	parts := readingPartitions(t, url)
	for _, day := range []string{"20310314", "20310315", "20310316", "20310317", "20310318", "20310319", "20310320"} {
		if _, ok := parts["readings_p"+day]; !ok {
			t.Fatalf("partitions %v: want readings_p%s created ahead (a week, today's first)", parts, day)
		}
	}
	if _, ok := parts["readings_p20310321"]; ok {
		t.Fatalf("partitions %v: want no partition past the week ahead", parts)
	}
	if _, ok := parts["readings_p_legacy"]; !ok {
		t.Fatalf("partitions %v: the pre-partitioning one is kept when keeping forever", parts)
	}

	// Keep from 12 March 06:00: the days ending by then go (10 and 11
	// March, and everything before partitioning); 12 March stays whole.
	before := time.Date(2031, 3, 12, 6, 0, 0, 0, time.UTC)
	if _, err := db.PruneReadings(ctx, before); err != nil {
		t.Fatal(err)
	}
	parts = readingPartitions(t, url)
	for _, gone := range []string{"readings_p20310310", "readings_p20310311", "readings_p_legacy"} {
		if _, ok := parts[gone]; ok {
			t.Fatalf("partitions %v: %s should be dropped", parts, gone)
		}
	}
	if parts["readings_p20310312"] != 1 || parts["readings_p20310313"] != 1 {
		t.Fatalf("partitions %v: 12 and 13 March should keep their reading", parts)
	}
	rs, _, err := db.Readings(ctx, furrow.ReadingFilter{FarmID: fx.farm.ID})
	if err != nil || len(rs) != 2 || rs[1].Timestamp < start.Add(48*time.Hour).UnixMilli() {
		t.Fatalf("Readings after prune = %v, %v; want the 2 of 12 and 13 March", rs, err)
	}
}

// tableShape returns table's relkind ("p" when partitioned), its row count
// and the sum of its seq column, which a conversion must keep.
// foreignKeysOf returns the foreign keys of table and of every partition
// of it.
func foreignKeysOf(ctx context.Context, t *testing.T, conn *pgx.Conn, table string) []string {
	t.Helper()
	rows, _ := conn.Query(ctx, `SELECT conname::text FROM pg_constraint
		WHERE contype = 'f' AND conrelid IN (SELECT relid FROM pg_partition_tree($1::regclass))`, table)
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return names
}

func tableShape(ctx context.Context, t *testing.T, conn *pgx.Conn, table string) (kind string, n, seqSum int64) {
	t.Helper()
	if err := conn.QueryRow(ctx, "SELECT relkind::text FROM pg_class WHERE oid = $1::regclass", table).Scan(&kind); err != nil {
		t.Fatal(err)
	}
	if err := conn.QueryRow(ctx, "SELECT count(*), sum(seq) FROM "+table).Scan(&n, &seqSum); err != nil {
		t.Fatal(err)
	}
	return kind, n, seqSum
}

// Making partitions ahead waits only so long behind a long reader of the
// parent, since every query of it would queue behind the waiting CREATE:
// retention leaves them for its next run, which makes them once the
// reader is done.
func TestPartitionsAheadGiveUpBehindALongReader(t *testing.T) {
	ctx := context.Background()
	clock := futureClock()
	db, url := newDB(t, clock)
	clock.Advance(10 * 24 * time.Hour) // days without partitions yet
	tx := readingsReader(t, url)
	began := time.Now()
	bounded, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if _, err := db.PruneReadings(bounded, time.Time{}); err != nil {
		t.Fatalf("PruneReadings behind a reader: %v; want the partitions left for the next run", err)
	}
	if took := time.Since(began); took > 4*time.Second {
		t.Fatalf("gave up after %s, want about a second", took)
	}
	if _, ok := readingPartitions(t, url)["readings_p20310320"]; ok {
		t.Fatal("the partition of the new day was made behind the reader")
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := db.PruneReadings(ctx, time.Time{}); err != nil {
		t.Fatalf("PruneReadings once the reader is done: %v", err)
	}
	if _, ok := readingPartitions(t, url)["readings_p20310320"]; !ok {
		t.Fatal("the partition of the new day was not made once the reader was done")
	}
}

// A day of the delivery log that a long transaction holds is left for the
// next run; the days after it still go.
func TestPruneAttemptsGoesPastABusyPartition(t *testing.T) {
	ctx := context.Background()
	clock := futureClock()
	db, url := newDB(t, clock)
	fx := newFixture(t, db)
	hook, err := db.CreateWebhook(ctx, furrow.Webhook{ID: uuid.New(), FarmID: fx.farm.ID, URL: "https://example.com/h", Secret: "whsec_x", Enabled: true})
	if err != nil {
		t.Fatal(err)
	}
	day := time.Date(2031, 3, 1, 12, 0, 0, 0, time.UTC)
	for i := range 3 {
		a := furrow.Attempt{WebhookID: hook.ID, EventID: furrow.NewEventID(), Attempt: 1, StatusCode: 200, AtMs: day.AddDate(0, 0, i).UnixMilli()}
		if err := db.AddAttempt(ctx, a); err != nil {
			t.Fatal(err)
		}
	}
	tx, err := connect(t, url).Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, "LOCK TABLE delivery_attempts_p20310301 IN ACCESS SHARE MODE"); err != nil {
		t.Fatal(err)
	}
	n, err := db.PruneAttempts(ctx, day.AddDate(0, 0, 5))
	if err != nil || n != 2 {
		t.Fatalf("PruneAttempts behind a reader of the first day = %d, %v; want the other 2 days' 2 attempts", n, err)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if n, err := db.PruneAttempts(ctx, day.AddDate(0, 0, 5)); err != nil || n != 1 {
		t.Fatalf("PruneAttempts once the reader is done = %d, %v; want the first day's attempt", n, err)
	}
}

// A partition retention cannot drop (here a view depends on it) fails the
// run with the store's own error: no pgx type leaves the package, and the
// error names the operation.
func TestPruneErrorsAreTranslated(t *testing.T) {
	ctx := context.Background()
	clock := futureClock()
	db, url := newDB(t, clock)
	fx := newFixture(t, db)
	if _, _, err := db.CreateReading(ctx, reading(fx, 1, "1"), nil); err != nil {
		t.Fatal(err)
	}
	hook, err := db.CreateWebhook(ctx, furrow.Webhook{ID: uuid.New(), FarmID: fx.farm.ID, URL: "https://example.com/h", Secret: "whsec_x", Enabled: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.AddAttempt(ctx, furrow.Attempt{WebhookID: hook.ID, EventID: furrow.NewEventID(), Attempt: 1, StatusCode: 200, AtMs: clock.Now().UnixMilli()}); err != nil {
		t.Fatal(err)
	}
	conn := connect(t, url)
	for _, q := range []string{
		"CREATE VIEW holds_readings AS SELECT * FROM readings_p20310310",
		"CREATE VIEW holds_attempts AS SELECT * FROM delivery_attempts_p20310310",
	} {
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	later := clock.Now().AddDate(0, 0, 3)
	for name, prune := range map[string]func(context.Context, time.Time) (int64, error){
		"prune readings": db.PruneReadings, "prune attempts": db.PruneAttempts,
	} {
		_, err := prune(ctx, later)
		var pe *pgconn.PgError
		if err == nil || errors.As(err, &pe) || !strings.Contains(err.Error(), name) {
			t.Errorf("%s: %v (a *pgconn.PgError: %v); want the store's error naming %q", name, err, pe != nil, name)
		}
	}
}

// Partition DDL is serialised by an advisory lock; a process that holds it
// long (a stuck migration, a DDL of an operator's) makes the others wait
// for it as for a table's lock: bounded, so that a writer gives up after
// its lock timeout and retention leaves the work for its next run.
func TestPartitionLockWaitIsBounded(t *testing.T) {
	ctx := context.Background()
	clock := futureClock()
	db, url := newDB(t, clock)
	hook := uuid.New()
	if err := db.AddAttempt(ctx, furrow.Attempt{WebhookID: hook, EventID: furrow.NewEventID(), Attempt: 1, AtMs: clock.Now().UnixMilli()}); err != nil {
		t.Fatal(err)
	}
	clock.Advance(40 * 24 * time.Hour) // days without partitions, and one to drop
	holder := connect(t, url)
	if _, err := holder.Exec(ctx, "SELECT pg_advisory_lock($1)", store.PartitionLockKey); err != nil {
		t.Fatal(err)
	}
	// Retention waits about a second for each partition it makes or drops.
	bounded, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if n, err := db.PruneAttempts(bounded, clock.Now().AddDate(0, 0, -30)); err != nil || n != 0 {
		t.Fatalf("PruneAttempts behind the partition lock = %d, %v; want the work left for the next run", n, err)
	}
	began := time.Now()
	_, _, err := db.CreateReading(bounded, reading(newFixture(t, db), 1, "1"), nil)
	if err == nil || bounded.Err() != nil {
		t.Fatalf("a reading of a day without its partition, behind the partition lock: %v (context %v); want a failure of its own", err, bounded.Err())
	}
	if took := time.Since(began); took > 8*time.Second {
		t.Fatalf("the writer gave up after %s, want about its lock timeout", took)
	}
	if _, err := holder.Exec(ctx, "SELECT pg_advisory_unlock($1)", store.PartitionLockKey); err != nil {
		t.Fatal(err)
	}
	if n, err := db.PruneAttempts(ctx, clock.Now().AddDate(0, 0, -30)); err != nil || n != 1 {
		t.Fatalf("PruneAttempts once the lock is free = %d, %v; want the old attempt", n, err)
	}
}

// A DEFAULT partition an operator added is left alone: partitions are made
// and dropped around it, and it is never dropped.
func TestDefaultPartitionIsLeftAlone(t *testing.T) {
	ctx := context.Background()
	clock := futureClock()
	db, url := newDB(t, clock)
	fx := newFixture(t, db)
	if _, err := connect(t, url).Exec(ctx, "CREATE TABLE readings_default PARTITION OF readings DEFAULT"); err != nil {
		t.Fatal(err)
	}
	clock.Advance(20 * 24 * time.Hour) // a day without its partition
	if _, _, err := db.CreateReading(ctx, reading(fx, 1, "1"), nil); err != nil {
		t.Fatalf("CreateReading beside a DEFAULT partition: %v", err)
	}
	if _, err := db.PruneReadings(ctx, clock.Now().AddDate(0, 0, -1)); err != nil {
		t.Fatalf("PruneReadings beside a DEFAULT partition: %v", err)
	}
	parts := readingPartitions(t, url)
	if n, ok := parts["readings_default"]; !ok || n != 0 {
		t.Fatalf("partitions %v: want readings_default kept, empty", parts)
	}
	if parts["readings_p20310330"] != 1 || len(parts) != 1+7 {
		t.Fatalf("partitions %v: want the reading in its day's partition, the week ahead made, the older days dropped", parts)
	}
}
