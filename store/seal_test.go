package store_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/furrowhq/furrow"
	"github.com/furrowhq/furrow/internal/testenv"
	"github.com/furrowhq/furrow/keyring"
	"github.com/furrowhq/furrow/store"
)

// ringOf parses a ring of test keys, each made of one repeated byte:
// ringOf("k2", 2, "k1", 1) is "k2:<32 bytes of 2>,k1:<32 bytes of 1>".
func ringOf(t testing.TB, idsAndBytes ...any) *keyring.Ring {
	t.Helper()
	var entries []string
	for i := 0; i < len(idsAndBytes); i += 2 {
		key := bytes.Repeat([]byte{byte(idsAndBytes[i+1].(int))}, keyring.KeySize)
		entries = append(entries, idsAndBytes[i].(string)+":"+base64.StdEncoding.EncodeToString(key))
	}
	r, err := keyring.Parse(strings.Join(entries, ","))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// openOn opens another store on url with ring keys (nil: none) and a log.
func openOn(t testing.TB, url string, keys *keyring.Ring) (*store.DB, *testenv.Buffer) {
	t.Helper()
	var log testenv.Buffer
	db, err := store.Open(context.Background(), url, store.Options{Keys: keys, Logger: slog.New(slog.NewTextHandler(&log, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	return db, &log
}

// dumpWebhooks returns the webhooks table as text, every column of every
// row, as a database dump would hold it.
func dumpWebhooks(t testing.TB, url string) string {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	rows, _ := conn.Query(context.Background(), "SELECT row_to_json(w)::text FROM webhooks w")
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return strings.Join(lines, "\n")
}

// pgDumpWebhooks returns pg_dump's dump of the webhooks table's rows at
// url, made with Debian's pg_dump of the server's major version (an older
// one refuses a newer server) or else the one on PATH. It fails t, saying
// why, when pg_dump is missing or fails.
func pgDumpWebhooks(t testing.TB, url string) []byte {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	var major int
	err = conn.QueryRow(context.Background(), "SELECT current_setting('server_version_num')::int / 10000").Scan(&major)
	conn.Close(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	bin := fmt.Sprintf("/usr/lib/postgresql/%d/bin/pg_dump", major)
	if _, err := os.Stat(bin); err != nil {
		if bin, err = exec.LookPath("pg_dump"); err != nil {
			msg := fmt.Sprintf("no pg_dump for PostgreSQL %d: install the Debian package postgresql-client-%d (.ci/setup does)", major, major)
			if testing.Short() { // the quick loop needs PostgreSQL and Redis only
				t.Skip("SKIPPING the dump of sealed secrets (make test runs it): " + msg)
			}
			t.Fatal(msg)
		}
	}
	var stderr bytes.Buffer
	cmd := exec.Command(bin, "--data-only", "--table=webhooks", url)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s of webhooks of PostgreSQL %d: %v\n%s", bin, major, err, stderr.String())
	}
	return out
}

func sealableWebhook(t testing.TB, db *store.DB, farm uuid.UUID) furrow.Webhook {
	t.Helper()
	w, err := db.CreateWebhook(context.Background(), furrow.Webhook{
		FarmID: farm, URL: "https://hooks.example.com/in", Secret: furrow.NewWebhookSecret(), Enabled: true})
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func TestSecretSealedAtRest(t *testing.T) {
	ctx := context.Background()
	_, url := newDB(t, newClock())
	db, _ := openOn(t, url, ringOf(t, "k1", 1))
	f := newFixture(t, db)
	w := sealableWebhook(t, db, f.farm.ID)

	dump := dumpWebhooks(t, url)
	if strings.Contains(dump, w.Secret) || strings.Contains(dump, strings.TrimPrefix(w.Secret, furrow.WebhookSecretPrefix)) {
		t.Fatalf("the webhooks table holds the secret in clear:\n%s", dump)
	}
	if !strings.Contains(dump, `"secret_key_id":"k1"`) {
		t.Fatalf("the row does not name the key that sealed it:\n%s", dump)
	}
	out := pgDumpWebhooks(t, url)
	if !bytes.Contains(out, []byte(w.ID.String())) {
		t.Fatalf("pg_dump of webhooks lacks the webhook's row:\n%s", out)
	}
	if bytes.Contains(out, []byte(w.Secret)) || bytes.Contains(out, []byte(strings.TrimPrefix(w.Secret, furrow.WebhookSecretPrefix))) {
		t.Fatal("pg_dump of webhooks holds the secret in clear")
	}

	reads := map[string]func() (furrow.Webhook, error){
		"Webhook":     func() (furrow.Webhook, error) { return db.Webhook(ctx, f.farm.ID, w.ID) },
		"WebhookByID": func() (furrow.Webhook, error) { return db.WebhookByID(ctx, w.ID) },
		"AttemptParts": func() (furrow.Webhook, error) {
			p, err := db.AttemptParts(ctx, w.ID, furrow.NewEventID(), false)
			return p.Webhook, err
		},
		"Webhooks": func() (furrow.Webhook, error) {
			ws, err := db.Webhooks(ctx, f.farm.ID)
			if err != nil || len(ws) != 1 {
				return furrow.Webhook{}, err
			}
			return ws[0], nil
		},
	}
	for name, read := range reads {
		if got, err := read(); err != nil || got.Secret != w.Secret {
			t.Errorf("%s read back secret %q (%v), want the plaintext", name, got.Secret, err)
		}
	}
	if sealed, unsealed, err := db.WebhookSecretStates(ctx); err != nil || sealed != 1 || unsealed != 0 {
		t.Errorf("states: %d sealed, %d unsealed (%v)", sealed, unsealed, err)
	}
}

func TestSecretUnsealedAndMisconfigured(t *testing.T) {
	ctx := context.Background()
	plainDB, url := newDB(t, newClock())
	f := newFixture(t, plainDB)
	plain := sealableWebhook(t, plainDB, f.farm.ID)
	if !strings.Contains(dumpWebhooks(t, url), plain.Secret) {
		t.Fatal("without a key ring the secret is not stored as before")
	}
	if plainDB.Sealing() {
		t.Fatal("a store without a ring says it seals")
	}

	k1, _ := openOn(t, url, ringOf(t, "k1", 1))
	if got, err := k1.WebhookByID(ctx, plain.ID); err != nil || got.Secret != plain.Secret {
		t.Fatalf("an unsealed row read with a ring: %q, %v", got.Secret, err)
	}
	sealed := sealableWebhook(t, k1, f.farm.ID)
	if sealed, unsealed, err := k1.WebhookSecretStates(ctx); err != nil || sealed != 1 || unsealed != 1 {
		t.Errorf("states: %d sealed, %d unsealed (%v)", sealed, unsealed, err)
	}

	cases := []struct {
		name string
		keys *keyring.Ring
		want string
	}{
		{"no ring", nil, `sealed with key "k1" and no key ring is configured`},
		{"key dropped", ringOf(t, "k2", 2), `key id "k1"`},
		{"other key under the same id", ringOf(t, "k1", 9), "does not open"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			db, log := openOn(t, url, c.keys)
			_, err := db.WebhookByID(ctx, sealed.ID)
			wantCode(t, err, furrow.EINTERNAL)
			if !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), sealed.ID.String()) {
				t.Errorf("error %q does not say %q about webhook %s", err, c.want, sealed.ID)
			}
			if _, err := db.Webhooks(ctx, f.farm.ID); furrow.ErrorCode(err) != furrow.EINTERNAL {
				t.Errorf("listing: %v, want an internal error", err)
			}
			if !strings.Contains(log.String(), "a webhook secret does not open") || strings.Contains(log.String(), sealed.Secret) {
				t.Errorf("log %q: want the failure logged without the secret", log.String())
			}
			if got, err := db.WebhookByID(ctx, plain.ID); err != nil || got.Secret != plain.Secret {
				t.Errorf("the unsealed row: %q, %v", got.Secret, err)
			}
		})
	}
}

// A sealed secret moved into another webhook's row does not open there.
func TestSealedSecretBoundToItsWebhook(t *testing.T) {
	ctx := context.Background()
	_, url := newDB(t, newClock())
	db, _ := openOn(t, url, ringOf(t, "k1", 1))
	f := newFixture(t, db)
	a, b := sealableWebhook(t, db, f.farm.ID), sealableWebhook(t, db, f.farm.ID)
	conn := connect(t, url)
	if _, err := conn.Exec(ctx, "UPDATE webhooks SET secret = (SELECT secret FROM webhooks WHERE id = $1) WHERE id = $2", a.ID, b.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := db.WebhookByID(ctx, b.ID); !errors.Is(err, keyring.ErrOpen) {
		t.Fatalf("a's sealed secret in b's row: %v, want ErrOpen", err)
	}
	if got, err := db.WebhookByID(ctx, a.ID); err != nil || got.Secret != a.Secret {
		t.Fatalf("a: %q, %v", got.Secret, err)
	}
}

// populate stores n webhooks with unsealed secrets on one farm, in one
// statement, and returns the farm and their secrets by id.
func populate(t *testing.T, db *store.DB, url string, n int) (uuid.UUID, map[uuid.UUID]string) {
	t.Helper()
	ctx := context.Background()
	f := newFixture(t, db)
	conn := connect(t, url)
	_, err := conn.Exec(ctx, `INSERT INTO webhooks (id, farm_id, url, secret, enabled, created_at_ms)
		SELECT gen_random_uuid(), $1, 'https://hooks.example.com/' || i, 'whsec_' || md5(random()::text), true, 0
		FROM generate_series(1, $2) AS i`, f.farm.ID, n)
	if err != nil {
		t.Fatal(err)
	}
	ws, err := db.Webhooks(ctx, f.farm.ID)
	if err != nil || len(ws) != n {
		t.Fatalf("%d webhooks stored (%v), want %d", len(ws), err, n)
	}
	out := make(map[uuid.UUID]string, n)
	for _, w := range ws {
		out[w.ID] = w.Secret
	}
	return f.farm.ID, out
}

// checkAll reads the farm's webhooks through db and compares each secret.
func checkAll(t *testing.T, db *store.DB, farm uuid.UUID, want map[uuid.UUID]string) {
	t.Helper()
	ws, err := db.Webhooks(context.Background(), farm)
	if err != nil || len(ws) != len(want) {
		t.Fatalf("%d webhooks read (%v), want %d", len(ws), err, len(want))
	}
	for _, w := range ws {
		if w.Secret != want[w.ID] {
			t.Fatalf("webhook %s: secret %q, want the original", w.ID, w.Secret)
		}
	}
	one := ws[len(ws)/2]
	if got, err := db.WebhookByID(context.Background(), one.ID); err != nil || got.Secret != want[one.ID] {
		t.Fatalf("webhook %s by id: %q (%v)", one.ID, got.Secret, err)
	}
}

// sealTwice runs SealSecrets from two goroutines at once and returns both
// reports.
func sealTwice(t *testing.T, a, b *store.DB, opts store.SealOptions) [2]store.SealReport {
	t.Helper()
	var reps [2]store.SealReport
	var wg sync.WaitGroup
	for i, db := range []*store.DB{a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rep, err := db.SealSecrets(context.Background(), opts)
			if err != nil {
				t.Errorf("run %d: %v", i, err)
			}
			reps[i] = rep
		}()
	}
	wg.Wait()
	return reps
}

func TestSealSecretsAndReseal(t *testing.T) {
	ctx := context.Background()
	plainDB, url := newDB(t, newClock())
	farm, want := populate(t, plainDB, url, 1200)

	if _, err := plainDB.SealSecrets(ctx, store.SealOptions{}); !errors.Is(err, store.ErrNoKeyRing) {
		t.Fatalf("sealing without a ring: %v", err)
	}

	// Seal from two processes at once, in batches of 500.
	k1a, _ := openOn(t, url, ringOf(t, "k1", 1))
	k1b, _ := openOn(t, url, ringOf(t, "k1", 1))
	var progress []store.SealReport
	var mu sync.Mutex
	opts := store.SealOptions{BatchSize: 500, Progress: func(r store.SealReport) {
		mu.Lock()
		progress = append(progress, r)
		mu.Unlock()
	}}
	reps := sealTwice(t, k1a, k1b, opts)
	if n := reps[0].Sealed + reps[1].Sealed; n != 1200 || reps[0].Resealed+reps[1].Resealed != 0 {
		t.Fatalf("sealed %d and resealed %d rows in all (%+v), want 1200 and 0", n, reps[0].Resealed+reps[1].Resealed, reps)
	}
	if len(progress) < 3 || reps[0].KeyID != "k1" {
		t.Errorf("%d progress reports, key %q", len(progress), reps[0].KeyID)
	}
	for _, secret := range []string{want[firstKey(want)], strings.TrimPrefix(want[firstKey(want)], furrow.WebhookSecretPrefix)} {
		if strings.Contains(dumpWebhooks(t, url), secret) {
			t.Fatal("a secret is still in clear after sealing")
		}
	}
	checkAll(t, k1a, farm, want)
	if again, err := k1a.SealSecrets(ctx, opts); err != nil || again.Sealed+again.Resealed+again.Batches != 0 {
		t.Fatalf("a second run: %+v, %v; want nothing done", again, err)
	}

	// Rotate: the new key first, reseal from two processes while another
	// transaction holds some rows for a while, as a delivery's state write
	// would.
	k2a, _ := openOn(t, url, ringOf(t, "k2", 2, "k1", 1))
	k2b, _ := openOn(t, url, ringOf(t, "k2", 2, "k1", 1))
	release := holdRows(t, url, 7)
	go func() { time.Sleep(300 * time.Millisecond); release() }()
	reps = sealTwice(t, k2a, k2b, store.SealOptions{Reseal: true, BatchSize: 500})
	if n := reps[0].Resealed + reps[1].Resealed; n != 1200 || reps[0].Sealed+reps[1].Sealed != 0 {
		t.Fatalf("resealed %d rows in all (%+v), want 1200", n, reps)
	}
	if again, err := k2a.SealSecrets(ctx, store.SealOptions{Reseal: true}); err != nil || again.Resealed != 0 {
		t.Fatalf("a second reseal: %+v, %v", again, err)
	}
	byKey, err := k2a.SecretsByKey(ctx)
	if err != nil || len(byKey) != 1 || byKey["k2"] != 1200 {
		t.Fatalf("secrets by key %v (%v), want all 1200 under k2", byKey, err)
	}

	// Drop the old key: every secret still opens.
	k2only, _ := openOn(t, url, ringOf(t, "k2", 2))
	checkAll(t, k2only, farm, want)

	// A ring without the key rows are sealed with stops a reseal, naming
	// the key; sealing unsealed rows leaves those rows alone.
	k3, _ := openOn(t, url, ringOf(t, "k3", 3))
	if _, err := k3.SealSecrets(ctx, store.SealOptions{Reseal: true}); !errors.Is(err, keyring.ErrUnknownKey) || !strings.Contains(err.Error(), `"k2"`) {
		t.Fatalf("reseal with k2 missing: %v", err)
	}
	if rep, err := k3.SealSecrets(ctx, store.SealOptions{}); err != nil || rep.Sealed != 0 {
		t.Fatalf("seal with k2 missing: %+v, %v", rep, err)
	}
}

func firstKey(m map[uuid.UUID]string) uuid.UUID {
	for k := range m {
		return k
	}
	return uuid.Nil
}

// holdRows locks n webhook rows in a transaction until release is called.
func holdRows(t *testing.T, url string, n int) (release func()) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, "SELECT id FROM webhooks ORDER BY id LIMIT $1 FOR UPDATE", n); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	release = func() {
		once.Do(func() {
			_ = tx.Commit(ctx)
			conn.Close(ctx)
		})
	}
	t.Cleanup(release)
	return release
}

// A ring whose first key has the id of the key that sealed stored secrets,
// but is another key (a ring made anew, reusing k1), would seal every
// remaining secret with a key nobody kept: SealSecrets refuses before
// writing anything. A ring with the right key under that id goes on.
func TestSealSecretsRefusesAnotherKeyUnderAUsedID(t *testing.T) {
	ctx := context.Background()
	plainDB, url := newDB(t, newClock())
	farm, _ := populate(t, plainDB, url, 3)
	k1, _ := openOn(t, url, ringOf(t, "k1", 1))
	sealed := sealableWebhook(t, k1, farm)
	before, err := k1.SecretsByKey(ctx)
	if err != nil || before[""] != 3 || before["k1"] != 1 {
		t.Fatalf("secrets by key %v (%v), want 3 unsealed and 1 under k1", before, err)
	}

	for _, ring := range []*keyring.Ring{ringOf(t, "k1", 9), ringOf(t, "k1", 9, "k0", 1)} {
		other, _ := openOn(t, url, ring)
		for _, reseal := range []bool{false, true} {
			rep, err := other.SealSecrets(ctx, store.SealOptions{Reseal: reseal})
			if !errors.Is(err, store.ErrPrimaryMismatch) || !strings.Contains(err.Error(), `"k1"`) || rep.Batches != 0 {
				t.Fatalf("SealSecrets (reseal %v) with another key named k1: %+v, %v; want ErrPrimaryMismatch naming k1", reseal, rep, err)
			}
		}
	}
	if after, err := k1.SecretsByKey(ctx); err != nil || after[""] != 3 || after["k1"] != 1 {
		t.Fatalf("after the refusals: secrets by key %v (%v), want nothing changed", after, err)
	}

	// The previous secret of a rotation is checked as well.
	conn := connect(t, url)
	if _, err := conn.Exec(ctx, `UPDATE webhooks SET previous_secret = secret, previous_secret_key_id = secret_key_id,
		previous_secret_until_ms = $2, secret = 'whsec_plain', secret_key_id = NULL WHERE id = $1`, sealed.ID, time.Now().Add(time.Hour).UnixMilli()); err != nil {
		t.Fatal(err)
	}
	other, _ := openOn(t, url, ringOf(t, "k1", 9))
	if _, err := other.SealSecrets(ctx, store.SealOptions{}); !errors.Is(err, store.ErrPrimaryMismatch) {
		t.Fatalf("with k1 only on a previous secret: %v, want ErrPrimaryMismatch", err)
	}

	if rep, err := k1.SealSecrets(ctx, store.SealOptions{}); err != nil || rep.Sealed != 4 {
		t.Fatalf("SealSecrets with the key that sealed them: %+v, %v; want 4 sealed", rep, err)
	}
}
