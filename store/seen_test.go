package store_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/furrowhq/furrow/store"
)

// A reading's device update changes no indexed column within a minute, so
// PostgreSQL makes it a HOT update: no new entry in the device indexes.
func TestReadingsUpdateTheirDeviceInPlace(t *testing.T) {
	ctx := context.Background()
	db, url := newDB(t, newClock())
	fx := newFixture(t, db)
	const n = 20
	for i := range n {
		if _, _, err := db.CreateReading(ctx, reading(fx, 1, fmt.Sprint(i)), nil); err != nil {
			t.Fatal(err)
		}
	}
	conn := connect(t, url)
	// The store's connections report their counts when idle, within ~10 s.
	var upd, hot int64
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if err := conn.QueryRow(ctx, `SELECT n_tup_upd, n_tup_hot_upd FROM pg_stat_user_tables WHERE relname = 'devices'`).Scan(&upd, &hot); err != nil {
			t.Fatal(err)
		}
		if upd >= n {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	// The first reading sets seen_minute_ms from NULL: the one non-HOT update.
	if upd < n || hot < n-1 {
		t.Fatalf("device updates: %d, of which HOT %d; want %d with at least %d HOT", upd, hot, n, n-1)
	}
}

// The sweep finds devices by the minute of their last reading, but decides
// by the exact time: a device is marked 1 ms after its silence passes the
// limit, not a minute early or late.
func TestMarkOfflineIsExactWithinTheMinute(t *testing.T) {
	ctx := context.Background()
	clock := newClock()
	clock.Advance(41*time.Second + 7*time.Millisecond) // mid-minute
	db, _ := newDB(t, clock)
	fx := newFixture(t, db)
	if _, _, err := db.CreateReading(ctx, reading(fx, 1, "1"), nil); err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Hour)
	if es, err := db.MarkOffline(ctx, time.Hour, 10); err != nil || len(es) != 0 {
		t.Fatalf("at exactly the limit: %d marked, %v; want none", len(es), err)
	}
	clock.Advance(time.Millisecond)
	if es, err := db.MarkOffline(ctx, time.Hour, 10); err != nil || len(es) != 1 {
		t.Fatalf("1 ms past the limit: %d marked, %v; want 1", len(es), err)
	}
}

// Migration 0009 fills seen_minute_ms from last_seen_ms, so devices that
// reported before it are still found by the sweep.
func TestMigrationSeenMinuteOnPopulatedDevices(t *testing.T) {
	ctx := context.Background()
	url, conn := dbUpTo(t, "0008_events_trace_parent.sql")
	farm := uuid.New()
	if _, err := conn.Exec(ctx, fmt.Sprintf(`INSERT INTO farms (id, name, created_at_ms) VALUES ('%s', 'f', 0);
		INSERT INTO devices (id, farm_id, name, key_hash, created_at_ms, last_seen_ms)
		SELECT gen_random_uuid(), '%s', 'd' || g, int4send(g), 0, CASE WHEN g %% 10 = 0 THEN NULL ELSE 1000000 + g * 1234 END
		FROM generate_series(1, 1000) g`, farm, farm)); err != nil {
		t.Fatal(err)
	}
	if err := store.Migrate(ctx, url); err != nil {
		t.Fatal(err)
	}
	wantSeenMinuteFilled(t, conn, 900)
}

// wantSeenMinuteFilled checks the devices' seen_minute_ms after a migration
// filled it: every device that reported (reporting of them) has the minute
// of its last_seen_ms, and the offline sweep finds the 450 of them (devices
// made as in the tests: g < 500 and not a multiple of 10) silent since
// 1000000 + 500*1234.
func wantSeenMinuteFilled(t *testing.T, conn *pgx.Conn, reporting int) {
	t.Helper()
	ctx := context.Background()
	var wrong, got int
	if err := conn.QueryRow(ctx, `SELECT count(*) FILTER (WHERE seen_minute_ms IS DISTINCT FROM last_seen_ms - last_seen_ms % 60000),
		count(seen_minute_ms) FROM devices`).Scan(&wrong, &got); err != nil {
		t.Fatal(err)
	}
	if wrong != 0 || got != reporting {
		t.Fatalf("after the migration: %d devices with a wrong minute, %d with one; want 0 and %d", wrong, got, reporting)
	}
	var found int
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM ("+store.SweepCandidatesSQL+") c", 1000000+500*1234, reporting*2).Scan(&found); err != nil {
		t.Fatal(err)
	}
	if want := 450; found != want {
		t.Fatalf("sweep candidates after the migration: %d, want %d", found, want)
	}
}
