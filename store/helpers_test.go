package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/furrowhq/furrow"
	"github.com/furrowhq/furrow/internal/testclock"
	"github.com/furrowhq/furrow/internal/testenv"
	"github.com/furrowhq/furrow/store"
)

var migrator = testenv.Migrator{Digest: store.MigrationsDigest(), Migrate: store.Migrate}

func newClock() *testclock.Clock {
	return testclock.New(time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC))
}

// newDB opens a store on a fresh migrated database.
func newDB(t testing.TB, clock furrow.Clock, opts ...func(*store.Options)) (*store.DB, string) {
	t.Helper()
	url := testenv.NewDatabase(t, migrator)
	o := store.Options{Clock: clock}
	for _, f := range opts {
		f(&o)
	}
	db, err := store.Open(context.Background(), url, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	return db, url
}

// fixture is a user owning a farm with one device.
type fixture struct {
	user   furrow.User
	farm   furrow.Farm
	device furrow.Device
	key    string
}

func newFixture(t testing.TB, db *store.DB) fixture {
	t.Helper()
	ctx := context.Background()
	u := newUser(t, db)
	f, err := db.CreateFarm(ctx, u.ID, "North field")
	if err != nil {
		t.Fatal(err)
	}
	d, key, err := db.CreateDevice(ctx, f.ID, "probe-1")
	if err != nil {
		t.Fatal(err)
	}
	return fixture{user: u, farm: f, device: d, key: key}
}

func wantCode(t testing.TB, err error, code string) {
	t.Helper()
	if got := furrow.ErrorCode(err); got != code {
		t.Fatalf("error code = %q (%v), want %q", got, err, code)
	}
	var fe *furrow.Error
	if code != furrow.EINTERNAL && !errors.As(err, &fe) {
		t.Fatalf("error %v is not a *furrow.Error", err)
	}
}

func newUser(t testing.TB, db *store.DB) furrow.User {
	t.Helper()
	u, _, err := db.CreateUser(context.Background(), uuid.NewString()+"@example.com")
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// connect opens a connection to url, closed when the test ends.
func connect(t testing.TB, url string) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

// readingsReader begins a transaction on url that holds the lock a long
// read of readings holds, until the test commits it or ends.
func readingsReader(t testing.TB, url string) pgx.Tx {
	t.Helper()
	ctx := context.Background()
	tx, err := connect(t, url).Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, "LOCK TABLE readings IN ACCESS SHARE MODE"); err != nil {
		t.Fatal(err)
	}
	return tx
}

// dbUpTo returns a fresh database migrated up to and including version,
// and a connection to it closed when t ends: the state an older release
// left, for tests of the migrations after it.
func dbUpTo(t *testing.T, version string) (string, *pgx.Conn) {
	t.Helper()
	ctx := context.Background()
	url := testenv.NewDatabase(t, testenv.NoSchema)
	if err := store.MigrateUpTo(ctx, url, version); err != nil {
		t.Fatal(err)
	}
	return url, connect(t, url)
}
