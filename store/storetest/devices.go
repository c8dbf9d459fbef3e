package storetest

import (
	"fmt"
	"slices"
	"strings"
	"testing"

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

// DeviceService checks the furrow.DeviceService contract except
// MarkOffline, which package store's own tests check.
func DeviceService(t *testing.T, newSubject New) {
	run(t, newSubject, map[string]func(*env){
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
