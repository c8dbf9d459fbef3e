package store

import "context"

// Autovacuum reports whether PostgreSQL vacuums on its own: autovacuum and
// the track_counts it needs are both on. Furrow needs it: marking an event
// dispatched leaves its entry in the outbox's partial index until a vacuum
// removes it, and every claim of the dispatchers reads past those entries,
// so without vacuums each claim grows slower with every event dispatched
// that day. The caller bounds it with ctx.
func (db *DB) Autovacuum(ctx context.Context) (bool, error) {
	var on bool
	err := db.pool.QueryRow(ctx, `SELECT current_setting('autovacuum')::bool AND current_setting('track_counts')::bool`).Scan(&on)
	if err != nil {
		return false, translate(err, "autovacuum setting", "setting")
	}
	return on, nil
}
