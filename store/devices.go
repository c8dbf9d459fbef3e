package store

import (
	"context"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/furrowhq/furrow"
)

const deviceColumns = "id, farm_id, name, last_seen_ms, offline_since_ms"

// scanDevice reads a row of deviceColumns. The ids are scanned as
// [16]byte: a uuid.UUID target would take pgx's sql.Scanner path, a
// string and a parse each, half the cost of listing a large farm.
func scanDevice(row pgx.Row) (furrow.Device, error) {
	var d furrow.Device
	err := row.Scan((*[16]byte)(&d.ID), (*[16]byte)(&d.FarmID), &d.Name, &d.LastSeenMs, &d.OfflineSinceMs)
	return d, err
}

// CreateDevice claims a new device on a farm and returns it with its API
// key, shown once; only the key's hash is stored. An unknown farm is
// ENOTFOUND.
func (db *DB) CreateDevice(ctx context.Context, farmID uuid.UUID, name string) (furrow.Device, string, error) {
	d := furrow.Device{ID: uuid.New(), FarmID: farmID, Name: name}
	key := furrow.NewDeviceKey()
	hash := furrow.HashSecret(key)
	_, err := db.pool.Exec(ctx,
		"INSERT INTO devices (id, farm_id, name, key_hash, created_at_ms) VALUES ($1, $2, $3, $4, $5)",
		d.ID, farmID, name, hash[:], db.nowMs())
	if err != nil {
		return furrow.Device{}, "", translate(err, "create device", "device")
	}
	return d, key, nil
}

// RotateDeviceKey issues a new key for the farm's device and replaces the
// stored hash, so the old key stops working at once. An unknown device is
// ENOTFOUND.
func (db *DB) RotateDeviceKey(ctx context.Context, farmID, deviceID uuid.UUID) (string, error) {
	key := furrow.NewDeviceKey()
	hash := furrow.HashSecret(key)
	tag, err := db.pool.Exec(ctx, "UPDATE devices SET key_hash = $1 WHERE id = $2 AND farm_id = $3",
		hash[:], deviceID, farmID)
	if err != nil {
		return "", translate(err, "rotate device key", "device")
	}
	if tag.RowsAffected() == 0 {
		return "", furrow.Errorf(furrow.ENOTFOUND, "The device was not found.")
	}
	return key, nil
}

// DeviceByKey returns the device whose API key has the hash keyHash;
// ENOTFOUND if none.
func (db *DB) DeviceByKey(ctx context.Context, keyHash furrow.SecretHash) (furrow.Device, error) {
	d, err := scanDevice(db.pool.QueryRow(ctx,
		"SELECT "+deviceColumns+" FROM devices WHERE key_hash = $1", keyHash[:]))
	return d, translate(err, "device by key", "device")
}

// DeviceByID returns a device by id, whatever its farm; ENOTFOUND if none.
func (db *DB) DeviceByID(ctx context.Context, id uuid.UUID) (furrow.Device, error) {
	d, err := scanDevice(db.pool.QueryRow(ctx, "SELECT "+deviceColumns+" FROM devices WHERE id = $1", id))
	return d, translate(err, "device by id", "device")
}

// Devices lists the page of a farm's devices that f selects, by name and
// then id; an unknown farm has none. The farm's index on (name, id) serves
// the order and the place, so a page costs its own rows only.
func (db *DB) Devices(ctx context.Context, f furrow.DeviceFilter) ([]furrow.Device, *furrow.DevicePlace, error) {
	limit := furrow.ListLimit(f.Limit)
	q, args := devicesQuery(f, limit)
	rows, _ := db.pool.Query(ctx, q, args...)
	ds, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (furrow.Device, error) { return scanDevice(r) })
	if err != nil {
		return nil, nil, translate(err, "list devices", "farm")
	}
	if len(ds) <= limit {
		return ds, nil, nil
	}
	next := ds[limit-1].Place()
	return ds[:limit], &next, nil
}

// devicesQuery is the statement of a page of f's devices, limit of them
// and one more, which tells whether a page follows.
func devicesQuery(f furrow.DeviceFilter, limit int) (string, []any) {
	q, args := "SELECT "+deviceColumns+" FROM devices WHERE farm_id = $1", []any{f.FarmID}
	if f.After != nil {
		q += " AND (name, id) > ($2, $3)"
		args = append(args, f.After.Name, f.After.ID)
	}
	args = append(args, limit+1)
	return q + fmt.Sprintf(" ORDER BY name, id LIMIT $%d", len(args)), args
}

// hashOf is the stored bytes of a secret's hash.
func hashOf(secret string) []byte {
	h := furrow.HashSecret(secret)
	return h[:]
}
