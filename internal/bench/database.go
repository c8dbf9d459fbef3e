package bench

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/furrowhq/furrow/store"
)

// DBTimeout bounds each of the tool's own statements and transactions,
// each step of making or dropping a scratch database (its migration
// included) and the creation of a run's user, the connection included: a
// PostgreSQL that stops answering fails the run instead of holding it.
const DBTimeout = 30 * time.Second

// ScratchDatabase creates a new, migrated database on the PostgreSQL server
// of baseURL and returns its URL and a function that drops it. The role of
// baseURL needs the CREATEDB privilege. Errors never quote the URL, which
// may hold a password.
func ScratchDatabase(ctx context.Context, baseURL string) (string, func(), error) {
	u, err := url.Parse(baseURL)
	if err != nil {
		return "", nil, fmt.Errorf("database URL is not a URL")
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	name := "furrow_bench_" + hex.EncodeToString(b[:])
	if err := adminExec(ctx, baseURL, "CREATE DATABASE "+name); err != nil {
		return "", nil, fmt.Errorf("create scratch database (needs CREATEDB): %w", err)
	}
	drop := func() {
		_ = adminExec(context.Background(), baseURL, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
	}
	u.Path = "/" + name
	if err := migrateWithin(ctx, u.String()); err != nil {
		drop()
		return "", nil, fmt.Errorf("migrate scratch database: %w", err)
	}
	return u.String(), drop, nil
}

// migrateWithin migrates the database at databaseURL within DBTimeout.
func migrateWithin(ctx context.Context, databaseURL string) error {
	ctx, cancel := context.WithTimeout(ctx, DBTimeout)
	defer cancel()
	return store.Migrate(ctx, databaseURL)
}

// adminExec runs sql on a connection of its own to databaseURL, within
// DBTimeout.
func adminExec(ctx context.Context, databaseURL, sql string) error {
	ctx, cancel := context.WithTimeout(ctx, DBTimeout)
	defer cancel()
	conn, err := pgx.Connect(ctx, databaseURL)
	if err != nil {
		return fmt.Errorf("connect to PostgreSQL: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	_, err = conn.Exec(ctx, sql)
	return err
}
