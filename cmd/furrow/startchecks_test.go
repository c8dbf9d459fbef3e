package main

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

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

// checkWarning checks that log holds the warning marker exactly when warn
// is set, and that a warning names each of words.
func checkWarning(t *testing.T, name, log string, warn bool, marker string, words ...string) {
	t.Helper()
	if warned := strings.Contains(log, marker); warned != warn {
		t.Errorf("%s: warned=%v, want %v; log: %q", name, warned, warn, log)
	}
	for _, w := range words {
		if warn && !strings.Contains(log, w) {
			t.Errorf("%s: the warning does not name %q: %q", name, w, log)
		}
	}
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
		checkWarning(t, c.param, startLog(t, u+sep+c.param, warnPoolBudget), c.warn,
			"level=WARN", "max_connections=", "pool=5000")
	}
}

func TestStartWarnsWhenTheDatabaseLacksMigrations(t *testing.T) {
	empty := testenv.NewDatabase(t, testenv.NoSchema)
	migrated := testenv.NewDatabase(t, schema)
	for _, c := range []struct {
		name, url string
		warn      bool
	}{{"never migrated", empty, true}, {"migrated", migrated, false}} {
		checkWarning(t, c.name, startLog(t, c.url, warnAtStart), c.warn,
			"level=WARN msg=\"the database lacks migrations", "run furrow migrate", "first=0001_")
	}
}

func TestStartWarnsWhenAutovacuumIsOff(t *testing.T) {
	u := testenv.NewDatabase(t, schema)
	// Autovacuum is a server-wide setting: the test checks the warning
	// against the server's own answer, whichever it is.
	conn, err := pgx.Connect(context.Background(), u)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var setting, counts string
	if err := conn.QueryRow(context.Background(), "SELECT current_setting('autovacuum'), current_setting('track_counts')").Scan(&setting, &counts); err != nil {
		t.Fatal(err)
	}
	off := setting != "on" || counts != "on"
	checkWarning(t, "autovacuum="+setting+" track_counts="+counts, startLog(t, u, warnAutovacuum), off,
		"level=WARN msg=\"PostgreSQL's autovacuum is off", "autovacuum = on", "track_counts = on")
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
