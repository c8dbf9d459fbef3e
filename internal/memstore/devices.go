package memstore

import (
	"cmp"
	"context"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/furrowhq/furrow"
)

// device is a stored device and the hash of its key.
type device struct {
	furrow.Device
	key furrow.SecretHash
}

// copied returns the device with its own copies of the optional times, so
// that callers cannot change what is stored.
func (d *device) copied() furrow.Device {
	out := d.Device
	out.LastSeenMs, out.OfflineSinceMs = clonePtr(d.LastSeenMs), clonePtr(d.OfflineSinceMs)
	return out
}

func clonePtr(p *int64) *int64 {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

// deviceKey is what CreateDevice returns besides the error.
type deviceKey struct {
	device furrow.Device
	key    string
}

// CreateDevice implements furrow.DeviceService.
func (s *Store) CreateDevice(ctx context.Context, farmID uuid.UUID, name string) (furrow.Device, string, error) {
	r, err := do(ctx, s, "CreateDevice", []any{farmID, name}, func() (deviceKey, error) {
		if _, ok := s.farms[farmID]; !ok {
			return deviceKey{}, notFound("farm")
		}
		key := furrow.NewDeviceKey()
		d := &device{Device: furrow.Device{ID: uuid.New(), FarmID: farmID, Name: name}, key: furrow.HashSecret(key)}
		s.devices[d.ID] = d
		s.keys[d.key] = d.ID
		return deviceKey{d.copied(), key}, nil
	})
	return r.device, r.key, err
}

// RotateDeviceKey implements furrow.DeviceService.
func (s *Store) RotateDeviceKey(ctx context.Context, farmID, deviceID uuid.UUID) (string, error) {
	return do(ctx, s, "RotateDeviceKey", []any{farmID, deviceID}, func() (string, error) {
		d, ok := s.devices[deviceID]
		if !ok || d.FarmID != farmID {
			return "", notFound("device")
		}
		key := furrow.NewDeviceKey()
		delete(s.keys, d.key)
		d.key = furrow.HashSecret(key)
		s.keys[d.key] = d.ID
		return key, nil
	})
}

// DeviceByKey implements furrow.DeviceService.
func (s *Store) DeviceByKey(ctx context.Context, keyHash furrow.SecretHash) (furrow.Device, error) {
	return do(ctx, s, "DeviceByKey", []any{keyHash}, func() (furrow.Device, error) {
		id, ok := s.keys[keyHash]
		if !ok {
			return furrow.Device{}, notFound("device")
		}
		return s.devices[id].copied(), nil
	})
}

// DeviceByID implements furrow.DeviceService.
func (s *Store) DeviceByID(ctx context.Context, id uuid.UUID) (furrow.Device, error) {
	return do(ctx, s, "DeviceByID", []any{id}, func() (furrow.Device, error) {
		d, ok := s.devices[id]
		if !ok {
			return furrow.Device{}, notFound("device")
		}
		return d.copied(), nil
	})
}

// Devices implements furrow.DeviceService.
func (s *Store) Devices(ctx context.Context, f furrow.DeviceFilter) ([]furrow.Device, *furrow.DevicePlace, error) {
	res, err := do(ctx, s, "Devices", []any{f}, func() (page[furrow.Device, furrow.DevicePlace], error) {
		var out []furrow.Device
		for _, d := range s.devices {
			if d.FarmID == f.FarmID && (f.After == nil || comparePlace(d.Place(), *f.After) > 0) {
				out = append(out, d.copied())
			}
		}
		slices.SortFunc(out, func(a, b furrow.Device) int { return comparePlace(a.Place(), b.Place()) })
		if n := furrow.ListLimit(f.Limit); len(out) > n {
			next := out[n-1].Place()
			return page[furrow.Device, furrow.DevicePlace]{out[:n], &next}, nil
		}
		return page[furrow.Device, furrow.DevicePlace]{rows: out}, nil
	})
	return res.rows, res.next, err
}

// comparePlace orders devices as the store does in a database of the C
// collation (as the tests' are): by the name's bytes, then by id.
func comparePlace(a, b furrow.DevicePlace) int {
	return cmp.Or(cmp.Compare(a.Name, b.Name), cmp.Compare(a.ID.String(), b.ID.String()))
}

// MarkOffline implements furrow.DeviceService, the devices silent the
// longest first.
func (s *Store) MarkOffline(ctx context.Context, offlineAfter time.Duration, limit int) ([]furrow.Event, error) {
	return do(ctx, s, "MarkOffline", []any{offlineAfter, limit}, func() ([]furrow.Event, error) {
		now := s.nowMs()
		var silent []*device
		for _, d := range s.devices {
			if d.OfflineSinceMs == nil && d.LastSeenMs != nil && *d.LastSeenMs < now-offlineAfter.Milliseconds() {
				silent = append(silent, d)
			}
		}
		slices.SortFunc(silent, func(a, b *device) int { return cmp.Compare(*a.LastSeenMs, *b.LastSeenMs) })
		var out []furrow.Event
		for _, d := range silent[:min(max(limit, 0), len(silent))] {
			d.OfflineSinceMs = &now
			e := furrow.NewDeviceOfflineEvent(furrow.NewEventUUID(now), d.FarmID, furrow.DeviceOfflineData{
				DeviceID: d.ID, LastSeenMs: *d.LastSeenMs, OfflineAfterMs: offlineAfter.Milliseconds(),
			}, now)
			s.insertEvent(e)
			out = append(out, e)
		}
		return out, nil
	})
}

func (r deviceKey) first() any { return r.device }
