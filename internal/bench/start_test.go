package bench

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestMain lets this test binary stand in for furrow: with
// BENCH_FAKE_FURROW set to a directory it fails its first start there as a
// taken port does, and serves /healthz on FURROW_HTTP_ADDR after. Once the
// tests are done it removes what they shared (see AfterTests).
func TestMain(m *testing.M) {
	if dir := os.Getenv("BENCH_FAKE_FURROW"); dir != "" {
		os.Exit(fakeFurrow(dir))
	}
	code := m.Run()
	for _, f := range afterTests {
		f()
	}
	os.Exit(code)
}

var afterTests []func()

// AfterTests has f run once every test of the run is done, for what several
// tests share: the smoke tests' furrow binary, a build of some 200 MB that
// no test's own cleanup may remove.
func AfterTests(f func()) { afterTests = append(afterTests, f) }

func fakeFurrow(dir string) int {
	marker := filepath.Join(dir, "started")
	if _, err := os.Stat(marker); errors.Is(err, os.ErrNotExist) {
		_ = os.WriteFile(marker, nil, 0o600)
		fmt.Fprintf(os.Stderr, "listen tcp %s: bind: %s\n", os.Getenv("FURROW_HTTP_ADDR"), addrInUse)
		return 1
	}
	err := http.ListenAndServe(os.Getenv("FURROW_HTTP_ADDR"), http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {}))
	fmt.Fprintln(os.Stderr, err)
	return 1
}

func TestStartTriesAgainOnATakenPort(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	p, err := startFurrow(ctx, os.Args[0], "serve", append(os.Environ(), "BENCH_FAKE_FURROW="+dir))
	if err != nil {
		t.Fatalf("start after a taken port: %v", err)
	}
	defer p.Stop()
	if _, err := os.Stat(filepath.Join(dir, "started")); err != nil {
		t.Fatalf("the first start did not run: %v", err)
	}
}

func TestStartGivesUpOnOtherFailures(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err := startFurrow(ctx, "/bin/false", "serve", nil)
	if err == nil || !strings.Contains(err.Error(), "furrow serve") {
		t.Fatalf("start of a process that exits: %v, want the failure", err)
	}
}

func TestInheritedKeepsOnlyTheProfilerOfFurrowSettings(t *testing.T) {
	got := inherited([]string{"PATH=/bin", "FURROW_DATABASE_URL=postgres://x", "FURROW_PPROF_ADDR=127.0.0.1:6060", "GOGC=200", "FURROW_REDIS_URL=redis://y"})
	want := []string{"PATH=/bin", "FURROW_PPROF_ADDR=127.0.0.1:6060", "GOGC=200"}
	if !slices.Equal(got, want) {
		t.Errorf("inherited = %q, want %q", got, want)
	}
}
