package storetest

import (
	"crypto/sha256"
	"testing"
	"time"

	"github.com/furrowhq/furrow"
)

// once stores a reading of d under an idempotency key whose body is body.
func (e *env) once(d furrow.Device, key, idem, body, value string) (furrow.Reading, bool, error) {
	e.t.Helper()
	r, _, replayed, err := e.Readings.CreateReadingOnce(e.ctx, furrow.Reading{
		FarmID: d.FarmID, DeviceID: d.ID, MetricID: 220, Value: value,
	}, keyHash(key), furrow.Idempotency{Key: idem, Fingerprint: sha256.Sum256([]byte(body))})
	return r, replayed, err
}

// count returns how many readings d's farm holds.
func (e *env) count(d furrow.Device) int {
	e.t.Helper()
	rs, _, err := e.Readings.Readings(e.ctx, furrow.ReadingFilter{FarmID: d.FarmID, Limit: 100})
	e.must(err)
	return len(rs)
}

// Idempotency checks CreateReadingOnce, part of furrow.ReadingService.
func Idempotency(t *testing.T, newSubject New) {
	run(t, newSubject, map[string]func(*env){
		"RetryStoresOnceAndAnswersTheOriginal": func(e *env) {
			d, key := e.device("probe-1")
			first, replayed, err := e.once(d, key, "k-1", "body", "21.5")
			e.must(err)
			if replayed || first.Timestamp == 0 || first.Value != "21.5" {
				e.t.Fatalf("first: %+v replayed=%v", first, replayed)
			}
			e.clock.Advance(time.Minute)
			again, replayed, err := e.once(d, key, "k-1", "body", "21.5")
			e.must(err)
			if !replayed || again.Timestamp != first.Timestamp || again.Value != first.Value || again.MetricID != 220 || again.DeviceID != d.ID {
				e.t.Fatalf("retry: %+v replayed=%v, want the original %+v", again, replayed, first)
			}
			if n := e.count(d); n != 1 {
				e.t.Fatalf("%d readings stored, want 1", n)
			}
		},
		"KeyReusedForAnotherBodyConflicts": func(e *env) {
			d, key := e.device("probe-1")
			_, _, err := e.once(d, key, "k-1", "body", "1")
			e.must(err)
			_, _, err = e.once(d, key, "k-1", "other body", "2")
			e.wantCode(err, furrow.ECONFLICT, "CreateReadingOnce(reused key)")
			if n := e.count(d); n != 1 {
				e.t.Fatalf("%d readings stored, want 1", n)
			}
		},
		"KeysAreEachDevicesOwnAndExpire": func(e *env) {
			d, key := e.device("probe-1")
			d2, key2, err := e.Devices.CreateDevice(e.ctx, d.FarmID, "probe-2")
			e.must(err)
			_, _, err = e.once(d, key, "k-1", "body", "1")
			e.must(err)
			_, replayed, err := e.once(d2, key2, "k-1", "body", "1")
			e.must(err)
			if replayed {
				e.t.Fatal("another device's key answered")
			}
			e.clock.Advance(furrow.IdempotencyWindow + time.Second)
			_, replayed, err = e.once(d, key, "k-1", "other body", "3")
			e.must(err)
			if replayed {
				e.t.Fatal("a key older than the window answered")
			}
			if n := e.count(d); n != 3 {
				e.t.Fatalf("%d readings stored, want 3", n)
			}
		},
		"RevokedKeyReplaysNothing": func(e *env) {
			d, old := e.device("probe-1")
			_, replayed, err := e.once(d, old, "k-1", "body", "1")
			e.must(err)
			_, err = e.Devices.RotateDeviceKey(e.ctx, d.FarmID, d.ID)
			e.must(err)
			// The same key and body again, with the revoked key: refused, as
			// a new reading with it would be, not answered from the key.
			_, replayed, err = e.once(d, old, "k-1", "body", "1")
			e.wantCode(err, furrow.EUNAUTHORIZED, "CreateReadingOnce(replay with a revoked key)")
			if replayed || e.count(d) != 1 {
				e.t.Fatalf("replayed=%v, %d stored; want a refusal and the one reading", replayed, e.count(d))
			}
		},
		"RevokedKeyStoresNothing": func(e *env) {
			d, old := e.device("probe-1")
			_, err := e.Devices.RotateDeviceKey(e.ctx, d.FarmID, d.ID)
			e.must(err)
			_, _, err = e.once(d, old, "k-1", "body", "1")
			e.wantCode(err, furrow.EUNAUTHORIZED, "CreateReadingOnce(revoked key)")
			// The key was not used up by the refused reading.
			_, replayed, err := e.once(d, "", "k-1", "body", "1")
			e.must(err)
			if replayed || e.count(d) != 1 {
				e.t.Fatalf("after a refused reading: replayed=%v, %d stored", replayed, e.count(d))
			}
		},
	})
}
