package store_test

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/furrowhq/furrow/internal/testenv"
	"github.com/furrowhq/furrow/store"
)

// farFuture is a time in milliseconds (2100-01-01) past any bound a
// conversion sets.
const farFuture = 4102444800000

// holdRecord begins a transaction on url that records version in
// schema_migrations without committing: a migration recording version
// waits for it, as for any lock, while nothing else does. It is rolled
// back when t ends.
func holdRecord(t *testing.T, url, version string) pgx.Tx {
	t.Helper()
	ctx := context.Background()
	tx, err := connect(t, url).Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tx.Rollback(ctx) })
	if _, err := tx.Exec(ctx, "INSERT INTO schema_migrations (version) VALUES ($1)", version); err != nil {
		t.Fatal(err)
	}
	return tx
}

// boundOn returns the boundary in ms of the CHECK constraint name on
// table, and whether there is one.
func boundOn(t *testing.T, conn *pgx.Conn, table, name string) (int64, bool) {
	t.Helper()
	var def string
	err := conn.QueryRow(context.Background(), `SELECT pg_get_constraintdef(oid) FROM pg_constraint
		WHERE conname = $1 AND conrelid = to_regclass($2)`, name, table).Scan(&def)
	if err == pgx.ErrNoRows {
		return 0, false
	}
	if err != nil {
		t.Fatal(err)
	}
	return firstNumber(t, def), true
}

// firstNumber returns the first integer in s.
func firstNumber(t *testing.T, s string) int64 {
	t.Helper()
	n, err := strconv.ParseInt(regexp.MustCompile(`-?\d+`).FindString(s), 10, 64)
	if err != nil {
		t.Fatalf("no number in %q", s)
	}
	return n
}

// recorded returns which of versions schema_migrations holds.
func recorded(t *testing.T, conn *pgx.Conn, versions ...string) []string {
	t.Helper()
	var have []string
	err := conn.QueryRow(context.Background(), `SELECT coalesce(array_agg(version ORDER BY version), '{}')
		FROM schema_migrations WHERE version = ANY($1)`, versions).Scan(&have)
	if err != nil {
		t.Fatal(err)
	}
	return have
}

// assertWritesAtFarFuture checks that a row of table stamped farFuture is
// accepted (in a transaction rolled back, so that it stays out of later
// validations).
func assertWritesAtFarFuture(t *testing.T, conn *pgx.Conn, insert string) {
	t.Helper()
	ctx := context.Background()
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if _, err := tx.Exec(ctx, insert, farFuture); err != nil {
		t.Fatalf("a write stamped 2100 after the stopped conversion: %v; want it accepted", err)
	}
}

// readingsFixture adds a farm, a device and a reading to a database before
// 0005 and returns the statement that stores a reading of that device at $1.
func readingsFixture(t *testing.T, conn *pgx.Conn) string {
	t.Helper()
	farm, device := uuid.New(), uuid.New()
	for _, q := range []string{
		fmt.Sprintf("INSERT INTO farms (id, name, created_at_ms) VALUES ('%s', 'f', 0)", farm),
		fmt.Sprintf("INSERT INTO devices (id, farm_id, name, key_hash, created_at_ms) VALUES ('%s', '%s', 'd', '\\x01', 0)", device, farm),
		fmt.Sprintf(`INSERT INTO readings (device_id, farm_id, metric_id, value, ts_ms) VALUES ('%s', '%s', 1, '1', %d)`,
			device, farm, time.Now().UnixMilli()),
	} {
		if _, err := conn.Exec(context.Background(), q); err != nil {
			t.Fatal(err)
		}
	}
	return fmt.Sprintf(`INSERT INTO readings (device_id, farm_id, metric_id, value, ts_ms) VALUES ('%s', '%s', 1, '1', $1)`, device, farm)
}

// A run that stops between 0003 and 0005 (here 0004 cannot be recorded,
// as when a manual VACUUM holds readings through every try) removes the
// bound it added, which PostgreSQL would enforce on the old release's
// readings from the day after tomorrow on, and un-records 0003, so the
// next run starts the conversion over.
func TestStoppedReadingsConversionLeavesNoBound(t *testing.T) {
	ctx := context.Background()
	url, conn := dbUpTo(t, "0001_init.sql")
	insert := readingsFixture(t, conn)
	hold := holdRecord(t, url, "0004_readings_bound_validate.sql")

	err := store.MigrateWithLockPatience(ctx, url, 100*time.Millisecond, 10*time.Millisecond, 3)
	if err == nil || !strings.Contains(err.Error(), "0004") {
		t.Fatalf("Migrate with 0004 held: %v; want an error naming 0004", err)
	}
	if b, ok := boundOn(t, conn, "readings", "readings_before_partitioning"); ok {
		t.Fatalf("readings_before_partitioning (< %d) left on readings after the run stopped", b)
	}
	if have := recorded(t, conn, "0003_readings_bound.sql", "0004_readings_bound_validate.sql"); len(have) != 0 {
		t.Fatalf("recorded %v after the run stopped; want neither", have)
	}
	assertWritesAtFarFuture(t, conn, insert)

	if err := hold.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if err := store.Migrate(ctx, url); err != nil {
		t.Fatalf("the next Migrate: %v", err)
	}
	if kind, _, _ := tableShape(ctx, t, conn, "readings"); kind != "p" {
		t.Fatalf("readings relkind %q after the next run, want partitioned", kind)
	}
}

// When the bound cannot be removed either (here a lock on readings held
// through every try, which VALIDATE and the removal both wait for), the
// error names the constraint, the time from which it refuses readings,
// and what to run.
func TestStoppedReadingsConversionThatStaysSaysWhatToDo(t *testing.T) {
	ctx := context.Background()
	url, conn := dbUpTo(t, "0003_readings_bound.sql")
	boundary, ok := boundOn(t, conn, "readings", "readings_before_partitioning")
	if !ok {
		t.Fatal("0003 added no bound")
	}
	tx, err := connect(t, url).Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if _, err := tx.Exec(ctx, "LOCK readings IN SHARE UPDATE EXCLUSIVE MODE"); err != nil {
		t.Fatal(err)
	}

	err = store.MigrateWithLockPatience(ctx, url, 100*time.Millisecond, 10*time.Millisecond, 3)
	from := time.UnixMilli(boundary).UTC().Format("2006-01-02 15:04")
	for _, want := range []string{"readings_before_partitioning", from, "furrow migrate",
		"ALTER TABLE readings DROP CONSTRAINT", "0003_readings_bound.sql"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("Migrate behind a held readings lock: %v; want an error saying %q", err, want)
		}
	}
}

// A conversion found begun by an earlier run, which was killed before it
// could undo it, is started over: its bound, whose boundary may be past
// already (here today's start: today's readings are refused), is replaced
// by a new one.
func TestMigrateStartsAStoppedConversionOver(t *testing.T) {
	ctx := context.Background()
	url, conn := dbUpTo(t, "0003_readings_bound.sql")
	today := time.Now().UTC().Truncate(24 * time.Hour).UnixMilli()
	_, err := conn.Exec(ctx, fmt.Sprintf(`ALTER TABLE readings DROP CONSTRAINT readings_before_partitioning,
		ADD CONSTRAINT readings_before_partitioning CHECK (ts_ms < %d) NOT VALID`, today))
	if err != nil {
		t.Fatal(err)
	}
	if err := store.Migrate(ctx, url); err != nil {
		t.Fatal(err)
	}
	var bound string
	err = conn.QueryRow(ctx, "SELECT pg_get_expr(relpartbound, oid) FROM pg_class WHERE relname = 'readings_p_legacy'").Scan(&bound)
	if err != nil {
		t.Fatal(err)
	}
	if end := firstNumber(t, bound[strings.Index(bound, " TO "):]); end <= time.Now().UnixMilli() {
		t.Fatalf("readings_p_legacy %s: ends at %s, want the new boundary after now", bound, time.UnixMilli(end).UTC())
	}
}

// A run cancelled while it converts readings (SIGTERM, as at the Helm
// job's deadline) has the server stop its statement and undoes the
// conversion in the grace that follows, on a new connection.
func TestCancelledMigrateUndoesItsConversion(t *testing.T) {
	ctx := context.Background()
	url, conn := dbUpTo(t, "0001_init.sql")
	readingsFixture(t, conn)
	hold := holdRecord(t, url, "0004_readings_bound_validate.sql")
	var holder int32
	if err := hold.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&holder); err != nil {
		t.Fatal(err)
	}

	run, cancel := context.WithCancel(ctx)
	defer cancel()
	watcher := connect(t, url)
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		// Cancel once 0004 waits for the held record.
		for run.Err() == nil {
			var waiting bool
			_ = watcher.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid)))", holder).Scan(&waiting)
			if waiting {
				cancel()
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()
	began := time.Now()
	// Each try would wait 30 s for the record, longer than the grace.
	err := store.MigrateWithLockPatience(run, url, 30*time.Second, time.Second, 3)
	cancel()
	<-watched
	if err == nil || time.Since(began) > 15*time.Second {
		t.Fatalf("cancelled Migrate: %v after %s; want an error within seconds", err, time.Since(began))
	}
	if b, ok := boundOn(t, conn, "readings", "readings_before_partitioning"); ok {
		t.Fatalf("readings_before_partitioning (< %d) left after a cancelled run (%v)", b, err)
	}
	if have := recorded(t, conn, "0003_readings_bound.sql"); len(have) != 0 {
		t.Fatalf("recorded %v after a cancelled run; want 0003 not", have)
	}
}

// eventsBeforeConversion returns a database migrated up to 0011 holding n
// dispatched events, a connection to it and the statement that stores an
// event of its farm at $1.
func eventsBeforeConversion(t *testing.T, n int) (string, *pgx.Conn, string) {
	t.Helper()
	url, conn := dbUpTo(t, "0011_webhook_secret_rotation.sql")
	farm := uuid.New()
	for _, q := range []string{
		fmt.Sprintf("INSERT INTO farms (id, name, created_at_ms) VALUES ('%s', 'f', 0)", farm),
		fmt.Sprintf(`INSERT INTO events (id, type, farm_id, occurred_at_ms, data, dispatched_at_ms)
			SELECT gen_random_uuid(), 'trigger.fired', '%s', %d - g * 1000, '{}', 1 FROM generate_series(1, %d) g`,
			farm, time.Now().UnixMilli(), n),
		"ANALYZE events",
	} {
		if _, err := conn.Exec(context.Background(), q); err != nil {
			t.Fatal(err)
		}
	}
	return url, conn, fmt.Sprintf(`INSERT INTO events (id, type, farm_id, occurred_at_ms, data)
		VALUES (gen_random_uuid(), 'trigger.fired', '%s', $1, '{}')`, farm)
}

// The events conversion too: a run that stops before 0014 is recorded
// leaves no bound and un-records 0012 and 0013a; the next run converts;
// 0013a, new beside an applied 0014, does nothing there.
func TestStoppedEventsConversionLeavesNoBound(t *testing.T) {
	ctx := context.Background()
	url, conn, insert := eventsBeforeConversion(t, 100)
	hold := holdRecord(t, url, "0014_events_partitioned.sql")

	err := store.MigrateWithLockPatience(ctx, url, 100*time.Millisecond, 10*time.Millisecond, 3)
	if err == nil || !strings.Contains(err.Error(), "0014") {
		t.Fatalf("Migrate with 0014 held: %v; want an error naming 0014", err)
	}
	if b, ok := boundOn(t, conn, "events", "events_before_partitioning"); ok {
		t.Fatalf("events_before_partitioning (< %d) left on events after the run stopped", b)
	}
	if have := recorded(t, conn, "0012_events_bound.sql", "0013a_events_bound_validate.sql", "0013_webhooks_state_seq.sql"); len(have) != 1 {
		t.Fatalf("recorded %v after the run stopped; want 0013 alone", have)
	}
	assertWritesAtFarFuture(t, conn, insert)

	if err := hold.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if err := store.Migrate(ctx, url); err != nil {
		t.Fatalf("the next Migrate: %v", err)
	}
	if kind, n, _ := tableShape(ctx, t, conn, "events"); kind != "p" || n != 100 {
		t.Fatalf("events after the next run: relkind %q, %d rows; want partitioned, 100", kind, n)
	}
	if _, err := conn.Exec(ctx, "DELETE FROM schema_migrations WHERE version = '0013a_events_bound_validate.sql'"); err != nil {
		t.Fatal(err)
	}
	if err := store.Migrate(ctx, url); err != nil {
		t.Fatalf("Migrate with 0013a unrecorded past 0014: %v", err)
	}
	if have := recorded(t, conn, "0013a_events_bound_validate.sql"); len(have) != 1 {
		t.Fatalf("0013a recorded: %v, want it", have)
	}
}

// 0014's swap, tried again while its locks are held, does not validate
// the bound at each try: events are scanned once, not once a try.
func TestEventsSwapRetriesDoNotRescan(t *testing.T) {
	ctx := context.Background()
	const n, tries = 20000, 6
	url, conn, _ := eventsBeforeConversion(t, n)
	hold := holdRecord(t, url, "0014_events_partitioned.sql")
	read := func() int64 {
		var r int64
		if err := conn.QueryRow(ctx, "SELECT seq_tup_read FROM pg_stat_user_tables WHERE relid = 'events'::regclass").Scan(&r); err != nil {
			t.Fatal(err)
		}
		return r
	}
	before := read()
	err := store.MigrateWithLockPatience(ctx, url, 100*time.Millisecond, 10*time.Millisecond, tries)
	if err == nil || !strings.Contains(err.Error(), "0014") {
		t.Fatalf("Migrate with 0014 held: %v; want an error naming 0014", err)
	}
	_ = hold.Rollback(ctx)
	hold.Conn().Close(ctx)
	// A backend's counts are flushed when it ends.
	deadline := time.Now().Add(10 * time.Second)
	for others := 1; others > 0 && time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		err := conn.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND backend_type = 'client backend' AND pid <> pg_backend_pid()`).Scan(&others)
		if err != nil {
			t.Fatal(err)
		}
	}
	if scanned := read() - before; scanned >= 3*n {
		t.Fatalf("%d tries of 0014 read %d rows of %d events by sequential scan; want them scanned once", tries, scanned, n)
	}
}

// Migration 0009's transaction, which holds devices locked against every
// reading's device update, is brief whatever the number of devices; their
// seen_minute_ms is filled after it in short transactions, so a device
// writer never waits long.
func TestMigrationSeenMinuteKeepsDeviceWritesShort(t *testing.T) {
	ctx := context.Background()
	const n = 150000 // filled in one transaction: about 5 s here
	url, conn := dbUpTo(t, "0008_events_trace_parent.sql")
	farm := uuid.New()
	for _, q := range []string{
		fmt.Sprintf("INSERT INTO farms (id, name, created_at_ms) VALUES ('%s', 'f', 0)", farm),
		fmt.Sprintf(`INSERT INTO devices (id, farm_id, name, key_hash, created_at_ms, last_seen_ms)
			SELECT gen_random_uuid(), '%s', 'd' || g, int4send(g), 0, 1000000 + g * 1234 FROM generate_series(1, %d) g`, farm, n),
		"VACUUM ANALYZE devices",
	} {
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	var ids []uuid.UUID
	rows, _ := conn.Query(ctx, "SELECT id FROM devices TABLESAMPLE SYSTEM (1)")
	ids, err := pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
	if err != nil || len(ids) == 0 {
		t.Fatalf("sampled %d devices: %v", len(ids), err)
	}

	writer := connect(t, url)
	stop := make(chan struct{})
	result := make(chan error, 1)
	var slowest time.Duration
	var updates int
	go func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				result <- nil
				return
			default:
			}
			began := time.Now()
			if _, err := writer.Exec(ctx, "UPDATE devices SET last_seen_ms = last_seen_ms + 1 WHERE id = $1", ids[i%len(ids)]); err != nil {
				result <- err
				return
			}
			slowest = max(slowest, time.Since(began))
			updates++
		}
	}()
	time.Sleep(100 * time.Millisecond)
	err = store.Migrate(ctx, url)
	close(stop)
	if werr := <-result; werr != nil || err != nil {
		t.Fatalf("Migrate: %v; writer: %v", err, werr)
	}
	if slowest > 2*time.Second {
		t.Fatalf("a device update waited %s during the migration (%d updates); want under 2 s", slowest, updates)
	}
	var empty int
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM devices WHERE seen_minute_ms IS NULL").Scan(&empty); err != nil || empty != 0 {
		t.Fatalf("%d devices without seen_minute_ms after Migrate (%v), want none", empty, err)
	}
	t.Logf("%d updates during the migration, the slowest %s", updates, slowest)
}

// Devices that reported and have no seen_minute_ms (a fill stopped
// partway, or a reading stored by an older release during an upgrade) are
// filled by the next Migrate, and found by the offline sweep then.
func TestMigrateFinishesTheSeenMinuteFill(t *testing.T) {
	ctx := context.Background()
	url := testenv.NewDatabase(t, migrator)
	conn := connect(t, url)
	farm := uuid.New()
	for _, q := range []string{
		fmt.Sprintf("INSERT INTO farms (id, name, created_at_ms) VALUES ('%s', 'f', 0)", farm),
		fmt.Sprintf(`INSERT INTO devices (id, farm_id, name, key_hash, created_at_ms, last_seen_ms)
			SELECT gen_random_uuid(), '%s', 'd' || g, int4send(g), 0, CASE WHEN g %% 10 = 0 THEN NULL ELSE 1000000 + g * 1234 END
			FROM generate_series(1, 3500) g`, farm),
	} {
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	if err := store.Migrate(ctx, url); err != nil {
		t.Fatal(err)
	}
	wantSeenMinuteFilled(t, conn, 3150)
}
