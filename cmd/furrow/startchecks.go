package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/furrowhq/furrow/store"
)

// startCheckTimeout bounds the checks at start together.
const startCheckTimeout = 3 * time.Second

// warnAtStart runs the checks at start whose failures do not stop the
// process but would otherwise show only as failing or slow requests. A
// check that cannot run in time is skipped: an unreachable database is
// the readiness probe's to report.
func warnAtStart(ctx context.Context, db *store.DB, log *slog.Logger) {
	ctx, cancel := context.WithTimeout(ctx, startCheckTimeout)
	defer cancel()
	warnSchema(ctx, db, log)
	warnPoolBudget(ctx, db, log)
	warnAutovacuum(ctx, db, log)
	warnUnsealedRows(ctx, db, log)
}

// warnUnsealedRows says at start, loudly, when a key ring is set but
// stored webhook secrets are still unsealed (written before the ring, or
// by a build from before sealing): only `furrow admin seal-secrets` seals
// them, and nothing else would say they wait for it.
func warnUnsealedRows(ctx context.Context, db *store.DB, log *slog.Logger) {
	if !db.Sealing() {
		return // warnUnsealed has said so already
	}
	_, unsealed, err := db.WebhookSecretStates(ctx)
	if err != nil {
		log.Debug("unsealed webhook secrets not counted", "err", err)
		return
	}
	if unsealed > 0 {
		log.Warn("webhook signing secrets stored before the key ring are still unsealed: run furrow admin seal-secrets with the same ring (under furrow dev: FURROW_SECRET_KEYS_FILE=<FURROW_DEV_DATA_DIR>/secret-keys)",
			"unsealed", unsealed)
	}
}

// checkKeyRing refuses the start when a key of the ring
// (FURROW_SECRET_KEYS) does not open the stored secrets sealed under its
// id: the process would seal new ones under that id with another key, and
// no ring could then open both (it cannot hold one id twice). It warns of
// the ids of stored secrets' keys the ring lacks. A database that does not
// answer within startCheckTimeout skips it, as it does the other checks
// at start, but at WARN: what it guards cannot be undone.
func checkKeyRing(ctx context.Context, db *store.DB, log *slog.Logger) error {
	ctx, cancel := context.WithTimeout(ctx, startCheckTimeout)
	defer cancel()
	missing, err := db.CheckKeyRing(ctx)
	switch {
	case errors.Is(err, store.ErrKeyMismatch):
		return fmt.Errorf("FURROW_SECRET_KEYS (or FURROW_SECRET_KEYS_FILE): %w; not starting", err)
	case err != nil:
		log.Warn("the key ring was not checked against the stored webhook secrets", "err", err)
		return nil
	}
	if len(missing) > 0 {
		log.Warn("stored webhook secrets are sealed with keys FURROW_SECRET_KEYS does not hold: those webhooks' settings cannot be read and their deliveries fail until the keys are back in the ring",
			"key_ids", missing)
	}
	return nil
}

// warnSchema says at start, loudly, when the database lacks migrations of
// this build (it was never migrated, or this build is newer than its last
// furrow migrate): requests that need them would fail one by one.
func warnSchema(ctx context.Context, db *store.DB, log *slog.Logger) {
	missing, err := db.MissingMigrations(ctx)
	if err != nil {
		log.Debug("migrations not checked", "err", err)
		return
	}
	if len(missing) > 0 {
		log.Warn("the database lacks migrations of this build: run furrow migrate",
			"missing", len(missing), "first", missing[0], "last", missing[len(missing)-1])
	}
}

// warnPoolBudget says at start, loudly, when PostgreSQL cannot give the
// pool all its connections: under load the process would then wait for
// connections and slow down without another sign.
func warnPoolBudget(ctx context.Context, db *store.DB, log *slog.Logger) {
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

// warnAutovacuum says at start, loudly, when PostgreSQL does not vacuum on
// its own: the tables would then keep every dead row version until a day's
// partition is dropped, and new partitions would never be analyzed, with
// no other sign than the disk they take and slower queries.
func warnAutovacuum(ctx context.Context, db autovacuumSetting, log *slog.Logger) {
	on, err := db.Autovacuum(ctx)
	if err != nil {
		log.Debug("autovacuum not checked", "err", err)
		return
	}
	if !on {
		log.Warn("PostgreSQL's autovacuum is off: dead row versions stay in the tables and their indexes, and new partitions are never analyzed; set autovacuum = on and track_counts = on")
	}
}

// autovacuumSetting answers whether PostgreSQL vacuums on its own, as
// *store.DB does. A test gives either answer through it: the setting is
// server-wide, so a server whose autovacuum is off can never say "on".
type autovacuumSetting interface {
	Autovacuum(ctx context.Context) (bool, error)
}
