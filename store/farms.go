package store

import (
	"context"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/furrowhq/furrow"
)

// CreateFarm creates a farm with owner as its owner, in one transaction. An
// unknown owner is ENOTFOUND.
func (db *DB) CreateFarm(ctx context.Context, owner uuid.UUID, name string) (furrow.Farm, error) {
	f := furrow.Farm{ID: uuid.New(), Name: name}
	err := pgx.BeginFunc(ctx, db.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "INSERT INTO farms (id, name, created_at_ms) VALUES ($1, $2, $3)",
			f.ID, name, db.nowMs()); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, "INSERT INTO farm_members (farm_id, user_id, role) VALUES ($1, $2, $3)",
			f.ID, owner, int16(furrow.RoleOwner))
		return err
	})
	if err != nil {
		return furrow.Farm{}, translate(err, "create farm", "farm")
	}
	return f, nil
}

// AddMember gives a user a role on a farm. An invalid role is EINVALID, an
// existing member ECONFLICT, an unknown farm or user ENOTFOUND.
func (db *DB) AddMember(ctx context.Context, m furrow.Member) error {
	if m.Role.String() == "" {
		return furrow.Errorf(furrow.EINVALID, "The role is not valid.")
	}
	_, err := db.pool.Exec(ctx, "INSERT INTO farm_members (farm_id, user_id, role) VALUES ($1, $2, $3)",
		m.FarmID, m.UserID, int16(m.Role))
	return translate(err, "add member", "member")
}

// MemberRole returns the user's role on the farm; ENOTFOUND when the farm
// does not exist or the user is not a member.
func (db *DB) MemberRole(ctx context.Context, farmID, userID uuid.UUID) (furrow.Role, error) {
	var role int16
	err := db.pool.QueryRow(ctx, "SELECT role FROM farm_members WHERE farm_id = $1 AND user_id = $2",
		farmID, userID).Scan(&role)
	if err != nil {
		return 0, translate(err, "member role", "farm membership")
	}
	return furrow.Role(role), nil
}
