package store

import (
	"bytes"
	"context"
	"errors"

	"github.com/jackc/pgx/v5"

	"github.com/furrowhq/furrow"
)

// claimKeySQL claims an idempotency key for a reading: it inserts the key,
// or takes over one older than the window, and returns a row only then. A
// concurrent claim of the same key waits for the other transaction and
// then sees its key. The device's other expired keys are removed on the way.
const claimKeySQL = `
WITH expired AS (
	DELETE FROM idempotency_keys WHERE device_id = $1 AND ts_ms < $7 AND key <> $2)
INSERT INTO idempotency_keys (device_id, key, fingerprint, metric_id, value, ts_ms)
VALUES ($1, $2, $3, $4, $5, $6)
ON CONFLICT (device_id, key) DO UPDATE
	SET fingerprint = EXCLUDED.fingerprint, metric_id = EXCLUDED.metric_id,
		value = EXCLUDED.value, ts_ms = EXCLUDED.ts_ms
	WHERE idempotency_keys.ts_ms < $7
RETURNING true`

var errKeyReused = furrow.Errorf(furrow.ECONFLICT, "The Idempotency-Key was already used for a different body.")

// CreateReadingOnce stores r as CreateReading does, in one transaction
// with its idempotency key; see furrow.ReadingService. It is not
// group-committed: each call is its own transaction.
func (db *DB) CreateReadingOnce(ctx context.Context, r furrow.Reading, keyHash *furrow.SecretHash, once furrow.Idempotency) (furrow.Reading, furrow.OutboxEvent, bool, error) {
	if err := validReading(r); err != nil {
		return furrow.Reading{}, furrow.OutboxEvent{}, false, err
	}
	if !furrow.ValidIdempotencyKey(once.Key) {
		return furrow.Reading{}, furrow.OutboxEvent{}, false, furrow.Errorf(furrow.EINVALID, "The idempotency key must be 1 to %d printable ASCII characters.", furrow.MaxIdempotencyKey)
	}
	r.Timestamp = db.nowMs()
	ctx, cancel := boundWrite(ctx)
	defer cancel()
	for _, p := range []*dayPartitions{db.readingParts, db.eventParts} {
		if err := p.ensure(ctx, db, r.Timestamp); err != nil {
			return furrow.Reading{}, furrow.OutboxEvent{}, false, translate(err, "create reading", "device")
		}
	}
	req := db.ingestReq(ctx, r, keyHash)
	err := pgx.BeginFunc(ctx, db.pool, func(tx pgx.Tx) error {
		if err := claimKey(ctx, tx, r, once); err != nil {
			return err
		}
		refused, err := db.writeReadingsWith(ctx, tx, []*ingestReq{req}, db.nowMs())
		if err != nil {
			return err
		}
		return refused[req] // Rolls the key back with the reading.
	})
	if errors.Is(err, errNotClaimed) {
		original, err := db.keyedReading(ctx, r, keyHash, once)
		return original, furrow.OutboxEvent{}, err == nil, err
	}
	if err != nil {
		return furrow.Reading{}, furrow.OutboxEvent{}, false, translate(err, "create reading", "device")
	}
	return r, req.event, false, nil
}

// errNotClaimed ends the transaction of a key that was used before.
var errNotClaimed = errors.New("store: idempotency key already used")

// claimKey claims once.Key for r's device in tx, or returns errNotClaimed.
func claimKey(ctx context.Context, tx pgx.Tx, r furrow.Reading, once furrow.Idempotency) error {
	expiry := r.Timestamp - furrow.IdempotencyWindow.Milliseconds()
	var claimed bool
	err := tx.QueryRow(ctx, claimKeySQL, r.DeviceID, once.Key, once.Fingerprint[:], r.MetricID, r.Value, r.Timestamp, expiry).Scan(&claimed)
	if errors.Is(err, pgx.ErrNoRows) {
		return errNotClaimed
	}
	return err
}

// keyedReading returns the reading stored under a used key, or ECONFLICT
// when it was stored for another body.
func (db *DB) keyedReading(ctx context.Context, r furrow.Reading, keyHash *furrow.SecretHash, once furrow.Idempotency) (furrow.Reading, error) {
	var fp []byte
	var keyValid bool
	out := furrow.Reading{DeviceID: r.DeviceID, FarmID: r.FarmID}
	var want []byte
	if keyHash != nil {
		want = keyHash[:]
	}
	err := db.pool.QueryRow(ctx, `SELECT k.fingerprint, k.metric_id, k.value, k.ts_ms, $3::bytea IS NULL OR d.key_hash = $3
		FROM idempotency_keys k JOIN devices d ON d.id = k.device_id
		WHERE k.device_id = $1 AND k.key = $2`, r.DeviceID, once.Key, want).Scan(&fp, &out.MetricID, &out.Value, &out.Timestamp, &keyValid)
	if err != nil {
		// Gone since (the device was deleted): as a missing device would be.
		return furrow.Reading{}, translate(err, "create reading", "device")
	}
	if !keyValid {
		// A replay answers only the device's current key, as a new reading does.
		return furrow.Reading{}, errKeyRevoked
	}
	if !bytes.Equal(fp, once.Fingerprint[:]) {
		return furrow.Reading{}, errKeyReused
	}
	return out, nil
}
