package store_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/furrowhq/furrow"
	"github.com/furrowhq/furrow/store"
)

// TestHealthUsesTheOutcomeIndexAt100kAttempts fills the delivery log with
// 100,000 attempts of 20 webhooks over three days, and 20,000 of two more
// that never failed and never delivered, and checks that the health
// summary of a farm's webhooks is answered from the
// delivery_attempts_outcome index, never by scanning the log, and without
// reading a webhook's other attempts to find its last delivery or failure.
func TestHealthUsesTheOutcomeIndexAt100kAttempts(t *testing.T) {
	ctx := context.Background()
	clock := newClock()
	db, url := newDB(t, clock)
	f := newFixture(t, db)
	var ids []uuid.UUID
	for range 22 {
		w, err := db.CreateWebhook(ctx, furrow.Webhook{FarmID: f.farm.ID, URL: "https://hooks.example.com/x", Secret: "whsec_x", Enabled: true})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, w.ID)
	}
	now := clock.Now()
	// One attempt per day through the store creates the days' partitions.
	for d := range 4 {
		err := db.AddAttempt(ctx, furrow.Attempt{WebhookID: ids[0], EventID: furrow.NewEventID(), Attempt: 1,
			StatusCode: 200, DurationMs: 1, AtMs: furrow.Millis(now.Add(-time.Duration(d) * 24 * time.Hour))})
		if err != nil {
			t.Fatal(err)
		}
	}
	conn := connect(t, url)
	// Every 10th attempt failed, every 50th was skipped; they spread evenly
	// over the last 72 hours.
	_, err := conn.Exec(ctx, `INSERT INTO delivery_attempts
		(delivery_id, webhook_id, event_id, attempt, status_code, response_body, error, duration_ms, at_ms)
		SELECT gen_random_uuid(), ($1::uuid[])[1 + i % 20], gen_random_uuid(), 1,
			CASE WHEN i / 20 % 10 = 0 THEN 503 WHEN i / 20 % 50 = 1 THEN 0 ELSE 200 END, '',
			CASE WHEN i / 20 % 50 = 1 THEN $3 ELSE '' END, i % 997, $2::bigint - (i * 2592)::bigint
		FROM generate_series(1, 100000) AS i`, ids, furrow.Millis(now), furrow.SkipWebhookDisabled)
	if err != nil {
		t.Fatal(err)
	}
	// The 21st webhook was always answered 200, the 22nd never.
	_, err = conn.Exec(ctx, `INSERT INTO delivery_attempts
		(delivery_id, webhook_id, event_id, attempt, status_code, response_body, error, duration_ms, at_ms)
		SELECT gen_random_uuid(), ($1::uuid[])[21 + i % 2], gen_random_uuid(), 1,
			CASE WHEN i % 2 = 0 THEN 200 ELSE 500 END, '', '', i % 997, $2::bigint - (i * 12960)::bigint
		FROM generate_series(1, 20000) AS i`, ids, furrow.Millis(now))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, "VACUUM ANALYZE delivery_attempts"); err != nil {
		t.Fatal(err)
	}
	// Each day partition has its own copy of the index, named by PostgreSQL.
	sentIndexes := map[string]bool{}
	rows, _ := conn.Query(ctx, `SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
		WHERE i.inhparent = 'delivery_attempts_outcome'::regclass`)
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil || len(names) < 4 {
		t.Fatalf("partitions of delivery_attempts_outcome: %v (%v)", names, err)
	}
	for _, n := range names {
		sentIndexes[n] = true
	}
	plan := explain(t, conn, "EXPLAIN "+store.HealthSQL, ids, furrow.Millis(now.Add(-furrow.HealthWindow)))
	if strings.Count(plan, " using ") == 0 {
		t.Fatalf("the health query uses no index:\n%s", plan)
	}
	for _, line := range strings.Split(plan, "\n") {
		// The empty partitions of the days ahead, which the store creates,
		// cost nothing to scan; a partition holding attempts must not be.
		if strings.Contains(line, "Seq Scan") && !strings.Contains(line, "cost=0.00..0.00 ") {
			t.Fatalf("the health query scans the log:\n%s", plan)
		}
		if _, idx, ok := strings.Cut(line, " using "); ok && !sentIndexes[strings.Fields(idx)[0]] {
			t.Fatalf("the health query reads an index other than delivery_attempts_outcome:\n%s", plan)
		}
	}
	// The last delivery of the webhook that never delivered, and the last
	// failure of the one that never failed, read nothing to find nothing.
	analyzed := explain(t, conn, "EXPLAIN (ANALYZE, COSTS OFF) "+store.HealthSQL, ids[20:], furrow.Millis(now.Add(-furrow.HealthWindow)))
	if strings.Contains(analyzed, "Rows Removed by Filter") {
		t.Fatalf("the health query filters rows it read:\n%s", analyzed)
	}
	t.Logf("plan of the health query of 20 webhooks over 100,000 attempts:\n%s", plan)
	var hs []furrow.AttemptHealth
	for range 2 { // the second run is the steady state, with a warm cache
		start := time.Now()
		if hs, err = db.AttemptHealth(ctx, ids); err != nil {
			t.Fatal(err)
		}
		t.Logf("AttemptHealth of 20 webhooks took %s", time.Since(start))
	}
	if h := hs[20]; h.LastFailure != nil || h.LastDeliveredAtMs == nil || *h.LastDeliveredAtMs != furrow.Millis(now)-2*12960 {
		t.Fatalf("health of the webhook that never failed: %+v", h)
	}
	if h := hs[21]; h.LastDeliveredAtMs != nil || h.LastFailure == nil || h.LastFailure.AtMs != furrow.Millis(now)-12960 || h.LastFailure.StatusCode != 500 {
		t.Fatalf("health of the webhook that never delivered: %+v", h)
	}
	total := 0
	for _, h := range hs[:20] {
		total += h.Attempts
		if h.LastFailure == nil || h.LastFailure.StatusCode != 503 || h.LastDeliveredAtMs == nil || h.P95DurationMs == nil {
			t.Fatalf("health %+v", h)
		}
	}
	// A third of the 100,000 fall in the last 24 h, less the skipped ones.
	if total < 32000 || total > 34000 {
		t.Fatalf("%d attempts in the window, want about 32,700", total)
	}
}

// explain returns the plan of query with args, one line per node.
func explain(t *testing.T, conn *pgx.Conn, query string, args ...any) string {
	t.Helper()
	rows, err := conn.Query(context.Background(), query, args...)
	if err != nil {
		t.Fatal(err)
	}
	var plan strings.Builder
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			t.Fatal(err)
		}
		plan.WriteString(line + "\n")
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return plan.String()
}

// Migration 0018 on a populated delivery log: every partition gets its
// index of outcomes, built and attached, delivery_attempts_sent is gone,
// and the summary reads as before.
func TestMigrationOutcomeIndexOnAPopulatedLog(t *testing.T) {
	ctx := context.Background()
	url, conn := dbUpTo(t, "0017_events_type_index_partial.sql")
	webhook := uuid.New()
	setup := []string{
		"CREATE TABLE delivery_attempts_p_early PARTITION OF delivery_attempts FOR VALUES FROM (0) TO (86400000)",
		"CREATE TABLE delivery_attempts_p_late PARTITION OF delivery_attempts FOR VALUES FROM (86400000) TO (172800000)",
		`INSERT INTO delivery_attempts (delivery_id, webhook_id, event_id, attempt, status_code, response_body, error, duration_ms, at_ms)
			SELECT gen_random_uuid(), '` + webhook.String() + `', gen_random_uuid(), 1,
				CASE WHEN g % 3 = 0 THEN 503 ELSE 200 END, '', CASE WHEN g % 3 = 0 THEN 'HTTP 503' ELSE '' END, g % 50, g * 1000
			FROM generate_series(1, 150) g`,
	}
	for _, q := range setup {
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	if err := store.Migrate(ctx, url); err != nil {
		t.Fatal(err)
	}
	assertPartitionIndex(ctx, t, conn, "0018", "delivery_attempts", "delivery_attempts_outcome", "delivery_attempts_sent")
	db, err := store.Open(ctx, url, store.Options{Clock: newClock()})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	hs, err := db.AttemptHealth(ctx, []uuid.UUID{webhook})
	if err != nil || len(hs) != 1 {
		t.Fatalf("AttemptHealth: %v, %v", hs, err)
	}
	if h := hs[0]; h.LastDeliveredAtMs == nil || *h.LastDeliveredAtMs != 149000 || h.LastFailure == nil ||
		h.LastFailure.AtMs != 150000 || h.LastFailure.Error != "HTTP 503" {
		t.Fatalf("health after the migration: %+v", h)
	}
	if err := store.Migrate(ctx, url); err != nil {
		t.Fatalf("Migrate again: %v", err)
	}
}

// Migration 0015 makes delivery_attempts_sent on the parent only: a
// database that migrates past 0015 and 0018 in one run builds no index on
// its existing attempts that 0018 would then drop, holding up the log's
// writes meanwhile. 0018 still ends with its own index everywhere.
func TestMigration0015BuildsNothingOnExistingAttempts(t *testing.T) {
	ctx := context.Background()
	url, conn := dbUpTo(t, "0014_events_partitioned.sql")
	for _, q := range []string{
		"CREATE TABLE delivery_attempts_p_early PARTITION OF delivery_attempts FOR VALUES FROM (0) TO (86400000)",
		`INSERT INTO delivery_attempts (delivery_id, webhook_id, event_id, attempt, status_code, response_body, error, duration_ms, at_ms)
			SELECT gen_random_uuid(), gen_random_uuid(), gen_random_uuid(), 1, 200, '', '', 1, g FROM generate_series(1, 100) g`,
	} {
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	if err := store.MigrateUpTo(ctx, url, "0015_webhook_owner_tools.sql"); err != nil {
		t.Fatal(err)
	}
	var built int
	err := conn.QueryRow(ctx, `SELECT count(*) FROM pg_index x JOIN pg_inherits i ON i.inhrelid = x.indexrelid
		WHERE i.inhparent = 'delivery_attempts_sent'::regclass`).Scan(&built)
	if err != nil || built != 0 {
		t.Fatalf("0015 built delivery_attempts_sent on %d existing partitions (%v), want none", built, err)
	}
	if err := store.Migrate(ctx, url); err != nil {
		t.Fatal(err)
	}
	assertPartitionIndex(ctx, t, conn, "0018", "delivery_attempts", "delivery_attempts_outcome", "delivery_attempts_sent")
}
