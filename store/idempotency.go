package store

import (
	"bytes"
	"context"
	"errors"
	"time"

	"github.com/google/uuid"
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
	if err == nil {
		db.countStored(1, nil, nil) // committed
	}
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

// pruneKeysBatch is how many devices one statement of
// PruneIdempotencyKeys looks at.
const pruneKeysBatch = 1000

// PruneIdempotencyKeys removes the keys older than before of every device,
// a batch of devices at a time in device order, each a probe of the
// (device_id, ts_ms) index. A device removes its own expired keys when it
// claims a new one; this catches those that stopped sending keyed readings.
func (db *DB) PruneIdempotencyKeys(ctx context.Context, before time.Time) (int64, error) {
	return db.pruneKeys(ctx, before, pruneKeysBatch)
}

func (db *DB) pruneKeys(ctx context.Context, before time.Time, batch int) (int64, error) {
	var total int64
	var after uuid.UUID // the nil UUID sorts first
	for {
		ids, n, err := db.pruneKeysAfter(ctx, after, before, batch)
		total += n
		if err != nil || len(ids) < batch {
			return total, translate(err, "prune idempotency keys", "device")
		}
		after = ids[len(ids)-1]
	}
}

// pruneKeysAfter removes the keys older than before of the batch devices
// after after, and returns those devices' ids.
func (db *DB) pruneKeysAfter(ctx context.Context, after uuid.UUID, before time.Time, batch int) ([]uuid.UUID, int64, error) {
	ctx, cancel := context.WithTimeout(ctx, writeTimeout)
	defer cancel()
	rows, _ := db.pool.Query(ctx, "SELECT id FROM devices WHERE id > $1 ORDER BY id LIMIT $2", after, batch)
	ids, err := pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
	if err != nil || len(ids) == 0 {
		return ids, 0, err
	}
	tag, err := db.pool.Exec(ctx, "DELETE FROM idempotency_keys WHERE device_id = ANY ($1) AND ts_ms < $2", ids, furrow.Millis(before))
	return ids, tag.RowsAffected(), err
}
