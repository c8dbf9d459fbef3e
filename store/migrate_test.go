package store_test

import (
	"context"
	"path/filepath"
	"sync"
	"testing"

	"github.com/furrowhq/furrow/internal/testenv"
	"github.com/furrowhq/furrow/store"
)

func TestMigrateConcurrentAndIdempotent(t *testing.T) {
	ctx := context.Background()
	// An empty database: its template is built by a migrator that does nothing.
	url := testenv.NewDatabase(t, testenv.Migrator{Digest: "empty0", Migrate: func(context.Context, string) error { return nil }})
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
