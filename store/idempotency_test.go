package store_test

import (
	"context"
	"crypto/sha256"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/furrowhq/furrow"
	"github.com/furrowhq/furrow/store"
)

// Retention removes the expired keys of devices that stopped sending
// keyed readings, which no claim of theirs would remove, and keeps the
// keys still inside the window.
func TestPruneIdempotencyKeysRemovesOnlyExpired(t *testing.T) {
	ctx := context.Background()
	clock := futureClock()
	db, url := newDB(t, clock)
	fx := newFixture(t, db)
	var devices []furrow.Device
	for _, name := range []string{"a", "b", "c"} {
		d, _, err := db.CreateDevice(ctx, fx.farm.ID, name)
		if err != nil {
			t.Fatal(err)
		}
		devices = append(devices, d)
	}
	post := func(d furrow.Device, key string) {
		t.Helper()
		r := furrow.Reading{FarmID: fx.farm.ID, DeviceID: d.ID, MetricID: 1, Value: key}
		once := furrow.Idempotency{Key: key, Fingerprint: sha256.Sum256([]byte(key))}
		if _, _, replayed, err := db.CreateReadingOnce(ctx, r, nil, once); err != nil || replayed {
			t.Fatalf("CreateReadingOnce(%s) = replayed %v, %v", key, replayed, err)
		}
	}
	for _, d := range devices {
		post(d, "old-1")
		post(d, "old-2")
	}
	clock.Advance(12 * time.Hour)
	post(devices[2], "mid")
	clock.Advance(furrow.IdempotencyWindow - 11*time.Hour)
	post(devices[0], "new") // its claim removes device a's own old keys
	n, err := store.PruneIdempotencyKeysBy(ctx, db, clock.Now().Add(-furrow.IdempotencyWindow), 1)
	if err != nil || n != 4 {
		t.Fatalf("PruneIdempotencyKeys = %d, %v; want the 4 old keys of b and c", n, err)
	}
	rows, _ := connect(t, url).Query(ctx, "SELECT key FROM idempotency_keys ORDER BY key")
	left, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil || len(left) != 2 || left[0] != "mid" || left[1] != "new" {
		t.Fatalf("keys left = %v, %v; want the 2 inside the window", left, err)
	}
	if n, err := db.PruneIdempotencyKeys(ctx, clock.Now().Add(-furrow.IdempotencyWindow)); err != nil || n != 0 {
		t.Fatalf("PruneIdempotencyKeys again = %d, %v; want 0", n, err)
	}
}

// storedCount adds up the readings the store says it stored.
type storedCount struct {
	mu     sync.Mutex
	stored int
}

func (c *storedCount) IngestBatch(_, stored int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.stored += stored
}

// A keyed reading whose transaction fails at commit stored nothing, and
// is not counted as stored.
func TestKeyedReadingCountedOnlyOnceCommitted(t *testing.T) {
	ctx := context.Background()
	count := &storedCount{}
	db, url := newDB(t, futureClock(), func(o *store.Options) { o.Metrics = count })
	fx := newFixture(t, db)
	conn := connect(t, url)
	for _, sql := range []string{
		`CREATE FUNCTION fail_at_commit() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'refused at commit'; END $$`,
		`CREATE CONSTRAINT TRIGGER fail_at_commit AFTER INSERT ON idempotency_keys DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION fail_at_commit()`,
	} {
		if _, err := conn.Exec(ctx, sql); err != nil {
			t.Fatal(err)
		}
	}
	r := furrow.Reading{FarmID: fx.farm.ID, DeviceID: fx.device.ID, MetricID: 1, Value: "1"}
	if _, _, _, err := db.CreateReadingOnce(ctx, r, nil, furrow.Idempotency{Key: "k"}); err == nil {
		t.Fatal("CreateReadingOnce committed past the failing trigger")
	}
	if _, err := conn.Exec(ctx, "DROP TRIGGER fail_at_commit ON idempotency_keys"); err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := db.CreateReadingOnce(ctx, r, nil, furrow.Idempotency{Key: "k2"}); err != nil {
		t.Fatal(err)
	}
	count.mu.Lock()
	defer count.mu.Unlock()
	if count.stored != 1 {
		t.Fatalf("%d readings counted as stored; want the 1 committed", count.stored)
	}
}
