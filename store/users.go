package store

import (
	"context"
	"errors"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/furrowhq/furrow"
)

// CreateUser creates a user and returns it with its bearer token, shown
// once; only the token's hash is stored. An email furrow.CheckEmail refuses
// is EINVALID; a taken one is ECONFLICT.
func (db *DB) CreateUser(ctx context.Context, email string) (furrow.User, string, error) {
	if err := furrow.CheckEmail(email); err != nil {
		return furrow.User{}, "", err
	}
	u := furrow.User{ID: uuid.New(), Email: email}
	token := furrow.NewUserToken()
	hash := furrow.HashSecret(token)
	_, err := db.pool.Exec(ctx,
		"INSERT INTO users (id, email, token_hash, created_at_ms) VALUES ($1, $2, $3, $4)",
		u.ID, email, hash[:], db.nowMs())
	if err != nil {
		return furrow.User{}, "", translate(err, "create user", "user")
	}
	return u, token, nil
}

// UserByToken returns the user holding token; an unknown token is
// EUNAUTHORIZED.
func (db *DB) UserByToken(ctx context.Context, token string) (furrow.User, error) {
	var u furrow.User
	err := db.pool.QueryRow(ctx, "SELECT id, email FROM users WHERE token_hash = $1", hashOf(token)).
		Scan(&u.ID, &u.Email)
	if errors.Is(err, pgx.ErrNoRows) {
		return furrow.User{}, furrow.Errorf(furrow.EUNAUTHORIZED, "The token is invalid.")
	}
	return u, translate(err, "user by token", "user")
}
