package store

import "context"

// Empty reports whether the database has no users yet, which is how
// `furrow dev` knows to seed its demo data.
func (db *DB) Empty(ctx context.Context) (bool, error) {
	var exists bool
	if err := db.pool.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM users)").Scan(&exists); err != nil {
		return false, translate(err, "check for users", "user")
	}
	return !exists, nil
}
