package store

import (
	"context"
	"fmt"
)

// PoolBudget is what the database can still give this process's pools: a
// pool larger than the connections PostgreSQL has left waits for a
// connection under load instead of failing, and the service slows down
// without saying why.
type PoolBudget struct {
	// Pool is the most connections this process's pools open, the reading
	// writers' included.
	Pool int
	// MaxConnections and Reserved are PostgreSQL's max_connections and
	// superuser_reserved_connections.
	MaxConnections int
	Reserved       int
	// InUse counts the server's connections when checked, this pool's own
	// included.
	InUse int
	// Open is how many of InUse belong to this process's pools.
	Open int
}

// Missing is how many connections of the pool PostgreSQL could not open
// now (0 when the pool fits).
func (b PoolBudget) Missing() int {
	free := b.MaxConnections - b.Reserved - b.InUse
	want := b.Pool - b.Open
	return max(0, want-free)
}

// String says the budget in one line, with the settings to change.
func (b PoolBudget) String() string {
	return fmt.Sprintf("pool of %d connections; PostgreSQL max_connections %d, %d reserved for superusers, %d in use (%d of them this pool's)",
		b.Pool, b.MaxConnections, b.Reserved, b.InUse, b.Open)
}

// PoolBudget reads the database's connection settings against the pool's
// size; the caller bounds it with ctx.
func (db *DB) PoolBudget(ctx context.Context) (PoolBudget, error) {
	b := PoolBudget{Pool: int(db.pool.Config().MaxConns + db.writers.Config().MaxConns)}
	err := db.pool.QueryRow(ctx, `SELECT current_setting('max_connections')::int,
		current_setting('superuser_reserved_connections')::int,
		(SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend')::int`).
		Scan(&b.MaxConnections, &b.Reserved, &b.InUse)
	if err != nil {
		return b, translate(err, "connection budget", "setting")
	}
	b.Open = int(db.pool.Stat().TotalConns() + db.writers.Stat().TotalConns())
	return b, nil
}
