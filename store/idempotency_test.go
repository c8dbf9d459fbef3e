package store_test

import (
	"context"
	"crypto/sha256"
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
