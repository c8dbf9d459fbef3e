package main

import (
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/furrowhq/furrow/internal/testenv"
	"github.com/furrowhq/furrow/store"
)

func TestStartWarnsWhenThePoolCannotBeFilled(t *testing.T) {
	u := testenv.NewDatabase(t, testenv.Migrator{Digest: store.MigrationsDigest(), Migrate: store.Migrate})
	for _, c := range []struct {
		param string
		warn  bool
	}{{"pool_max_conns=5000", true}, {"pool_max_conns=8", false}} {
		sep := "?"
		if strings.Contains(u, "?") {
			sep = "&"
		}
		db, err := store.Open(context.Background(), u+sep+c.param, store.Options{})
		if err != nil {
			t.Fatal(err)
		}
		out := &testenv.Buffer{}
		warnPoolBudget(context.Background(), db, slog.New(slog.NewTextHandler(out, nil)))
		db.Close()
		got := out.String()
		if warned := strings.Contains(got, "level=WARN"); warned != c.warn {
			t.Errorf("%s: warned=%v, want %v; log: %q", c.param, warned, c.warn, got)
		}
		if c.warn && (!strings.Contains(got, "max_connections=") || !strings.Contains(got, "pool=5000")) {
			t.Errorf("%s: the warning does not name the setting and the pool: %q", c.param, got)
		}
	}
}
