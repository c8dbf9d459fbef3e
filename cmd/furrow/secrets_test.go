package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/furrowhq/furrow"
	"github.com/furrowhq/furrow/internal/testenv"
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
	user, _, err := db.CreateUser(ctx, uuid.NewString()+"@example.com")
	if err != nil {
		t.Fatal(err)
	}
	farm, err := db.CreateFarm(ctx, user.ID, "Farm")
	if err != nil {
		t.Fatal(err)
	}
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
	if err != nil || sum.Sealed != 5 || sum.Batches != 3 || sum.Unsealed != 0 || sum.ByKey["k1"] != 5 {
		t.Fatalf("seal-secrets: %+v, %v", sum, err)
	}
	if strings.Count(progress, "seal-secrets progress") != 3 {
		t.Errorf("want a progress line per batch, got:\n%s", progress)
	}
	if sum, _, err := admin(k1, "seal-secrets"); err != nil || sum.Sealed != 0 || sum.Batches != 0 {
		t.Fatalf("seal-secrets again: %+v, %v", sum, err)
	}
	sum, _, err = admin("k2:"+testKey(2)+","+k1, "reseal")
	if err != nil || sum.Resealed != 5 || sum.KeyID != "k2" || sum.ByKey["k2"] != 5 || len(sum.ByKey) != 1 {
		t.Fatalf("reseal: %+v, %v", sum, err)
	}
	if _, _, err := admin("k3:"+testKey(3), "reseal"); err == nil || !strings.Contains(err.Error(), `"k2"`) {
		t.Fatalf("reseal without the key the secrets are sealed with: %v", err)
	}
}
