package store

import (
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/furrowhq/furrow"
)

// constraintMessages gives the client-safe sentence for a violated
// constraint, named in the migrations.
var constraintMessages = map[string]string{
	"users_email_key":         "A user with this email already exists.",
	"users_token_hash_key":    "The new token collided with another; retry.",
	"farm_members_pkey":       "The user is already a member of the farm.",
	"farm_members_farm_fkey":  "The farm was not found.",
	"farm_members_user_fkey":  "The user was not found.",
	"devices_key_hash_key":    "The new device key collided with another; retry.",
	"devices_farm_fkey":       "The farm was not found.",
	"events_pkey":             "An event with this id already exists.",
	"webhooks_farm_fkey":      "The farm was not found.",
	"webhooks_pkey":           "A webhook with this id already exists.",
	"farms_pkey":              "A farm with this id already exists.",
	"devices_pkey":            "A device with this id already exists.",
	"users_pkey":              "A user with this id already exists.",
	"farm_members_role_check": "The role is not valid.",
}

// PostgreSQL error codes the store translates.
const (
	pgUniqueViolation     = "23505"
	pgForeignKeyViolation = "23503"
	pgLockNotAvailable    = "55P03" // a lock_timeout
	pgUndefinedTable      = "42P01"
	pgUndefinedColumn     = "42703"
	pgCheckViolation      = "23514"
	pgCharacterNotInRepe  = "22P05"
	pgInvalidByteSequence = "22021"
)

// translate turns a pgx error into a furrow error: no rows is ENOTFOUND
// (what names the missing thing), unique violation ECONFLICT, foreign-key
// violation ENOTFOUND; a missing table or column says to run furrow
// migrate; anything else is wrapped with op. Messages come from
// constraint names, never from the values, so secrets cannot leak.
func translate(err error, op, what string) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, pgx.ErrNoRows) {
		return furrow.Errorf(furrow.ENOTFOUND, "The %s was not found.", what)
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		msg, known := constraintMessages[pe.ConstraintName]
		switch pe.Code {
		case pgUniqueViolation:
			if !known {
				msg = "The resource already exists."
			}
			return furrow.Errorf(furrow.ECONFLICT, "%s", msg)
		case pgForeignKeyViolation:
			if !known {
				msg = "A referenced resource was not found."
			}
			return furrow.Errorf(furrow.ENOTFOUND, "%s", msg)
		case pgCheckViolation:
			if known {
				return furrow.Errorf(furrow.EINVALID, "%s", msg)
			}
		case pgInvalidByteSequence, pgCharacterNotInRepe:
			return furrow.Errorf(furrow.EINVALID, "Text must be valid UTF-8 without NUL characters.")
		case pgUndefinedTable, pgUndefinedColumn:
			return fmt.Errorf("store: %s: postgres error %s: the database lacks a table or column of this build; run furrow migrate", op, pe.Code)
		}
		// Only code and constraint: the detail may quote row values.
		return fmt.Errorf("store: %s: postgres error %s (%s)", op, pe.Code, pe.ConstraintName)
	}
	return fmt.Errorf("store: %s: %w", op, err)
}
