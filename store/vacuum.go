package store

import "context"

// Autovacuum reports whether PostgreSQL vacuums on its own: autovacuum and
// the track_counts it needs are both on. Furrow needs it: without vacuums
// the row versions that updates leave behind (an event marked dispatched,
// a device's last-seen time) stay in the tables and their indexes, and new
// day partitions are never analyzed. The caller bounds it with ctx.
func (db *DB) Autovacuum(ctx context.Context) (bool, error) {
	var on bool
	err := db.pool.QueryRow(ctx, `SELECT current_setting('autovacuum')::bool AND current_setting('track_counts')::bool`).Scan(&on)
	if err != nil {
		return false, translate(err, "autovacuum setting", "setting")
	}
	return on, nil
}
