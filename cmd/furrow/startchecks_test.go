package main

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/furrowhq/furrow/internal/testenv"
	"github.com/furrowhq/furrow/store"
)

// schema builds this build's schema.
var schema = testenv.Migrator{Digest: store.MigrationsDigest(), Migrate: store.Migrate}

// startLog opens a store on the database at url, runs check on it and
// returns what check logged.
func startLog(t *testing.T, url string, check func(context.Context, *store.DB, *slog.Logger)) string {
	t.Helper()
	db, err := store.Open(context.Background(), url, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	out := &testenv.Buffer{}
	check(context.Background(), db, slog.New(slog.NewTextHandler(out, nil)))
	return out.String()
}

func TestStartWarnsWhenThePoolCannotBeFilled(t *testing.T) {
	u := testenv.NewDatabase(t, schema)
	for _, c := range []struct {
		param string
		warn  bool
	}{{"pool_max_conns=5000", true}, {"pool_max_conns=8", false}} {
		sep := "?"
		if strings.Contains(u, "?") {
			sep = "&"
		}
		got := startLog(t, u+sep+c.param, warnPoolBudget)
		if warned := strings.Contains(got, "level=WARN"); warned != c.warn {
			t.Errorf("%s: warned=%v, want %v; log: %q", c.param, warned, c.warn, got)
		}
		if c.warn && (!strings.Contains(got, "max_connections=") || !strings.Contains(got, "pool=5000")) {
			t.Errorf("%s: the warning does not name the setting and the pool: %q", c.param, got)
		}
	}
}

func TestStartWarnsWhenTheDatabaseLacksMigrations(t *testing.T) {
	empty := testenv.NewDatabase(t, testenv.NoSchema)
	migrated := testenv.NewDatabase(t, schema)
	for _, c := range []struct {
		name, url string
		warn      bool
	}{{"never migrated", empty, true}, {"migrated", migrated, false}} {
		got := startLog(t, c.url, warnAtStart)
		if warned := strings.Contains(got, "level=WARN msg=\"the database lacks migrations"); warned != c.warn {
			t.Errorf("%s: warned=%v, want %v; log: %q", c.name, warned, c.warn, got)
		}
		if c.warn && (!strings.Contains(got, "run furrow migrate") || !strings.Contains(got, "first=0001_")) {
			t.Errorf("%s: the warning does not say what to run and what is missing: %q", c.name, got)
		}
	}
}

// With --json, stdout holds the report and nothing else, even with --url,
// whose reminder of the server's settings goes to the log; a run that
// fails early prints nothing there.
func TestBenchDeliveryJSONKeepsStdoutToTheReport(t *testing.T) {
	empty := testenv.NewDatabase(t, testenv.NoSchema)
	env := map[string]string{"FURROW_DATABASE_URL": empty}
	var out, errs bytes.Buffer
	err := run(context.Background(), []string{"bench", "delivery", "--url", "http://127.0.0.1:1", "--cert-dir", t.TempDir(),
		"--no-engine", "--json"}, func(k string) string { return env[k] }, &out, &errs)
	if err == nil || !strings.Contains(err.Error(), "run furrow migrate") {
		t.Errorf("bench against a database never migrated: %v; want an error that says to run furrow migrate", err)
	}
	if out.Len() != 0 {
		t.Errorf("stdout %q; want nothing but the JSON report", out.String())
	}
	if !strings.Contains(errs.String(), "FURROW_WEBHOOK_CA_FILE") {
		t.Errorf("stderr %q; want the reminder of the server's settings", errs.String())
	}
}
