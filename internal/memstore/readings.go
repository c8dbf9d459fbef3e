package memstore

import (
	"context"
	"slices"

	"github.com/google/uuid"

	"github.com/furrowhq/furrow"
)

// reading is a stored reading and its place in the order of arrival.
type reading struct {
	furrow.Reading
	seq int64
}

// onceKey and onceEntry are a device's idempotency key and what was stored
// under it.
type onceKey struct {
	device uuid.UUID
	key    string
}

type onceEntry struct {
	fingerprint [32]byte
	reading     furrow.Reading
}

// stored is what CreateReading returns besides the error.
type stored struct {
	reading  furrow.Reading
	event    furrow.OutboxEvent
	replayed bool
}

// CreateReading implements furrow.ReadingService.
func (s *Store) CreateReading(ctx context.Context, r furrow.Reading, keyHash *furrow.SecretHash) (furrow.Reading, furrow.OutboxEvent, error) {
	res, err := do(ctx, s, "CreateReading", []any{r, keyHash}, func() (stored, error) {
		if err := validReading(r); err != nil {
			return stored{}, err
		}
		return s.createReading(r, keyHash)
	})
	return res.reading, res.event, err
}

// CreateReadingOnce implements furrow.ReadingService.
func (s *Store) CreateReadingOnce(ctx context.Context, r furrow.Reading, keyHash *furrow.SecretHash, once furrow.Idempotency) (furrow.Reading, furrow.OutboxEvent, bool, error) {
	res, err := do(ctx, s, "CreateReadingOnce", []any{r, keyHash, once}, func() (stored, error) {
		if err := validReading(r); err != nil {
			return stored{}, err
		}
		if !furrow.ValidIdempotencyKey(once.Key) {
			return stored{}, furrow.Errorf(furrow.EINVALID, "The idempotency key must be 1 to %d printable ASCII characters.", furrow.MaxIdempotencyKey)
		}
		k := onceKey{r.DeviceID, once.Key}
		if e, ok := s.once[k]; ok && e.reading.Timestamp >= s.nowMs()-furrow.IdempotencyWindow.Milliseconds() {
			if d, ok := s.devices[r.DeviceID]; ok && keyHash != nil && *keyHash != d.key {
				return stored{}, furrow.Errorf(furrow.EUNAUTHORIZED, "The key is no longer the device's.")
			}
			if e.fingerprint != once.Fingerprint {
				return stored{}, furrow.Errorf(furrow.ECONFLICT, "The Idempotency-Key was already used for a different body.")
			}
			return stored{reading: e.reading, replayed: true}, nil
		}
		res, err := s.createReading(r, keyHash)
		if err == nil {
			s.once[k] = onceEntry{once.Fingerprint, res.reading}
		}
		return res, err
	})
	return res.reading, res.event, res.replayed, err
}

func validReading(r furrow.Reading) error {
	if r.FarmID == uuid.Nil || r.DeviceID == uuid.Nil {
		return furrow.Errorf(furrow.EINVALID, "The reading needs a farm and a device.")
	}
	return r.Validate()
}

// createReading stores r, its event and the device's last-seen time, after
// checking the device and its key.
func (s *Store) createReading(r furrow.Reading, keyHash *furrow.SecretHash) (stored, error) {
	d, ok := s.devices[r.DeviceID]
	if !ok || d.FarmID != r.FarmID {
		return stored{}, notFound("device")
	}
	if keyHash != nil && *keyHash != d.key {
		return stored{}, furrow.Errorf(furrow.EUNAUTHORIZED, "The key is no longer the device's.")
	}
	r.Timestamp = s.nowMs()
	s.readings = append(s.readings, reading{r, s.next()})
	if d.LastSeenMs == nil || *d.LastSeenMs < r.Timestamp {
		d.LastSeenMs = clonePtr(&r.Timestamp)
	}
	d.OfflineSinceMs = nil
	return stored{reading: r, event: s.insertEvent(furrow.NewMetricValueEvent(furrow.NewEventUUID(r.Timestamp), r))}, nil
}

// page is what a list returns besides the error: its rows and the cursor
// C of the next page.
type page[T, C any] struct {
	rows []T
	next *C
}

// Readings implements furrow.ReadingService, ordered by (Timestamp, seq)
// like the store, a page of furrow.ListLimit(f.Limit) at a time.
func (s *Store) Readings(ctx context.Context, f furrow.ReadingFilter) ([]furrow.Reading, *furrow.Cursor, error) {
	res, err := do(ctx, s, "Readings", []any{f}, func() (page[furrow.Reading, furrow.Cursor], error) {
		place := func(r reading) furrow.Cursor { return furrow.Cursor{TimestampMs: r.Timestamp, Seq: r.seq} }
		// The farm's readings a page may read: all, or f.ScanLimit() after
		// the cursor, newest first.
		var farm []reading
		for _, r := range s.readings {
			if r.FarmID == f.FarmID && (f.SinceMs == nil || r.Timestamp >= *f.SinceMs) &&
				(f.Before == nil || compareAt(place(r), *f.Before) < 0) {
				farm = append(farm, r)
			}
		}
		var edge *furrow.Cursor
		if scan := f.ScanLimit(); scan > 0 && len(farm) >= scan {
			slices.SortFunc(farm, func(a, b reading) int { return -compareAt(place(a), place(b)) })
			last := place(farm[scan-1])
			farm, edge = farm[:scan], &last
		}
		var p page[furrow.Reading, furrow.Cursor]
		// farm is after the cursor already.
		p.rows, p.next = newestPage(slices.DeleteFunc(farm, func(r reading) bool { return !matches(r, f) }), place,
			nil, f.Limit, func(r reading) furrow.Reading { return r.Reading })
		if p.next == nil {
			p.next = edge
		}
		return p, nil
	})
	return res.rows, res.next, err
}

// matches applies the filter's optional conditions.
func matches(r reading, f furrow.ReadingFilter) bool {
	switch {
	case f.DeviceID != nil && r.DeviceID != *f.DeviceID,
		f.MetricID != nil && r.MetricID != *f.MetricID,
		f.SinceMs != nil && r.Timestamp < *f.SinceMs:
		return false
	}
	return true
}

func (r stored) first() any { return r.reading }

func (p page[T, C]) first() any { return p.rows }
