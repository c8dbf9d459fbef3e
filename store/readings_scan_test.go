package store_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/furrowhq/furrow"
)

// A device's readings under many newer ones of another device: no index
// orders a device's readings of every metric by time, so a page of the
// device alone reads at most furrow.MaxScanRows of the farm's, and returns
// a cursor to go on from, rather than read the farm's whole history.
func TestReadingsOfADeviceAloneReadABoundedScan(t *testing.T) {
	ctx := context.Background()
	clock := futureClock() // one second before midnight
	db, url := newDB(t, clock)
	fx := newFixture(t, db)
	busy, _, err := db.CreateDevice(ctx, fx.farm.ID, "busy")
	if err != nil {
		t.Fatal(err)
	}
	var quiet []furrow.Reading // newest first, 5 on each side of midnight
	for i := range 10 {
		r, _, err := db.CreateReading(ctx, reading(fx, int32(i%3+1), fmt.Sprint(i)), nil)
		if err != nil {
			t.Fatal(err)
		}
		quiet = append([]furrow.Reading{r}, quiet...)
		clock.Advance(200 * time.Millisecond)
	}
	newer := furrow.MaxScanRows + 5_000
	_, err = connect(t, url).Exec(ctx, `INSERT INTO readings (device_id, farm_id, metric_id, value, ts_ms)
		SELECT $1, $2, 1, 'new', $3::bigint + g FROM generate_series(1, $4) g`,
		busy.ID, fx.farm.ID, clock.Now().UnixMilli(), newer)
	if err != nil {
		t.Fatal(err)
	}

	f := furrow.ReadingFilter{FarmID: fx.farm.ID, DeviceID: &fx.device.ID}
	var counts []int
	var got []furrow.Reading
	for page := 0; ; page++ {
		rs, next, err := db.Readings(ctx, f)
		if err != nil {
			t.Fatal(err)
		}
		counts, got = append(counts, len(rs)), append(got, rs...)
		if next == nil || page > 5 {
			break
		}
		f.Before = next
	}
	// The first page reads MaxScanRows of the busy device's; the second the
	// rest, fewer than MaxScanRows, and all of the quiet device's.
	if !slices.Equal(counts, []int{0, 10}) || fmt.Sprint(got) != fmt.Sprint(quiet) {
		t.Fatalf("pages of %v readings: %v; want 0 then 10: %v", counts, got, quiet)
	}

	// Small bounds and pages, whose edges fall on either side of midnight,
	// neither skip nor repeat a reading. (From below the busy device's.)
	below := furrow.Cursor{TimestampMs: quiet[0].Timestamp + 1}
	since := quiet[8].Timestamp
	for scan := 1; scan <= 4; scan++ {
		got := pageAll(t, db, furrow.ReadingFilter{FarmID: fx.farm.ID, DeviceID: &fx.device.ID, SinceMs: &since, Before: &below, Limit: 2, ScanRows: scan})
		if fmt.Sprint(got) != fmt.Sprint(quiet[:9]) {
			t.Fatalf("scanning %d at a time since %d: %v, want %v", scan, since, got, quiet[:9])
		}
	}
}
