package main

import (
	"context"
	"log/slog"
	"time"

	"github.com/furrowhq/furrow/store"
)

// warnPoolBudget says at start, loudly, when PostgreSQL cannot give the
// pool all its connections: under load the process would then wait for
// connections and slow down without another sign. An unreachable database
// is reported by the readiness probe, not here.
func warnPoolBudget(ctx context.Context, db *store.DB, log *slog.Logger) {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	b, err := db.PoolBudget(ctx)
	if err != nil {
		log.Debug("connection budget not checked", "err", err)
		return
	}
	if n := b.Missing(); n > 0 {
		log.Warn("PostgreSQL cannot fill this process's connection pool: raise max_connections, or lower pool_max_conns in FURROW_DATABASE_URL",
			"missing", n, "pool", b.Pool, "max_connections", b.MaxConnections,
			"superuser_reserved_connections", b.Reserved, "in_use", b.InUse)
	}
}
