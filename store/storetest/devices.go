package storetest

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/furrowhq/furrow"
)

// device creates a device on a new farm.
func (e *env) device(name string) (furrow.Device, string) {
	e.t.Helper()
	f, _ := e.farm()
	d, key, err := e.Devices.CreateDevice(e.ctx, f.ID, name)
	e.must(err)
	return d, key
}

// DeviceService checks the furrow.DeviceService contract. Package
// store's own tests check what only the database shows of MarkOffline
// (its index, its exactness within a minute).
func DeviceService(t *testing.T, newSubject New) {
	run(t, newSubject, map[string]func(*env){
		"MarkOfflineOncePerSilence":   markOfflineOncePerSilence,
		"MarkOfflineLimitOldestFirst": markOfflineLimitOldestFirst,
		"CreateThenFind": func(e *env) {
			d, key := e.device("probe-1")
			if d.ID == uuid.Nil || d.Name != "probe-1" || d.LastSeenMs != nil || d.OfflineSinceMs != nil {
				e.t.Fatalf("created %+v", d)
			}
			if !strings.HasPrefix(key, furrow.DeviceKeyPrefix) {
				e.t.Fatalf("key %q lacks the prefix %q", key, furrow.DeviceKeyPrefix)
			}
			byKey, err := e.Devices.DeviceByKey(e.ctx, furrow.HashSecret(key))
			e.must(err)
			byID, err := e.Devices.DeviceByID(e.ctx, d.ID)
			e.must(err)
			for _, got := range []furrow.Device{byKey, byID} {
				if got.ID != d.ID || got.FarmID != d.FarmID || got.Name != d.Name || got.LastSeenMs != nil {
					e.t.Fatalf("found %+v, want %+v", got, d)
				}
			}
		},
		"UnknownIsNotFound": func(e *env) {
			e.device("probe-1")
			_, err := e.Devices.DeviceByKey(e.ctx, furrow.HashSecret(furrow.DeviceKeyPrefix+"unknown"))
			e.wantCode(err, furrow.ENOTFOUND, "DeviceByKey(unknown)")
			_, err = e.Devices.DeviceByID(e.ctx, uuid.New())
			e.wantCode(err, furrow.ENOTFOUND, "DeviceByID(unknown)")
		},
		"RotateRevokesTheOldKey": func(e *env) {
			d, old := e.device("probe-1")
			key, err := e.Devices.RotateDeviceKey(e.ctx, d.FarmID, d.ID)
			e.must(err)
			if key == old || !strings.HasPrefix(key, furrow.DeviceKeyPrefix) {
				e.t.Fatalf("rotated key %q (old %q)", key, old)
			}
			_, err = e.Devices.DeviceByKey(e.ctx, furrow.HashSecret(old))
			e.wantCode(err, furrow.ENOTFOUND, "DeviceByKey(revoked key)")
			got, err := e.Devices.DeviceByKey(e.ctx, furrow.HashSecret(key))
			e.must(err)
			if got.ID != d.ID {
				e.t.Fatalf("new key finds %v, want %v", got.ID, d.ID)
			}
		},
		"RotateOnAnotherFarmIsNotFound": func(e *env) {
			d, key := e.device("probe-1")
			other, _ := e.farm()
			_, err := e.Devices.RotateDeviceKey(e.ctx, other.ID, d.ID)
			e.wantCode(err, furrow.ENOTFOUND, "RotateDeviceKey(other farm)")
			_, err = e.Devices.DeviceByKey(e.ctx, furrow.HashSecret(key))
			e.must(err)
		},
		"ListByName": func(e *env) {
			f, _ := e.farm()
			for _, name := range []string{"probe-b", "probe-c", "probe-a"} {
				_, _, err := e.Devices.CreateDevice(e.ctx, f.ID, name)
				e.must(err)
			}
			e.device("elsewhere")
			ds, next, err := e.Devices.Devices(e.ctx, furrow.DeviceFilter{FarmID: f.ID})
			e.must(err)
			if want := []string{"probe-a", "probe-b", "probe-c"}; !slices.Equal(deviceNames(ds), want) || next != nil {
				e.t.Fatalf("Devices = %v, next %v; want %v, no next", deviceNames(ds), next, want)
			}
		},
		"ListPages": func(e *env) {
			f, _ := e.farm()
			// Two of a name, told apart by id; names that every collation
			// orders alike.
			names := []string{"b", "a", "c", "b", "a1", "d"}
			for _, name := range names {
				_, _, err := e.Devices.CreateDevice(e.ctx, f.ID, name)
				e.must(err)
			}
			all, _, err := e.Devices.Devices(e.ctx, furrow.DeviceFilter{FarmID: f.ID})
			e.must(err)
			if want := []string{"a", "a1", "b", "b", "c", "d"}; !slices.Equal(deviceNames(all), want) {
				e.t.Fatalf("Devices = %v, want %v", deviceNames(all), want)
			}
			for _, size := range []int{1, 2, 4, 6, 7} {
				var got []furrow.Device
				filter := furrow.DeviceFilter{FarmID: f.ID, Limit: size}
				for pages := 0; ; pages++ {
					page, next, err := e.Devices.Devices(e.ctx, filter)
					e.must(err)
					if len(page) > size || pages > len(names) {
						e.t.Fatalf("size %d: page of %d, or %d pages", size, len(page), pages)
					}
					got = append(got, page...)
					if next == nil {
						break
					}
					if *next != page[len(page)-1].Place() {
						e.t.Fatalf("size %d: next %v, want the last device's place", size, *next)
					}
					filter.After = next
				}
				if !slices.EqualFunc(got, all, func(a, b furrow.Device) bool { return a.ID == b.ID }) {
					e.t.Fatalf("size %d: pages hold %v, want %v", size, deviceNames(got), deviceNames(all))
				}
			}
		},
		"ListPageSize": func(e *env) {
			f, _ := e.farm()
			for i := range furrow.MaxListLimit + 1 {
				_, _, err := e.Devices.CreateDevice(e.ctx, f.ID, fmt.Sprintf("probe-%04d", i))
				e.must(err)
			}
			// No limit is a page of the default size: no list is read whole.
			page, next, err := e.Devices.Devices(e.ctx, furrow.DeviceFilter{FarmID: f.ID})
			e.must(err)
			if len(page) != furrow.DefaultListLimit || next == nil || next.Name != fmt.Sprintf("probe-%04d", furrow.DefaultListLimit-1) {
				e.t.Fatalf("no limit: %d devices, next %v; want %d", len(page), next, furrow.DefaultListLimit)
			}
			page, next, err = e.Devices.Devices(e.ctx, furrow.DeviceFilter{FarmID: f.ID, Limit: furrow.MaxListLimit + 5})
			e.must(err)
			if len(page) != furrow.MaxListLimit || next == nil || next.Name != "probe-0999" {
				e.t.Fatalf("Limit past the most: %d devices, next %v; want %d and probe-0999", len(page), next, furrow.MaxListLimit)
			}
			page, next, err = e.Devices.Devices(e.ctx, furrow.DeviceFilter{FarmID: f.ID, After: next, Limit: 1})
			e.must(err)
			if len(page) != 1 || page[0].Name != "probe-1000" || next != nil {
				e.t.Fatalf("last page: %v, next %v", deviceNames(page), next)
			}
		},
	})
}

// deviceNames is the names of ds, in order.
func deviceNames(ds []furrow.Device) []string {
	names := make([]string, 0, len(ds))
	for _, d := range ds {
		names = append(names, d.Name)
	}
	return names
}

// offlineAfter is the silence the MarkOffline cases mark devices after.
const offlineAfter = time.Hour

// advanceTo moves the clock on to the epoch ms at.
func (e *env) advanceTo(at int64) {
	e.t.Helper()
	d := time.Duration(at-furrow.Millis(e.clock.Now())) * time.Millisecond
	if d < 0 {
		e.t.Fatalf("the clock is past %d already", at)
	}
	e.clock.Advance(d)
}

// markOffline runs a sweep and returns the ids of the devices of its
// events, in order, failing unless each event is a device.offline of now
// with the data of docs/architecture.md ({device_id, last_seen_ms,
// offline_after_ms}) as stored, on its device's farm and readable as
// stored.
func (e *env) markOffline(limit int, lastSeen map[uuid.UUID]int64) []uuid.UUID {
	e.t.Helper()
	es, err := e.Devices.MarkOffline(e.ctx, offlineAfter, limit)
	e.must(err)
	now := furrow.Millis(e.clock.Now())
	var ids []uuid.UUID
	for _, ev := range es {
		var data furrow.DeviceOfflineData
		e.must(json.Unmarshal(ev.Data, &data))
		ids = append(ids, data.DeviceID)
		d, err := e.Devices.DeviceByID(e.ctx, data.DeviceID)
		e.must(err)
		id, err := furrow.ParseEventID(ev.ID)
		e.must(err)
		if at, ok := furrow.EventUUIDTime(id); ev.Type != furrow.EventDeviceOffline || ev.FarmID != d.FarmID || ev.OccurredAtMs != now || !ok || at != now {
			e.t.Fatalf("MarkOffline event %+v (id time %d), want a %s of farm %s at %d", ev, at, furrow.EventDeviceOffline, d.FarmID, now)
		}
		if want := (furrow.DeviceOfflineData{DeviceID: d.ID, LastSeenMs: lastSeen[d.ID], OfflineAfterMs: offlineAfter.Milliseconds()}); data != want {
			e.t.Fatalf("device.offline data %s, want %+v", ev.Data, want)
		}
		if d.OfflineSinceMs == nil || *d.OfflineSinceMs != now {
			e.t.Fatalf("device %s marked, but its OfflineSinceMs is %v, want %d", d.ID, d.OfflineSinceMs, now)
		}
		stored, err := e.Events.Event(e.ctx, ev.ID)
		e.must(err)
		if stored.Type != ev.Type || stored.FarmID != ev.FarmID || stored.OccurredAtMs != now || !sameJSON(stored.Data, ev.Data) {
			e.t.Fatalf("stored %+v, want the event returned %+v", stored, ev)
		}
	}
	return ids
}

// wantOnline fails unless the devices are not marked offline.
func (e *env) wantOnline(what string, ds ...furrow.Device) {
	e.t.Helper()
	for _, d := range ds {
		got, err := e.Devices.DeviceByID(e.ctx, d.ID)
		e.must(err)
		if got.OfflineSinceMs != nil {
			e.t.Fatalf("%s: device %s is marked offline since %d", what, d.Name, *got.OfflineSinceMs)
		}
	}
}

// A device is marked once its last reading is more than offlineAfter old,
// not at exactly offlineAfter; a device that never reported is not marked;
// a marked device is not marked again until a reading clears the mark,
// and its next silence is marked anew. The event waits for the webhook
// that subscribes to it.
func markOfflineOncePerSilence(e *env) {
	f, _ := e.farm()
	newDevice := func(name string) (furrow.Device, string) {
		d, key, err := e.Devices.CreateDevice(e.ctx, f.ID, name)
		e.must(err)
		return d, key
	}
	early, earlyKey := newDevice("early")
	late, lateKey := newDevice("late")
	never, _ := newDevice("never")
	e.webhook(f.ID, furrow.EventDeviceOffline)
	lastSeen := map[uuid.UUID]int64{}
	r, _ := e.reading(early, earlyKey, 220, "1")
	lastSeen[early.ID] = r.Timestamp
	e.clock.Advance(30 * time.Minute)
	r, _ = e.reading(late, lateKey, 220, "2")
	lastSeen[late.ID] = r.Timestamp

	e.advanceTo(lastSeen[early.ID] + offlineAfter.Milliseconds())
	if got := e.markOffline(10, lastSeen); len(got) != 0 {
		e.t.Fatalf("silent exactly offlineAfter: marked %v, want none", got)
	}
	e.clock.Advance(time.Millisecond)
	if got := e.markOffline(10, lastSeen); !slices.Equal(got, []uuid.UUID{early.ID}) {
		e.t.Fatalf("1 ms past offlineAfter: marked %v, want the early device %s", got, early.ID)
	}
	e.wantOnline("after the first sweep", late, never)
	if e.Outbox != nil {
		claimed, err := e.Outbox.ClaimEvents(e.ctx, furrow.Claim{Owner: uuid.New(), Limit: 10, Lease: time.Minute})
		e.must(err)
		if len(claimed) != 1 || claimed[0].Type != furrow.EventDeviceOffline {
			e.t.Fatalf("the outbox hands out %+v, want the device.offline for the subscribing webhook", claimed)
		}
	}
	e.clock.Advance(time.Hour)
	if got := e.markOffline(10, lastSeen); !slices.Equal(got, []uuid.UUID{late.ID}) {
		e.t.Fatalf("an hour later: marked %v, want only the late device %s (early is marked already)", got, late.ID)
	}
	e.clock.Advance(24 * time.Hour)
	if got := e.markOffline(10, lastSeen); len(got) != 0 {
		e.t.Fatalf("a day later: marked %v again, want none", got)
	}
	e.wantOnline("a device that never reported", never)

	// The early device sends again: the mark goes, and comes back only
	// after a new silence, with the new reading's time.
	r, _ = e.reading(early, earlyKey, 220, "3")
	lastSeen[early.ID] = r.Timestamp
	e.wantOnline("after a reading", early)
	if got, err := e.Devices.DeviceByID(e.ctx, early.ID); err != nil || got.LastSeenMs == nil || *got.LastSeenMs != r.Timestamp {
		e.t.Fatalf("after a reading: %+v, %v; want last seen %d", got, err, r.Timestamp)
	}
	if got := e.markOffline(10, lastSeen); len(got) != 0 {
		e.t.Fatalf("just after a reading: marked %v, want none", got)
	}
	e.advanceTo(r.Timestamp + offlineAfter.Milliseconds() + 1)
	if got := e.markOffline(10, lastSeen); !slices.Equal(got, []uuid.UUID{early.ID}) {
		e.t.Fatalf("the next silence: marked %v, want the early device %s", got, early.ID)
	}
}

// A sweep marks at most limit devices, those silent longest first, and
// the next sweep the rest; a limit of 0 marks none.
func markOfflineLimitOldestFirst(e *env) {
	lastSeen := map[uuid.UUID]int64{}
	var order []uuid.UUID // silent longest first
	for i := range 5 {
		d, key := e.device(fmt.Sprintf("probe-%d", i))
		r, _ := e.reading(d, key, 220, "1")
		lastSeen[d.ID] = r.Timestamp
		order = append(order, d.ID)
		e.clock.Advance(2 * time.Minute) // the store orders by the minute
	}
	e.clock.Advance(offlineAfter)
	if got := e.markOffline(0, lastSeen); len(got) != 0 {
		e.t.Fatalf("limit 0: marked %v, want none", got)
	}
	first := e.markOffline(3, lastSeen)
	slices.SortFunc(first, func(a, b uuid.UUID) int { return int(lastSeen[a] - lastSeen[b]) })
	if !slices.Equal(first, order[:3]) {
		e.t.Fatalf("limit 3: marked %v, want the 3 silent longest %v", first, order[:3])
	}
	rest := e.markOffline(3, lastSeen)
	slices.SortFunc(rest, func(a, b uuid.UUID) int { return int(lastSeen[a] - lastSeen[b]) })
	if !slices.Equal(rest, order[3:]) {
		e.t.Fatalf("the next sweep: marked %v, want the other 2 %v", rest, order[3:])
	}
	if got := e.markOffline(3, lastSeen); len(got) != 0 {
		e.t.Fatalf("a third sweep: marked %v, want none", got)
	}
}
