package e2e

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"
)

// TestClusterCacheKeepsTheRecentTemporalBuilds fills a cache with builds of
// the Temporal server made for other go.sum files, then runs cluster.sh
// build: the build for this go.sum (already there, so nothing compiles) and
// the two most recently used others stay, the older ones go.
func TestClusterCacheKeepsTheRecentTemporalBuilds(t *testing.T) {
	cache := t.TempDir()
	current := filepath.Join(cache, "temporal-"+temporalVersion(t)+"-"+goSumHash(t))
	for _, bin := range []string{"temporal-server", "temporal-sql-tool"} {
		writeExecutable(t, filepath.Join(current, bin), "#!/bin/sh\n")
	}
	// Oldest first; current is the oldest of all, so only its use keeps it.
	old := []string{"temporal-v1.32.0", "temporal-v1.31.0-aaaaaaaaaaaa", "temporal-v1.32.0-bbbbbbbbbbbb", "temporal-v1.32.0-cccccccccccc"}
	base := time.Now().Add(-time.Hour)
	if err := os.Chtimes(current, base.Add(-time.Hour), base.Add(-time.Hour)); err != nil {
		t.Fatal(err)
	}
	for i, name := range old {
		dir := filepath.Join(cache, name)
		writeExecutable(t, filepath.Join(dir, "temporal-server"), "old")
		at := base.Add(time.Duration(i) * time.Minute)
		if err := os.Chtimes(dir, at, at); err != nil {
			t.Fatal(err)
		}
	}

	c := &cluster{t: t, dir: t.TempDir()}
	c.env = append(os.Environ(), "CLUSTER_DIR="+c.dir, "CLUSTER_CACHE="+cache)
	c.do("build")

	entries, err := os.ReadDir(cache)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range entries {
		got = append(got, e.Name())
	}
	want := []string{filepath.Base(current), "temporal-v1.32.0-bbbbbbbbbbbb", "temporal-v1.32.0-cccccccccccc"}
	sort.Strings(want)
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("cache after build holds %v, want %v", got, want)
	}
	if b, err := os.ReadFile(filepath.Join(current, "temporal-server")); err != nil || string(b) != "#!/bin/sh\n" {
		t.Errorf("the build for this go.sum was rebuilt or lost (%q, %v)", b, err)
	}
}

// temporalVersion is the version of go.temporal.io/server in go.mod.
func temporalVersion(t *testing.T) string {
	t.Helper()
	cmd := exec.Command("go", "list", "-m", "-f", "{{.Version}}", "go.temporal.io/server")
	cmd.Dir = ".."
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -m go.temporal.io/server: %v", err)
	}
	return strings.TrimSpace(string(out))
}

// goSumHash is the first 12 hex digits of go.sum's SHA-256, as cluster.sh
// names its builds.
func goSumHash(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("../go.sum")
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])[:12]
}

// writeExecutable writes text to path as an executable file, making its
// directory.
func writeExecutable(t *testing.T, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o755); err != nil {
		t.Fatal(err)
	}
}
