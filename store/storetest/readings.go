package storetest

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/furrowhq/furrow"
)

// reading stores a reading of d with key; the clock moves on by 1 ms after.
func (e *env) reading(d furrow.Device, key string, metric int32, value string) (furrow.Reading, furrow.OutboxEvent) {
	e.t.Helper()
	r, ev, err := e.Readings.CreateReading(e.ctx, furrow.Reading{
		FarmID: d.FarmID, DeviceID: d.ID, MetricID: metric, Value: value,
	}, keyHash(key))
	e.must(err)
	e.clock.Advance(time.Millisecond)
	return r, ev
}

// keyHash is the hash of a device key as the API passes it; "" is none.
func keyHash(key string) *furrow.SecretHash {
	if key == "" {
		return nil
	}
	h := furrow.HashSecret(key)
	return &h
}

// ReadingService checks the furrow.ReadingService contract.
func ReadingService(t *testing.T, newSubject New) {
	t.Run("Idempotency", func(t *testing.T) { Idempotency(t, newSubject) })
	run(t, newSubject, map[string]func(*env){
		"CreateStampsAndEmits": func(e *env) {
			d, key := e.device("probe-1")
			now := furrow.Millis(e.clock.Now())
			r, ev := e.reading(d, key, 220, "31.5")
			if r.Timestamp != now || r.DeviceID != d.ID || r.FarmID != d.FarmID || r.MetricID != 220 || r.Value != "31.5" {
				e.t.Fatalf("stored %+v, want the input stamped %d", r, now)
			}
			id, err := furrow.ParseEventID(ev.ID)
			if err != nil || ev.Type != furrow.EventMetricValue || ev.FarmID != d.FarmID {
				e.t.Fatalf("event %+v", ev)
			}
			if at, ok := furrow.EventUUIDTime(id); !ok || at != now {
				e.t.Fatalf("event id %s holds %d (%v), want the reading's time %d", ev.ID, at, ok, now)
			}
			var data furrow.MetricValueData
			e.must(json.Unmarshal(ev.Data, &data))
			if data != (furrow.MetricValueData{DeviceID: d.ID, MetricID: 220, Value: "31.5", Timestamp: now}) {
				e.t.Fatalf("event data %+v", data)
			}
			got, err := e.Devices.DeviceByID(e.ctx, d.ID)
			e.must(err)
			if got.LastSeenMs == nil || *got.LastSeenMs != now {
				e.t.Fatalf("device last seen %v, want %d", got.LastSeenMs, now)
			}
		},
		"EmptyKeyIsNotChecked": func(e *env) {
			d, _ := e.device("probe-1")
			e.reading(d, "", 1, "1")
		},
		"RevokedKeyIsUnauthorized": func(e *env) {
			d, old := e.device("probe-1")
			_, err := e.Devices.RotateDeviceKey(e.ctx, d.FarmID, d.ID)
			e.must(err)
			_, _, err = e.Readings.CreateReading(e.ctx, furrow.Reading{FarmID: d.FarmID, DeviceID: d.ID, MetricID: 1, Value: "1"}, keyHash(old))
			e.wantCode(err, furrow.EUNAUTHORIZED, "CreateReading(revoked key)")
			rs, _, err := e.Readings.Readings(e.ctx, furrow.ReadingFilter{FarmID: d.FarmID, Limit: 10})
			e.must(err)
			if len(rs) != 0 {
				e.t.Fatalf("a refused reading was stored: %+v", rs)
			}
		},
		"MetricAloneReadsABoundedScan": func(e *env) {
			d, key := e.device("probe-1")
			var rare []furrow.Reading // metric 7, oldest first
			for i := range 12 {
				if i == 1 || i == 10 {
					r, _ := e.reading(d, key, 7, "rare")
					rare = append(rare, r)
				}
				e.reading(d, key, 1, "common")
			}
			// 14 readings, newest first: 1×11, 7, 1×9, 7, 1×2. Pages of the
			// metric read 5 of them at most.
			metric := int32(7)
			f := furrow.ReadingFilter{FarmID: d.FarmID, MetricID: &metric, Limit: 10, ScanRows: 5}
			counts, got := e.readingPages(f)
			// Reads 5 (2nd is the rare one), 5 (none), 4 (the last rare one).
			if !slices.Equal(counts, []int{1, 0, 1}) || len(got) != 2 || got[0].Timestamp != rare[1].Timestamp || got[1].Timestamp != rare[0].Timestamp {
				e.t.Fatalf("pages of %v readings: %+v; want 1, 0 and 1: the rare metric's two, newest first", counts, got)
			}
			// With a device the index gives the metric's readings in order: one page.
			f = furrow.ReadingFilter{FarmID: d.FarmID, DeviceID: &d.ID, MetricID: &metric, Limit: 10, ScanRows: 5}
			rs, next, err := e.Readings.Readings(e.ctx, f)
			e.must(err)
			if len(rs) != 2 || next != nil {
				e.t.Fatalf("device and metric: %d readings, next %v; want 2 and nil", len(rs), next)
			}
		},
		"DeviceAloneReadsABoundedScan": func(e *env) {
			quiet, key := e.device("probe-1")
			busy, _, err := e.Devices.CreateDevice(e.ctx, quiet.FarmID, "probe-2")
			e.must(err)
			var old []furrow.Reading // quiet's, of two metrics, newest first
			for i := range 10 {
				r, _ := e.reading(quiet, key, int32(i%2+1), "old")
				old = append([]furrow.Reading{r}, old...)
			}
			for range 12 {
				e.reading(busy, "", 1, "new")
			}
			// 22 readings, newest first: busy's 12, then quiet's 10. Pages
			// of quiet's read 5 of them at most.
			f := furrow.ReadingFilter{FarmID: quiet.FarmID, DeviceID: &quiet.ID, Limit: 4, ScanRows: 5}
			counts, got := e.readingPages(f)
			// Reads 5 (none of quiet's), 5 (none), 5 (3), 5 (a full page of
			// 4), then the 3 left, fewer than the bound: no cursor.
			if !slices.Equal(counts, []int{0, 0, 3, 4, 3}) || len(got) != len(old) {
				e.t.Fatalf("pages of %v readings, want 0, 0, 3, 4 and 3", counts)
			}
			for i, r := range got {
				if r.Timestamp != old[i].Timestamp || r.DeviceID != quiet.ID {
					e.t.Fatalf("reading %d = %+v, want %+v: the quiet device's, newest first", i, r, old[i])
				}
			}
		},
		"UnknownDeviceIsNotFound": func(e *env) {
			f, _ := e.farm()
			_, _, err := e.Readings.CreateReading(e.ctx, furrow.Reading{FarmID: f.ID, DeviceID: uuid.New(), MetricID: 1, Value: "1"}, nil)
			e.wantCode(err, furrow.ENOTFOUND, "CreateReading(unknown device)")
		},
		"ListFiltersAndPages": func(e *env) {
			d, key := e.device("probe-1")
			d2, _, err := e.Devices.CreateDevice(e.ctx, d.FarmID, "probe-2")
			e.must(err)
			var mine []furrow.Reading // d's metric 1, oldest first
			for i := range 5 {
				r, _ := e.reading(d, key, 1, string(rune('a'+i)))
				mine = append(mine, r)
				e.reading(d, key, 2, "other metric")
				e.reading(d2, "", 1, "other device")
			}
			other, okey := e.device("elsewhere")
			e.reading(other, okey, 1, "other farm")
			metric := int32(1)
			f := furrow.ReadingFilter{FarmID: d.FarmID, DeviceID: &d.ID, MetricID: &metric, Limit: 2}
			var got []furrow.Reading
			for page := 0; ; page++ {
				rs, next, err := e.Readings.Readings(e.ctx, f)
				e.must(err)
				got = append(got, rs...)
				if next == nil || page > 5 {
					break
				}
				f.Before = next
			}
			if len(got) != len(mine) {
				e.t.Fatalf("paged %d readings, want %d: %+v", len(got), len(mine), got)
			}
			for i, r := range got {
				if want := mine[len(mine)-1-i]; r.Value != want.Value || r.Timestamp != want.Timestamp {
					e.t.Fatalf("reading %d = %+v, want %+v (newest first)", i, r, want)
				}
			}
			since := mine[3].Timestamp
			rs, next, err := e.Readings.Readings(e.ctx, furrow.ReadingFilter{FarmID: d.FarmID, DeviceID: &d.ID, MetricID: &metric, SinceMs: &since, Limit: 10})
			e.must(err)
			if len(rs) != 2 || next != nil {
				e.t.Fatalf("since %d: %d readings, next %v; want 2 and nil", since, len(rs), next)
			}
		},
	})
}

// readingPages follows f's cursors, at most a dozen pages, and returns the
// length of each page and their readings in order.
func (e *env) readingPages(f furrow.ReadingFilter) ([]int, []furrow.Reading) {
	var counts []int
	var got []furrow.Reading
	for page := 0; ; page++ {
		rs, next, err := e.Readings.Readings(e.ctx, f)
		e.must(err)
		counts, got = append(counts, len(rs)), append(got, rs...)
		if next == nil || page > 10 {
			return counts, got
		}
		f.Before = next
	}
}
