package store

import (
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"io/fs"
	"log/slog"
	"sort"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/furrowhq/furrow/internal/tcpdial"
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
// (the partitions' indexes of migrations 0017 and 0018, built
// concurrently, and the seen_minute_ms of migration 0009, in batches). A
// table's conversion to a partitioned one (see conversion) is finished in
// the run that begins it, or undone. An advisory lock lets several
// processes call it at once. It uses one connection and closes it before
// returning. It returns the first error met. A migration, and the
// creation of a table's partitions, waits at most 5 s at a time for a
// table lock, so that a long transaction on a table does not make every
// query of it queue behind the change; it is tried again a second later,
// 12 times in all, and then Migrate fails naming it. Its connection has the
// default bounds of MigrateOptions.
func Migrate(ctx context.Context, databaseURL string) error {
	return MigrateWith(ctx, databaseURL, MigrateOptions{})
}

// MigrateOptions bounds Migrate's connection as Options bounds a DB's.
// Zero values select the defaults.
type MigrateOptions struct {
	// ConnectTimeout bounds opening the connection, TCP and startup
	// together; default DefaultConnectTimeout.
	ConnectTimeout time.Duration
	// DeadConnTimeout is how long a silent server may leave the
	// connection unanswered before it is dropped; default
	// DefaultDeadConnTimeout.
	DeadConnTimeout time.Duration
	// Logger is told while another migrate holds the migrations' lock,
	// and of a conversion undone and of the seen_minute_ms fill;
	// default slog.Default().
	Logger *slog.Logger
}

// Waits for another session's migrations lock: how often it is tried, and
// how often the wait is logged after its first line.
const (
	migrateLockPoll    = 250 * time.Millisecond
	migrateLockLogEach = 10 * time.Second
)

// MigrateWith is Migrate with the connection bounded by opts.
func MigrateWith(ctx context.Context, databaseURL string, opts MigrateOptions) error {
	return migrateWith(ctx, databaseURL, "", defaultLockPatience, opts)
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

// migrateWith applies the migrations up to and including version upTo, or
// all of them when upTo is empty, on a connection bounded by opts.
func migrateWith(ctx context.Context, databaseURL, upTo string, patience lockPatience, opts MigrateOptions) error {
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	conn, err := connectMigrate(ctx, databaseURL, opts)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	// A session lock: closing the connection releases it even on error.
	if err := lockMigrations(ctx, conn, log); err != nil {
		return err
	}
	const create = `CREATE TABLE IF NOT EXISTS schema_migrations (
		version text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())`
	if _, err := conn.Exec(ctx, create); err != nil {
		return fmt.Errorf("store: migrate: %w", err)
	}
	if err := abandonConversions(ctx, conn, patience, log); err != nil {
		return err
	}
	if err := applyMigrations(ctx, conn, upTo, patience); err != nil {
		return abandonAfter(ctx, conn, databaseURL, opts, patience, log, err)
	}
	if upTo == "" {
		if err := finishMigrations(ctx, conn, patience, log); err != nil {
			return err
		}
	}
	_, err = conn.Exec(ctx, "SELECT pg_advisory_unlock($1)", migrateLockKey)
	return err
}

// applyMigrations applies the migrations up to and including upTo, or all
// of them when upTo is empty.
func applyMigrations(ctx context.Context, conn *pgx.Conn, upTo string, patience lockPatience) error {
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
	return nil
}

// finishMigrations does what follows the migrations: the day partitions of
// the coming days, the partitions' indexes and the backfill of
// seen_minute_ms.
func finishMigrations(ctx context.Context, conn *pgx.Conn, patience lockPatience, log *slog.Logger) error {
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
	return fillSeenMinute(ctx, conn, patience, log)
}

// connectMigrate opens Migrate's connection with the bounds of a DB's
// (see Open), so that an unreachable or silent server fails it in time.
func connectMigrate(ctx context.Context, databaseURL string, opts MigrateOptions) (*pgx.Conn, error) {
	cfg, err := pgx.ParseConfig(databaseURL)
	if err != nil {
		// The parse error may quote the URL and with it a password.
		return nil, fmt.Errorf("store: migrate: invalid database URL")
	}
	bounds := Options{ConnectTimeout: opts.ConnectTimeout, DeadConnTimeout: opts.DeadConnTimeout}.withDefaults()
	cfg.ConnectTimeout = bounds.ConnectTimeout
	cfg.DialFunc = tcpdial.Dialer(bounds.ConnectTimeout, bounds.DeadConnTimeout).DialContext
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("store: migrate: connect: %w", err)
	}
	return conn, nil
}

// lockMigrations takes the session lock that serializes migrations. While
// another session holds it (another migrate, perhaps itself stuck behind a
// table lock) it logs so at once and every migrateLockLogEach, rather than
// waiting silently, and it gives up when ctx ends.
func lockMigrations(ctx context.Context, conn *pgx.Conn, log *slog.Logger) error {
	began := time.Now()
	var logged time.Time
	for {
		var locked bool
		if err := conn.QueryRow(ctx, "SELECT pg_try_advisory_lock($1)", migrateLockKey).Scan(&locked); err != nil {
			return fmt.Errorf("store: migrate: lock: %w", err)
		}
		if locked {
			return nil
		}
		if logged.IsZero() || time.Since(logged) >= migrateLockLogEach {
			logged = time.Now()
			// The holder's pid finds it in pg_stat_activity; best effort.
			var holder int32
			_ = conn.QueryRow(ctx, `SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND granted
				AND classid::bigint = 0 AND objid::bigint = $1 AND objsubid = 1 LIMIT 1`, migrateLockKey).Scan(&holder)
			log.Info("waiting for another migrate", "waited", logged.Sub(began).Round(time.Second).String(), "holder_pid", holder)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("store: migrate: waiting for another migrate: %w", ctx.Err())
		case <-time.After(migrateLockPoll):
		}
	}
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
