package store_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/furrowhq/furrow/internal/testenv"
	"github.com/furrowhq/furrow/store"
)

func budget(t *testing.T, databaseURL string) store.PoolBudget {
	t.Helper()
	db, err := store.Open(context.Background(), databaseURL, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	b, err := db.PoolBudget(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func withParam(u, kv string) string {
	if strings.Contains(u, "?") {
		return u + "&" + kv
	}
	return u + "?" + kv
}

func TestPoolBudgetFollowsTheServersSettings(t *testing.T) {
	u := testenv.NewDatabase(t, migrator)
	b := budget(t, u)
	if b.Pool != 16 {
		t.Errorf("default pool = %d, want 16", b.Pool)
	}
	if b.MaxConnections < 10 || b.InUse < 1 || b.Open < 1 || b.Open > b.Pool {
		t.Errorf("implausible budget: %+v", b)
	}
	if b.Missing() != 0 && b.MaxConnections-b.Reserved-b.InUse > b.Pool {
		t.Errorf("pool reported missing connections although it fits: %+v", b)
	}

	// A pool sized past max_connections in the URL is taken as asked, and
	// the budget says how many connections it cannot have.
	big := budget(t, withParam(u, "pool_max_conns=5000"))
	if big.Pool != 5000 {
		t.Fatalf("pool_max_conns=5000 gave a pool of %d", big.Pool)
	}
	want := 5000 - big.Open - (big.MaxConnections - big.Reserved - big.InUse)
	if big.Missing() != want || want <= 0 {
		t.Errorf("Missing() = %d, want %d (%+v)", big.Missing(), want, big)
	}
	if s := big.String(); !strings.Contains(s, "max_connections") || !strings.Contains(s, "5000") {
		t.Errorf("String() does not name the setting and the pool: %q", s)
	}

	// The reading writers keep their room even when the URL asks for less.
	if small := budget(t, withParam(u, "pool_max_conns=2")); small.Pool != 5 {
		t.Errorf("pool_max_conns=2 gave %d, want the floor of writers+4 = 5", small.Pool)
	}
}
