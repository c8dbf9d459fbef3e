package store

import (
	"context"
	"encoding/base64"
	"fmt"

	"github.com/google/uuid"

	"github.com/furrowhq/furrow/keyring"
)

// secretAAD binds a sealed secret to its webhook, so that a sealed value
// copied into another webhook's row does not open. Every secret column of
// one webhook uses the same binding, so a sealed value may move between a
// webhook's own columns in SQL.
func secretAAD(webhookID uuid.UUID) []byte {
	return []byte("furrow.webhook.secret/" + webhookID.String())
}

// sealSecret returns the stored form of webhook id's secret and the id of
// the key that sealed it; without a key ring, the secret itself and nil.
func (db *DB) sealSecret(id uuid.UUID, secret string) (string, *string) {
	if db.keys == nil {
		return secret, nil
	}
	keyID, sealed := db.keys.Seal([]byte(secret), secretAAD(id))
	return base64.StdEncoding.EncodeToString(sealed), &keyID
}

// openSecret returns the plaintext of webhook id's stored secret, sealed
// with key keyID (nil: stored unsealed). A secret that does not open is an
// internal error, logged here with the ids only.
func (db *DB) openSecret(id uuid.UUID, stored string, keyID *string) (string, error) {
	if keyID == nil {
		return stored, nil
	}
	plain, err := db.open(id, stored, *keyID)
	if err != nil {
		db.log.Error("a webhook secret does not open", "webhook_id", id, "key_id", *keyID, "err", err)
		return "", err
	}
	return plain, nil
}

func (db *DB) open(id uuid.UUID, stored, keyID string) (string, error) {
	if db.keys == nil {
		return "", fmt.Errorf("store: webhook %s: its secret is sealed with key %q and no key ring is configured", id, keyID)
	}
	raw, err := base64.StdEncoding.DecodeString(stored)
	if err != nil {
		return "", fmt.Errorf("store: webhook %s: its sealed secret is not base64: %w", id, keyring.ErrOpen)
	}
	plain, err := db.keys.Open(keyID, raw, secretAAD(id))
	if err != nil {
		return "", fmt.Errorf("store: webhook %s: %w", id, err)
	}
	return string(plain), nil
}

// SecretsByKey counts the stored webhook secrets, the previous secrets of
// rotations included, by the id of the key that sealed them; the unsealed
// ones are counted under "".
func (db *DB) SecretsByKey(ctx context.Context) (map[string]int64, error) {
	rows, _ := db.pool.Query(ctx, `SELECT coalesce(key_id, ''), count(*) FROM (
		SELECT secret_key_id FROM webhooks
		UNION ALL SELECT previous_secret_key_id FROM webhooks WHERE previous_secret IS NOT NULL) s(key_id)
		GROUP BY 1`)
	defer rows.Close()
	out := map[string]int64{}
	for rows.Next() {
		var id string
		var n int64
		if err := rows.Scan(&id, &n); err != nil {
			return nil, translate(err, "count secrets", "webhook")
		}
		out[id] = n
	}
	if err := rows.Err(); err != nil {
		return nil, translate(err, "count secrets", "webhook")
	}
	return out, nil
}

// WebhookSecretStates counts the stored webhook secrets, previous ones
// included, that are sealed and those that are not.
func (db *DB) WebhookSecretStates(ctx context.Context) (sealed, unsealed int64, err error) {
	byKey, err := db.SecretsByKey(ctx)
	for id, n := range byKey {
		if id == "" {
			unsealed += n
		} else {
			sealed += n
		}
	}
	return sealed, unsealed, err
}

// Sealing reports whether new secrets are stored sealed (a key ring is
// configured).
func (db *DB) Sealing() bool { return db.keys != nil }
