package store_test

import (
	"context"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/furrowhq/furrow"
	"github.com/furrowhq/furrow/store"
)

// A failed chain F that ended at endedAt is counted while a delivery S,
// whose POST began 20 ms later, waits for its answer. Whichever of F's
// state write and S's row takes the webhook's row first, F does not stay
// counted unreported: either the write sees S's row (superseded) or S's
// row reads the count written, so S reports its chain.

// chainRace is a webhook with an attempt partition ready, and a connection
// that watches lock waits.
type chainRace struct {
	db      *store.DB
	url     string
	hook    furrow.Webhook
	endedAt int64 // F's end
	watch   *pgx.Conn
}

func newChainRace(t *testing.T) chainRace {
	t.Helper()
	ctx := context.Background()
	clock := newClock()
	db, url := newDB(t, clock)
	w, err := db.CreateWebhook(ctx, newWebhook(newFixture(t, db)))
	if err != nil {
		t.Fatal(err)
	}
	endedAt := furrow.Millis(clock.Now())
	// F's own failed attempt, which makes the day's partition too.
	err = db.AddAttempt(ctx, furrow.Attempt{WebhookID: w.ID, EventID: furrow.NewEventID(), Attempt: 1, StatusCode: 404, AtMs: endedAt})
	if err != nil {
		t.Fatal(err)
	}
	return chainRace{db: db, url: url, hook: w, endedAt: endedAt, watch: connect(t, url)}
}

// delivery is S's 2xx attempt row.
func (r chainRace) delivery() furrow.Attempt {
	return furrow.Attempt{DeliveryID: uuid.New(), WebhookID: r.hook.ID, EventID: furrow.NewEventID(), Attempt: 1,
		StatusCode: 200, DurationMs: 2980, AtMs: r.endedAt + 20}
}

// countF writes F's count, 1, in a goroutine.
func (r chainRace) countF() <-chan stateWrite {
	done := make(chan stateWrite, 1)
	go func() {
		superseded, err := r.db.SetWebhookState(context.Background(), r.hook.ID, true, 1, r.endedAt)
		done <- stateWrite{superseded, err}
	}()
	return done
}

type stateWrite struct {
	superseded bool
	err        error
}

// waitForLockWaits waits until n statements of the database wait for a
// lock, and fails the test when they do not within 5 s.
func (r chainRace) waitForLockWaits(t *testing.T, n int, what string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		var waiting int
		err := r.watch.QueryRow(context.Background(), `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock'`).Scan(&waiting)
		if err != nil {
			t.Fatal(err)
		}
		if waiting == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d statements wait for a lock, want %d: %s", waiting, n, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (r chainRace) wantFailures(t *testing.T, want int) {
	t.Helper()
	w, err := r.db.WebhookByID(context.Background(), r.hook.ID)
	if err != nil || w.ConsecutiveFailures != want {
		t.Fatalf("webhook has %d consecutive failures (%v), want %d", w.ConsecutiveFailures, err, want)
	}
}

// F's write locks the row first and is held open after its check: S's row
// waits for it and reads the count it wrote.
func TestChainCountWriteFirstIsReadByTheDelivery(t *testing.T) {
	ctx := context.Background()
	r := newChainRace(t)
	// A SHARE lock of the table lets the write lock its row (ROW SHARE) and
	// check, and holds its UPDATE (ROW EXCLUSIVE) until released.
	hold, err := connect(t, r.url).Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := hold.Exec(ctx, "LOCK TABLE webhooks IN SHARE MODE"); err != nil {
		t.Fatal(err)
	}
	wrote := r.countF()
	r.waitForLockWaits(t, 1, "F's write waits to update after its check")
	read := make(chan int, 1)
	go func() {
		n, err := r.db.AddDeliveredAttempt(ctx, r.delivery())
		if err != nil {
			t.Error(err)
		}
		read <- n
	}()
	r.waitForLockWaits(t, 2, "S's row waits for F's write to commit")
	if err := hold.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if w := <-wrote; w.err != nil || w.superseded {
		t.Fatalf("F's write: superseded %v, err %v; want written, S had no row when it checked", w.superseded, w.err)
	}
	if n := <-read; n != 1 {
		t.Fatalf("S's row read %d consecutive failures, want 1, F's count: S would not report its delivered chain", n)
	}
	r.wantFailures(t, 1) // until S's report restarts the count
}

// S's row locks first and is held open: F's write waits for it to commit,
// then sees it and is superseded.
func TestChainCountDeliveryFirstSupersedesTheWrite(t *testing.T) {
	ctx := context.Background()
	r := newChainRace(t)
	tx, err := connect(t, r.url).Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	a := r.delivery()
	ev, _ := furrow.ParseEventID(a.EventID)
	var read *int
	err = tx.QueryRow(ctx, store.CountedAttemptSQL, a.DeliveryID, a.WebhookID, ev, a.Attempt, a.StatusCode, "", "",
		a.DurationMs, a.AtMs, []int32{}).Scan(&read)
	if err != nil || read == nil || *read != 0 {
		t.Fatalf("S's row read %v (%v), want 0", read, err)
	}
	wrote := r.countF()
	r.waitForLockWaits(t, 1, "F's write waits for S's row to commit")
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if w := <-wrote; w.err != nil || !w.superseded {
		t.Fatalf("F's write: superseded %v, err %v; want superseded by S, which read 0 and does not report", w.superseded, w.err)
	}
	r.wantFailures(t, 0)
}

// TestDeliveredBetweenUsesTheOutcomeIndex fills the delivery log with
// 100,000 attempts of a webhook over three days, a tenth of them test
// deliveries with their test events, and checks that DeliveredBetween and
// the state write's guard, which leave test deliveries out, are still
// answered from delivery_attempts_outcome and the test events' primary
// key, reading no more than they must: the newest later 2xx of a farm
// event ends each probe.
func TestDeliveredBetweenUsesTheOutcomeIndex(t *testing.T) {
	ctx := context.Background()
	clock := newClock()
	db, url := newDB(t, clock)
	fx := newFixture(t, db)
	w, err := db.CreateWebhook(ctx, newWebhook(fx))
	if err != nil {
		t.Fatal(err)
	}
	now := clock.Now()
	for d := range 4 { // the days' partitions
		err := db.AddAttempt(ctx, furrow.Attempt{WebhookID: w.ID, EventID: furrow.NewEventID(), Attempt: 1,
			StatusCode: 500, AtMs: furrow.Millis(now.Add(-time.Duration(d) * 24 * time.Hour))})
		if err != nil {
			t.Fatal(err)
		}
	}
	conn := connect(t, url)
	// Every 10th attempt is a test delivery, every 7th failed; the newest
	// ten are test deliveries answered 200.
	_, err = conn.Exec(ctx, `WITH a AS (
			SELECT i, gen_random_uuid() AS ev, $2::bigint - (i * 2592)::bigint AS at FROM generate_series(1, 100000) AS i),
		t AS (INSERT INTO webhook_test_events (id, webhook_id, farm_id, occurred_at_ms, data)
			SELECT ev, $1, $3, at, '{}' FROM a WHERE i % 10 = 0 OR i <= 10)
		INSERT INTO delivery_attempts (delivery_id, webhook_id, event_id, attempt, status_code, response_body, error, duration_ms, at_ms)
		SELECT gen_random_uuid(), $1, ev, 1, CASE WHEN i % 7 = 0 AND i > 10 THEN 503 ELSE 200 END, '', '', 5, at FROM a`,
		w.ID, furrow.Millis(now), fx.farm.ID)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{"VACUUM ANALYZE delivery_attempts", "ANALYZE webhook_test_events"} {
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	// The index of today's partition, which holds the newest attempts, as
	// PostgreSQL named it.
	var outcome string
	err = conn.QueryRow(ctx, `SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
		JOIN pg_index x ON x.indexrelid = c.oid
		WHERE i.inhparent = 'delivery_attempts_outcome'::regclass AND x.indrelid = $1::regclass`,
		"delivery_attempts_p"+now.Format("20060102")).Scan(&outcome)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		after int64
		want  bool
	}{
		{furrow.Millis(now) - 11*2592, false}, // only the ten test deliveries came after
		{furrow.Millis(now) - 12*2592, true},  // and the 11th newest, a farm event's
		{furrow.Millis(now) - 3*86400000, true},
	} {
		if got, err := db.DeliveredBetween(ctx, w.ID, []int64{c.after}); err != nil || !slices.Equal(got, []bool{c.want}) {
			t.Fatalf("DeliveredBetween(%d) = %v (%v), want [%v]", c.after, got, err, c.want)
		}
		for name, plan := range map[string]string{
			"the write's guard": explain(t, conn, "EXPLAIN (ANALYZE, COSTS OFF, SUMMARY OFF, TIMING OFF) "+store.DeliveredAfterSQL, w.ID, c.after),
			"DeliveredBetween": explain(t, conn, "EXPLAIN (ANALYZE, COSTS OFF, SUMMARY OFF, TIMING OFF) "+store.DeliveredBetweenSQL, w.ID,
				[]int64{c.after - 86400000, c.after}, []int64{c.after, math.MaxInt64}),
		} {
			t.Logf("plan of %s after %d:\n%s", name, c.after, plan)
			for _, line := range strings.Split(plan, "\n") {
				if strings.Contains(line, "Seq Scan") && !strings.Contains(line, "never executed") && !strings.Contains(line, "rows=0 loops=1") {
					t.Fatalf("%s scans a table:\n%s", name, plan)
				}
			}
			uses := func(index string) bool { return strings.Contains(plan, " using "+index+" ") }
			if !uses(outcome) || !uses("webhook_test_events_pkey") {
				t.Fatalf("%s does not use %s (delivery_attempts_outcome) and the test events' key:\n%s", name, outcome, plan)
			}
		}
	}
}
