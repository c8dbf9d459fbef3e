package main

import (
	"bytes"
	"context"
	"log/slog"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/furrowhq/furrow"
	"github.com/furrowhq/furrow/internal/testenv"
	"github.com/furrowhq/furrow/keyring"
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

// withParam returns the database URL u with the query parameter param
// added.
func withParam(u, param string) string {
	if strings.Contains(u, "?") {
		return u + "&" + param
	}
	return u + "?" + param
}

func TestStartWarnsWhenThePoolCannotBeFilled(t *testing.T) {
	u := testenv.NewDatabase(t, schema)
	for _, c := range []struct {
		param string
		warn  bool
	}{{"pool_max_conns=5000", true}, {"pool_max_conns=8", false}} {
		checkWarning(t, c.param, startLog(t, withParam(u, c.param), warnPoolBudget), c.warn,
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

// autovacuumWarning is what warnAutovacuum's warning holds.
var autovacuumWarning = []string{"level=WARN msg=\"PostgreSQL's autovacuum is off", "autovacuum = on", "track_counts = on"}

// fixedAutovacuum answers warnAutovacuum's question with on, or fails with
// err.
type fixedAutovacuum struct {
	on  bool
	err error
}

func (f fixedAutovacuum) Autovacuum(context.Context) (bool, error) { return f.on, f.err }

func TestStartWarnsWhenAutovacuumIsOff(t *testing.T) {
	u := testenv.NewDatabase(t, schema)
	check := func(ctx context.Context, db *store.DB, log *slog.Logger) { warnAutovacuum(ctx, db, log) }
	// autovacuum is server-wide, but track_counts, without which it does
	// nothing, is a superuser's to set for one session: a session with it
	// off asks the server the real question and hears "off" on any server.
	off := withParam(u, "options=-c%20track_counts%3Doff")
	checkWarning(t, "a session with track_counts=off", startLog(t, off, check), true, autovacuumWarning[0], autovacuumWarning[1:]...)
	// The server's own answer, with track_counts on for the session: the
	// warning follows its autovacuum setting.
	on := withParam(u, "options=-c%20track_counts%3Don")
	conn, err := pgx.Connect(context.Background(), on)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var setting string
	if err := conn.QueryRow(context.Background(), "SELECT current_setting('autovacuum')").Scan(&setting); err != nil {
		t.Fatal(err)
	}
	checkWarning(t, "the server's autovacuum="+setting, startLog(t, on, check), setting != "on", autovacuumWarning[0], autovacuumWarning[1:]...)
	// Both answers, whatever the server's setting, and none in time.
	for _, c := range []struct {
		name   string
		answer fixedAutovacuum
		warn   bool
	}{
		{"answered on", fixedAutovacuum{on: true}, false},
		{"answered off", fixedAutovacuum{on: false}, true},
		{"unanswered", fixedAutovacuum{err: context.DeadlineExceeded}, false},
	} {
		out := &testenv.Buffer{}
		warnAutovacuum(context.Background(), c.answer, slog.New(slog.NewTextHandler(out, nil)))
		checkWarning(t, c.name, out.String(), c.warn, autovacuumWarning[0], autovacuumWarning[1:]...)
	}
}

// keyRingCheck opens a store on the database at u with ring, the text of
// FURROW_SECRET_KEYS ("" for none), runs checkKeyRing on it and returns
// what it logged and its error.
func keyRingCheck(t *testing.T, u, ring string) (string, error) {
	t.Helper()
	db := ringStore(t, u, ring)
	defer db.Close()
	out := &testenv.Buffer{}
	err := checkKeyRing(context.Background(), db, slog.New(slog.NewTextHandler(out, nil)))
	return out.String(), err
}

// ringStore opens a store on the database at u with ring, the text of
// FURROW_SECRET_KEYS ("" for none).
func ringStore(t *testing.T, u, ring string) *store.DB {
	t.Helper()
	var keys *keyring.Ring
	if ring != "" {
		var err error
		if keys, err = keyring.Parse(ring); err != nil {
			t.Fatal(err)
		}
	}
	db, err := store.Open(context.Background(), u, store.Options{Keys: keys})
	if err != nil {
		t.Fatal(err)
	}
	return db
}

// sealedWebhook stores a webhook whose secret ring seals ("": stored
// unsealed).
func sealedWebhook(t *testing.T, u, ring string) {
	t.Helper()
	ctx := context.Background()
	db := ringStore(t, u, ring)
	defer db.Close()
	if _, err := db.CreateWebhook(ctx, furrow.Webhook{FarmID: newFarm(t, db).ID, URL: "https://hooks.example.com/", Secret: furrow.NewWebhookSecret(), Enabled: true}); err != nil {
		t.Fatal(err)
	}
}

// serve, worker and dev refuse to start with a ring holding another key
// under an id that sealed stored secrets, and warn of ids it lacks.
func TestStartRefusesAnotherKeyUnderAUsedID(t *testing.T) {
	u := testenv.NewDatabase(t, schema)
	k1 := "k1:" + testKey(1)
	sealedWebhook(t, u, k1)
	for _, c := range []struct {
		name, ring string
		refuse     bool
		warn       bool
	}{
		{"the key that sealed", k1, false, false},
		{"a new key in front", "k2:" + testKey(2) + "," + k1, false, false},
		{"another first key named k1", "k1:" + testKey(9), true, false},
		{"another key named k1 behind", "k2:" + testKey(2) + ",k1:" + testKey(9), true, false},
		{"k1 dropped", "k2:" + testKey(2), false, true},
		{"no ring", "", false, true},
	} {
		log, err := keyRingCheck(t, u, c.ring)
		if refused := err != nil; refused != c.refuse {
			t.Errorf("%s: refused=%v (%v), want %v", c.name, refused, err, c.refuse)
		} else if c.refuse && (!strings.Contains(err.Error(), "FURROW_SECRET_KEYS") || !strings.Contains(err.Error(), `"k1"`)) {
			t.Errorf("%s: %q does not name FURROW_SECRET_KEYS and the key id k1", c.name, err)
		}
		checkWarning(t, c.name, log, c.warn, "level=WARN", "FURROW_SECRET_KEYS does not hold", "key_ids=[k1]")
	}
}

// serve, worker and dev say at start when a ring is set but secrets stored
// before it are still unsealed, and not when they are all sealed or no
// ring is set (another warning says that).
func TestStartWarnsOfUnsealedSecretsUnderARing(t *testing.T) {
	u := testenv.NewDatabase(t, schema)
	k1 := "k1:" + testKey(1)
	sealedWebhook(t, u, k1)
	check := func(ring string) string {
		db := ringStore(t, u, ring)
		defer db.Close()
		out := &testenv.Buffer{}
		warnUnsealedRows(context.Background(), db, slog.New(slog.NewTextHandler(out, nil)))
		return out.String()
	}
	const marker = "still unsealed"
	checkWarning(t, "all sealed", check(k1), false, marker)
	sealedWebhook(t, u, "") // stored unsealed: no ring
	checkWarning(t, "no ring", check(""), false, marker)
	checkWarning(t, "one unsealed under a ring", check(k1), true, marker, "furrow admin seal-secrets", "unsealed=1")
}

// A database that does not answer within startCheckTimeout skips the ring
// check, as it does the other checks at start, and says so.
func TestStartKeyRingCheckIsBounded(t *testing.T) {
	u, err := url.Parse(testenv.NewDatabase(t, schema))
	if err != nil {
		t.Fatal(err)
	}
	p := testenv.NewProxy(t, u.Host)
	u.Host = p.Addr
	p.Blackhole()
	defer p.Restore()
	start := time.Now()
	log, err := keyRingCheck(t, u.String(), "k1:"+testKey(1))
	if took := time.Since(start); err != nil || took > startCheckTimeout+2*time.Second {
		t.Fatalf("unanswered database: %v after %v; want the check skipped within %v", err, took, startCheckTimeout)
	}
	checkWarning(t, "unanswered database", log, true, "level=WARN", "key ring was not checked")
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
