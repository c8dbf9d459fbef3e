package store_test

import (
	"context"
	"net/url"
	"testing"
	"time"

	"github.com/furrowhq/furrow/internal/testenv"
	"github.com/furrowhq/furrow/store"
)

func ping(db *store.DB) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	return db.Ping(ctx)
}

func TestPingFollowsDatabaseAvailability(t *testing.T) {
	u, err := url.Parse(testenv.NewDatabase(t, migrator))
	if err != nil {
		t.Fatal(err)
	}
	p := testenv.NewProxy(t, u.Host)
	u.Host = p.Addr
	db, err := store.Open(context.Background(), u.String(), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := ping(db); err != nil {
		t.Fatalf("ping while up: %v", err)
	}
	p.Cut()
	if err := ping(db); err == nil {
		t.Fatal("ping succeeded while the database was unreachable")
	}
	p.Restore()
	if err := ping(db); err != nil {
		t.Fatalf("ping after the database came back: %v", err)
	}
}
