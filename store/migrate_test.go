package store_test

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/furrowhq/furrow"
	"github.com/furrowhq/furrow/internal/testenv"
	"github.com/furrowhq/furrow/store"
)

func TestMigrateConcurrentAndIdempotent(t *testing.T) {
	ctx := context.Background()
	// An empty database: its template is built by a migrator that does nothing.
	url := testenv.NewDatabase(t, testenv.NoSchema)
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Go(func() { errs[i] = store.Migrate(ctx, url) })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatalf("concurrent Migrate: %v", err)
		}
	}
	if err := store.Migrate(ctx, url); err != nil {
		t.Fatalf("second Migrate: %v", err)
	}
	conn := connect(t, url)
	var applied, tables int
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM schema_migrations").Scan(&applied); err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob("migrations/*.sql")
	if applied != len(files) || applied == 0 {
		t.Errorf("schema_migrations has %d rows, want 1 per migration file (%d)", applied, len(files))
	}
	err := conn.QueryRow(ctx, `SELECT count(*) FROM pg_tables WHERE schemaname = 'public' AND tablename IN
		('users','farms','farm_members','devices','readings','events','webhooks','delivery_attempts')`).Scan(&tables)
	if err != nil {
		t.Fatal(err)
	}
	if tables != 8 {
		t.Errorf("found %d of 8 tables", tables)
	}
}

func TestMigrationsDigestIsStableHex(t *testing.T) {
	d := store.MigrationsDigest()
	if len(d) != 16 || d != store.MigrationsDigest() {
		t.Fatalf("digest %q: want 16 stable hex characters", d)
	}
	for _, c := range d {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			t.Fatalf("digest %q is not hex", d)
		}
	}
}

func TestMigrateFailsOnUnreachableDatabase(t *testing.T) {
	err := store.Migrate(context.Background(), "postgres://postgres@127.0.0.1:1/none?sslmode=disable&connect_timeout=2")
	if err == nil {
		t.Fatal("Migrate against a closed port succeeded")
	}
}

// A migration never waits long behind another transaction's lock, since
// every query of the table would queue behind it: it gives up, tries again,
// and fails once its tries are spent, having changed nothing.
func TestMigrateWaitsForATableLockOnlySoLong(t *testing.T) {
	ctx := context.Background()
	url, conn := dbUpTo(t, "0015_webhook_owner_tools.sql")
	tx := readingsReader(t, url)

	began := time.Now()
	err := store.MigrateWithLockPatience(ctx, url, 100*time.Millisecond, 10*time.Millisecond, 3)
	if err == nil || !strings.Contains(err.Error(), "0016") || !strings.Contains(err.Error(), "locked") {
		t.Fatalf("Migrate behind a held lock: %v; want an error naming migration 0016 and the lock", err)
	}
	if took := time.Since(began); took > 5*time.Second {
		t.Fatalf("gave up after %s, want about 3 waits of 100 ms", took)
	}
	var applied int
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM schema_migrations WHERE version LIKE '0016%'").Scan(&applied); err != nil || applied != 0 {
		t.Fatalf("0016 recorded %d times (%v) after giving up, want 0", applied, err)
	}

	// Once the lock is released between two tries, the migration goes through.
	done := make(chan error, 1)
	go func() {
		done <- store.MigrateWithLockPatience(ctx, url, 100*time.Millisecond, 50*time.Millisecond, 100)
	}()
	time.Sleep(300 * time.Millisecond)
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Migrate once the lock was released: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Migrate still waiting 10 s after the lock was released")
	}
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM schema_migrations WHERE version LIKE '0016%'").Scan(&applied); err != nil || applied != 1 {
		t.Fatalf("0016 recorded %d times (%v), want 1", applied, err)
	}
}

// The start check reads which of this build's migrations a database lacks:
// all on a database never migrated, where a query also says to migrate;
// the later ones on a database migrated by an older build; none after
// furrow migrate.
func TestMissingMigrations(t *testing.T) {
	ctx := context.Background()
	files, _ := filepath.Glob("migrations/*.sql")
	if len(files) < 2 {
		t.Fatalf("found %d migration files", len(files))
	}
	first, third, last := filepath.Base(files[0]), filepath.Base(files[2]), filepath.Base(files[len(files)-1])
	url := testenv.NewDatabase(t, testenv.NoSchema)
	db, err := store.Open(ctx, url, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	missing, err := db.MissingMigrations(ctx)
	if err != nil || len(missing) != len(files) || missing[0] != first || missing[len(missing)-1] != last {
		t.Fatalf("never migrated: missing %v, %v; want all %d, %s first", missing, err, len(files), first)
	}
	_, _, err = db.CreateUser(ctx, "a@example.com")
	if err == nil || !strings.Contains(err.Error(), "run furrow migrate") || furrow.ErrorCode(err) != furrow.EINTERNAL {
		t.Errorf("a query of a missing table: %v; want an internal error that says to run furrow migrate", err)
	}
	second := filepath.Base(files[1])
	if err := store.MigrateUpTo(ctx, url, second); err != nil {
		t.Fatal(err)
	}
	missing, err = db.MissingMigrations(ctx)
	if err != nil || len(missing) != len(files)-2 || missing[0] != third {
		t.Fatalf("migrated up to %s: missing %v, %v; want the %d after it", second, missing, err, len(files)-2)
	}
	if err := store.Migrate(ctx, url); err != nil {
		t.Fatal(err)
	}
	missing, err = db.MissingMigrations(ctx)
	if err != nil || len(missing) != 0 {
		t.Errorf("migrated: missing %v, %v; want none", missing, err)
	}
}

// migrateLockKey is the advisory lock Migrate takes ("furr").
const migrateLockKey = 0x66757272

// While another session holds the migrations' lock, Migrate says that it
// is waiting rather than hanging silently, gives up when its context ends,
// and goes on once the lock is released.
func TestMigrateWaitsForAnotherMigrateVisibly(t *testing.T) {
	ctx := context.Background()
	url := testenv.NewDatabase(t, testenv.NoSchema)
	holder := connect(t, url)
	if _, err := holder.Exec(ctx, "SELECT pg_advisory_lock($1)", migrateLockKey); err != nil {
		t.Fatal(err)
	}
	var log testenv.Buffer
	opts := store.MigrateOptions{Logger: slog.New(slog.NewTextHandler(&log, nil))}

	short, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	began := time.Now()
	err := store.MigrateWith(short, url, opts)
	if !errors.Is(err, context.DeadlineExceeded) || time.Since(began) > 5*time.Second {
		t.Fatalf("Migrate behind another's lock, for a second: %v after %s; want the context's deadline", err, time.Since(began))
	}
	if !strings.Contains(log.String(), "waiting for another migrate") {
		t.Fatalf("the wait was not logged:\n%s", log.String())
	}

	done := make(chan error, 1)
	go func() { done <- store.MigrateWith(ctx, url, opts) }()
	time.Sleep(300 * time.Millisecond)
	if _, err := holder.Exec(ctx, "SELECT pg_advisory_unlock($1)", migrateLockKey); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Migrate once the lock was released: %v", err)
		}
	case <-time.After(2 * time.Minute):
		t.Fatal("Migrate still waiting 2 minutes after the lock was released")
	}
}

// A database URL that does not parse is refused without quoting it: the
// parse error may hold part of the password, here one with an unescaped @
// or an unterminated quote.
func TestMigrateDoesNotQuoteAMalformedURL(t *testing.T) {
	cases := []struct{ url, password string }{
		{"postgres://furrow:s3cret@x:hunter2@127.0.0.1:notaport/furrow", "s3cret@x:hunter2"},
		{"host=127.0.0.1 password='s3cret hunter2 port=5432", "s3cret hunter2"},
		{"postgres://furrow:hunter2%zz@127.0.0.1:5432/furrow", "hunter2%zz"},
	}
	for _, c := range cases {
		err := store.MigrateWith(context.Background(), c.url, store.MigrateOptions{})
		if err == nil || strings.Contains(err.Error(), "hunter2") || strings.Contains(err.Error(), "s3cret") {
			t.Errorf("Migrate with password %q: %v; want an error that quotes none of it", c.password, err)
		}
	}
}

// Migrate's connection is bounded like a DB's: a server that accepts the
// connection and never answers fails it within ConnectTimeout.
func TestMigrateConnectTimeout(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 4)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted <- c
		}
	}()
	defer func() {
		for len(accepted) > 0 {
			(<-accepted).Close()
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	began := time.Now()
	err = store.MigrateWith(ctx, "postgres://furrow@"+ln.Addr().String()+"/furrow?sslmode=disable",
		store.MigrateOptions{ConnectTimeout: 200 * time.Millisecond})
	if took := time.Since(began); err == nil || took > 3*time.Second {
		t.Fatalf("Migrate against a silent server: %v after %s; want a failure after about 200 ms", err, took)
	}
}
