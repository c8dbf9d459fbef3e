package storetest

import (
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
			ds, err := e.Devices.Devices(e.ctx, f.ID)
			e.must(err)
			var names []string
			for _, d := range ds {
				names = append(names, d.Name)
			}
			if want := []string{"probe-a", "probe-b", "probe-c"}; !slices.Equal(names, want) {
				e.t.Fatalf("Devices = %v, want %v", names, want)
			}
		},
	})
}
