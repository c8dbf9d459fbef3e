package store

import (
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"io/fs"
	"sort"
	"time"

	"github.com/jackc/pgx/v5"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// migrateLockKey is the advisory lock that serializes concurrent Migrate
// calls on one database.
const migrateLockKey = 0x66757272 // "furr"

type migration struct {
	version string
	sql     string
}

func migrations() []migration {
	names, err := fs.Glob(migrationFiles, "migrations/*.sql")
	if err != nil {
		panic(err) // The pattern is constant and valid.
	}
	sort.Strings(names)
	out := make([]migration, 0, len(names))
	for _, n := range names {
		b, err := migrationFiles.ReadFile(n)
		if err != nil {
			panic(err) // Embedded files are always readable.
		}
		out = append(out, migration{version: n[len("migrations/"):], sql: string(b)})
	}
	return out
}

// MigrationsDigest returns a short hex digest of the embedded migrations,
// naming the schema they build.
func MigrationsDigest() string {
	h := sha256.New()
	for _, m := range migrations() {
		fmt.Fprintf(h, "%s\x00%s\x00", m.version, m.sql)
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// Migrate applies the embedded migrations not yet recorded in
// schema_migrations, in file-name order, each in its own transaction, then
// creates the day partitions of the coming days, so that a new database
// takes rows at once, and finishes what a migration's transaction cannot
// (the partitions' indexes of migrations 0017 and 0018, built concurrently). An advisory lock lets
// several processes call it at once. It uses one connection and closes it
// before returning. It returns the first error met. A migration, and the
// creation of a table's partitions, waits at most 5 s at a time for a
// table lock, so that a long transaction on a table does not make every
// query of it queue behind the change; it is tried again a second later,
// 12 times in all, and then Migrate fails naming it.
func Migrate(ctx context.Context, databaseURL string) error {
	return migrate(ctx, databaseURL, "", defaultLockPatience)
}

// lockPatience bounds a migration's waits for table locks. A migration
// waiting for a lock makes every later query of that table wait behind it,
// ingest included; so each try of a migration gives up after timeout (a
// partition's creation after lockTimeout), and the step is tried again
// after pause, tries times in all, before Migrate fails.
type lockPatience struct {
	timeout, pause time.Duration
	tries          int
}

// defaultLockPatience gives a migration about a minute in all, in waits of
// at most lockTimeout.
var defaultLockPatience = lockPatience{timeout: lockTimeout, pause: time.Second, tries: 12}

// migrate applies the migrations up to and including version upTo, or all
// of them when upTo is empty.
func migrate(ctx context.Context, databaseURL, upTo string, patience lockPatience) error {
	conn, err := pgx.Connect(ctx, databaseURL)
	if err != nil {
		return fmt.Errorf("store: migrate: connect: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	// A session lock: closing the connection releases it even on error.
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock($1)", migrateLockKey); err != nil {
		return fmt.Errorf("store: migrate: lock: %w", err)
	}
	const create = `CREATE TABLE IF NOT EXISTS schema_migrations (
		version text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())`
	if _, err := conn.Exec(ctx, create); err != nil {
		return fmt.Errorf("store: migrate: %w", err)
	}
	for _, m := range migrations() {
		if upTo != "" && m.version > upTo {
			break
		}
		err := patiently(ctx, patience, "migration "+m.version, func() error {
			return applyMigration(ctx, conn, m, patience.timeout)
		})
		if err != nil {
			return err
		}
	}
	if upTo == "" {
		attempts, readings, events := newDayPartitions()
		for _, p := range []*dayPartitions{attempts, readings, events} {
			err := patiently(ctx, patience, p.parent+" partitions", func() error {
				return p.ensureAhead(ctx, conn, time.Now(), patience.timeout)
			})
			if err != nil {
				return fmt.Errorf("store: migrate: %w", err)
			}
		}
		if err := finishPartitionIndexes(ctx, conn, patience); err != nil {
			return err
		}
	}
	_, err = conn.Exec(ctx, "SELECT pg_advisory_unlock($1)", migrateLockKey)
	return err
}

// patiently runs step (named what), trying again while a table lock it
// needs is held by others for longer than its lock timeout.
func patiently(ctx context.Context, p lockPatience, what string, step func() error) error {
	for try := 1; ; try++ {
		err := step()
		if sqlState(err) != pgLockNotAvailable {
			return err
		}
		if try == p.tries {
			return fmt.Errorf("store: %s: a table it changes stayed locked by another transaction (see pg_stat_activity) through %d tries: %w",
				what, p.tries, err)
		}
		select {
		case <-time.After(p.pause):
		case <-ctx.Done():
			return fmt.Errorf("store: %s: %w", what, ctx.Err())
		}
	}
}

func applyMigration(ctx context.Context, conn *pgx.Conn, m migration, timeout time.Duration) error {
	return pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		if err := setLockTimeout(ctx, tx, timeout); err != nil {
			return err
		}
		var done bool
		err := tx.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM schema_migrations WHERE version = $1)", m.version).Scan(&done)
		if err != nil || done {
			return err
		}
		// Without arguments Exec uses the simple protocol, which runs a
		// file of several statements.
		if _, err := tx.Exec(ctx, m.sql); err != nil {
			return fmt.Errorf("store: migration %s: %w", m.version, err)
		}
		_, err = tx.Exec(ctx, "INSERT INTO schema_migrations (version) VALUES ($1)", m.version)
		return err
	})
}

// MissingMigrations returns the versions of this build's migrations that
// the database has not recorded, oldest first: all of them when it was
// never migrated. Versions the database has beyond this build's (an older
// build running beside a newer one during a rollout) are not its concern.
func (db *DB) MissingMigrations(ctx context.Context) ([]string, error) {
	var have []string
	err := db.pool.QueryRow(ctx, "SELECT coalesce(array_agg(version), '{}') FROM schema_migrations").Scan(&have)
	if sqlState(err) == pgUndefinedTable {
		have, err = nil, nil
	}
	if err != nil {
		return nil, translate(err, "read migrations", "migration")
	}
	recorded := make(map[string]bool, len(have))
	for _, v := range have {
		recorded[v] = true
	}
	var missing []string
	for _, m := range migrations() {
		if !recorded[m.version] {
			missing = append(missing, m.version)
		}
	}
	return missing, nil
}
