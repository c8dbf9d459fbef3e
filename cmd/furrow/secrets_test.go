package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/google/uuid"

	"github.com/furrowhq/furrow"
	"github.com/furrowhq/furrow/internal/testenv"
	"github.com/furrowhq/furrow/keyring"
	"github.com/furrowhq/furrow/store"
)

func testKey(b byte) string {
	return base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{b}, 32))
}

func TestConfigSecretKeys(t *testing.T) {
	file := filepath.Join(t.TempDir(), "ring")
	if err := os.WriteFile(file, []byte("f1:"+testKey(3)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(t.TempDir(), "bad")
	if err := os.WriteFile(bad, []byte("f1:"+testKey(3)[:20]), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name    string
		env     map[string]string
		primary string // "" for no ring
		errHas  string
	}{
		{"unset", nil, "", ""},
		{"inline", map[string]string{"FURROW_SECRET_KEYS": "new:" + testKey(2) + ",old:" + testKey(1)}, "new", ""},
		{"file", map[string]string{"FURROW_SECRET_KEYS_FILE": file}, "f1", ""},
		{"both", map[string]string{"FURROW_SECRET_KEYS": "a:" + testKey(1), "FURROW_SECRET_KEYS_FILE": file}, "", "both set"},
		{"malformed", map[string]string{"FURROW_SECRET_KEYS": "a:" + testKey(1) + ",a:" + testKey(2)}, "", `FURROW_SECRET_KEYS: key 2: id "a" appears twice`},
		{"missing file", map[string]string{"FURROW_SECRET_KEYS_FILE": file + ".none"}, "", "FURROW_SECRET_KEYS_FILE"},
		{"malformed file", map[string]string{"FURROW_SECRET_KEYS_FILE": bad}, "", "FURROW_SECRET_KEYS_FILE: " + bad + `: key 1 ("f1")`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg, err := loadConfig(env(c.env))
			if c.errHas != "" {
				if err == nil || !strings.Contains(err.Error(), c.errHas) || strings.Contains(err.Error(), testKey(1)) || strings.Contains(err.Error(), testKey(3)[:20]) {
					t.Fatalf("error %v, want one containing %q and no key", err, c.errHas)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.primary == "" && cfg.SecretKeys != nil || c.primary != "" && (cfg.SecretKeys == nil || cfg.SecretKeys.Primary() != c.primary) {
				t.Fatalf("ring %v, want primary %q", cfg.SecretKeys, c.primary)
			}
		})
	}
}

func TestDevSecretKeysKept(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	log := slog.New(slog.NewTextHandler(&bytes.Buffer{}, nil))
	first, err := devSecretKeys(dir, log)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(filepath.Join(dir, devKeyFile))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("key file: %v, mode %v; want 0600", err, fi.Mode())
	}
	id, sealed := first.Seal([]byte("whsec_x"), []byte("aad"))
	again, err := devSecretKeys(dir, log)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := again.Open(id, sealed, []byte("aad")); err != nil || string(got) != "whsec_x" {
		t.Fatalf("the ring read on the next start does not open what the first sealed: %q, %v", got, err)
	}
}

// newFarm stores a farm of a new user.
func newFarm(t *testing.T, db *store.DB) furrow.Farm {
	t.Helper()
	ctx := context.Background()
	user, _, err := db.CreateUser(ctx, uuid.NewString()+"@example.com")
	if err != nil {
		t.Fatal(err)
	}
	farm, err := db.CreateFarm(ctx, user.ID, "Farm")
	if err != nil {
		t.Fatal(err)
	}
	return farm
}

// TestAdminSealSecrets runs seal-secrets and reseal as an operator would
// and reads their JSON summaries.
func TestAdminSealSecrets(t *testing.T) {
	ctx := context.Background()
	url := testenv.NewDatabase(t, schema)
	db, err := store.Open(ctx, url, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	farm := newFarm(t, db)
	secrets := map[uuid.UUID]string{}
	for range 5 {
		w, err := db.CreateWebhook(ctx, furrow.Webhook{FarmID: farm.ID, URL: "https://hooks.example.com/", Secret: furrow.NewWebhookSecret(), Enabled: true})
		if err != nil {
			t.Fatal(err)
		}
		secrets[w.ID] = w.Secret
	}
	admin := func(ring string, args ...string) (sealSummary, string, error) {
		var out, errs bytes.Buffer
		err := run(ctx, append([]string{"admin"}, args...), env(map[string]string{"FURROW_DATABASE_URL": url, "FURROW_SECRET_KEYS": ring}), &out, &errs)
		var sum sealSummary
		if err == nil {
			if jerr := json.Unmarshal(out.Bytes(), &sum); jerr != nil {
				t.Fatalf("the summary is not JSON: %v\n%s", jerr, out.String())
			}
		}
		return sum, errs.String(), err
	}
	if _, _, err := admin("", "seal-secrets"); err == nil || !strings.Contains(err.Error(), "FURROW_SECRET_KEYS is not set") {
		t.Fatalf("seal-secrets without a ring: %v", err)
	}
	k1 := "k1:" + testKey(1)
	sum, progress, err := admin(k1, "seal-secrets", "--batch", "2")
	if err != nil || sum.Sealed != 5 || sum.Batches != 3 || !sum.Counted || sum.Unsealed == nil || *sum.Unsealed != 0 || sum.ByKey["k1"] != 5 {
		t.Fatalf("seal-secrets: %+v, %v", sum, err)
	}
	if strings.Count(progress, "seal-secrets progress") != 3 {
		t.Errorf("want a progress line per batch, got:\n%s", progress)
	}
	if sum, _, err := admin(k1, "seal-secrets"); err != nil || sum.Sealed != 0 || sum.Batches != 0 {
		t.Fatalf("seal-secrets again: %+v, %v", sum, err)
	}
	// Another key under the id that sealed the stored secrets would seal
	// the rest with a key nobody kept.
	for _, cmd := range []string{"seal-secrets", "reseal"} {
		if _, _, err := admin("k1:"+testKey(9), cmd); err == nil || !strings.Contains(err.Error(), "id of its own") {
			t.Fatalf("%s with another key named k1: %v", cmd, err)
		}
	}
	sum, _, err = admin("k2:"+testKey(2)+","+k1, "reseal")
	if err != nil || sum.Resealed != 5 || sum.KeyID != "k2" || sum.ByKey["k2"] != 5 || len(sum.ByKey) != 1 {
		t.Fatalf("reseal: %+v, %v", sum, err)
	}
	if _, _, err := admin("k3:"+testKey(3), "reseal"); err == nil || !strings.Contains(err.Error(), `"k2"`) {
		t.Fatalf("reseal without the key the secrets are sealed with: %v", err)
	}
}

// A ring made again after the data directory was deleted has a key id of
// its own, so that secrets the lost key sealed are reported as sealed with
// a key the ring does not hold, not as altered. A ring made before ids
// were random (id "dev") is still read.
func TestDevSecretKeysHaveIDsOfTheirOwn(t *testing.T) {
	log := slog.New(slog.NewTextHandler(&bytes.Buffer{}, nil))
	dir := filepath.Join(t.TempDir(), "data")
	first, err := devSecretKeys(dir, log)
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`^dev-[0-9a-f]{8}$`).MatchString(first.Primary()) {
		t.Fatalf("key id %q, want dev- and 8 hex digits", first.Primary())
	}
	if names := dirNames(t, dir); len(names) != 1 || names[0] != devKeyFile {
		t.Fatalf("the data directory holds %v, want the key file alone", names)
	}
	id, sealed := first.Seal([]byte("whsec_x"), []byte("aad"))
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	second, err := devSecretKeys(dir, log)
	if err != nil {
		t.Fatal(err)
	}
	if second.Primary() == first.Primary() {
		t.Fatalf("the new ring reuses key id %q", first.Primary())
	}
	if _, err := second.Open(id, sealed, []byte("aad")); !errors.Is(err, keyring.ErrUnknownKey) {
		t.Fatalf("a secret the lost key sealed: %v, want %v", err, keyring.ErrUnknownKey)
	}

	old := filepath.Join(t.TempDir(), "old")
	if err := os.MkdirAll(old, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(old, devKeyFile), []byte("dev:"+testKey(4)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if r, err := devSecretKeys(old, log); err != nil || r.Primary() != "dev" {
		t.Fatalf("an existing ring with id dev: %v, %v", r, err)
	}
}

func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

// Several dev processes starting at once on a new data directory end up
// with the one ring.
func TestDevSecretKeysMadeOnce(t *testing.T) {
	log := slog.New(slog.NewTextHandler(&bytes.Buffer{}, nil))
	dir := filepath.Join(t.TempDir(), "data")
	rings := make([]string, 8)
	var wg sync.WaitGroup
	for i := range rings {
		wg.Go(func() {
			r, err := devSecretKeys(dir, log)
			if err != nil {
				t.Error(err)
				return
			}
			rings[i] = r.Primary()
		})
	}
	wg.Wait()
	for _, id := range rings {
		if id != rings[0] {
			t.Fatalf("concurrent starts made different rings: %v", rings)
		}
	}
	if names := dirNames(t, dir); len(names) != 1 {
		t.Fatalf("the data directory holds %v, want the key file alone", names)
	}
}

// When the secrets cannot be counted after a run, the summary says so and
// does not claim that none is left unsealed.
func TestAdminSealSummaryWhenTheCountFails(t *testing.T) {
	ctx := context.Background()
	url := testenv.NewDatabase(t, schema)
	count := secretsByKey
	secretsByKey = func(*store.DB, context.Context) (map[string]int64, error) {
		return nil, errors.New("store: count secrets: connection lost")
	}
	t.Cleanup(func() { secretsByKey = count })
	var out bytes.Buffer
	err := run(ctx, []string{"admin", "seal-secrets"}, env(map[string]string{"FURROW_DATABASE_URL": url, "FURROW_SECRET_KEYS": "k1:" + testKey(1)}), &out, &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "count the secrets") {
		t.Fatalf("seal-secrets whose count failed: %v", err)
	}
	var sum map[string]any
	if err := json.Unmarshal(out.Bytes(), &sum); err != nil {
		t.Fatalf("the summary is not JSON: %v\n%s", err, out.String())
	}
	_, unsealed := sum["unsealed"]
	_, byKey := sum["by_key"]
	if unsealed || byKey || sum["counted"] != false || sum["key_id"] != "k1" {
		t.Fatalf("summary %s: want counted false, key_id, and neither unsealed nor by_key", out.String())
	}
}

// The sealing commands' help names every key of the summary they print.
func TestAdminSealHelpNamesTheSummaryKeys(t *testing.T) {
	var sum bytes.Buffer
	if err := json.NewEncoder(&sum).Encode(sealSummary{Counted: true, ByKey: map[string]int64{}, Unsealed: new(int64)}); err != nil {
		t.Fatal(err)
	}
	var keys map[string]any
	if err := json.Unmarshal(sum.Bytes(), &keys); err != nil {
		t.Fatal(err)
	}
	for _, cmd := range []string{"seal-secrets", "reseal"} {
		var out bytes.Buffer
		if err := run(context.Background(), []string{"admin", cmd, "--help"}, env(nil), &out, &bytes.Buffer{}); err != nil {
			t.Fatal(err)
		}
		for k := range keys {
			if !regexp.MustCompile(`(?m)^\s+` + k + `\s`).MatchString(out.String()) {
				t.Errorf("furrow admin %s --help does not describe the summary's %q:\n%s", cmd, k, out.String())
			}
		}
	}
}
