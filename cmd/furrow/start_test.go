package main

import (
	"bytes"
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/furrowhq/furrow/internal/testenv"
)

// busyAddr returns a local address that a listener of the test holds.
func busyAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return ln.Addr().String()
}

// startError runs furrow cmd with e, which must stop it at start, and
// returns its exit status and the first line of what it printed.
func startError(t *testing.T, cmd string, e map[string]string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var stderr bytes.Buffer
	code := report(run(ctx, []string{cmd}, env(e), &bytes.Buffer{}, &bytes.Buffer{}), &stderr)
	if ctx.Err() != nil {
		t.Fatalf("furrow %s still running after 30 s", cmd)
	}
	first, _, _ := strings.Cut(stderr.String(), "\n")
	return code, first
}

// A busy FURROW_PPROF_ADDR, and a busy FURROW_HTTP_ADDR of worker (its
// probes), stop the process at start with exit 1 and an error naming the
// setting, as a busy FURROW_METRICS_ADDR does, before Temporal is dialled
// or the database opened; the process never runs on without them.
func TestBusyListenersStopTheStart(t *testing.T) {
	base := func(more map[string]string) map[string]string {
		e := map[string]string{
			"FURROW_TEMPORAL_ADDRESS": testenv.ClosedAddr(t), "FURROW_DATABASE_URL": closedPostgres(t),
			"FURROW_CONNECT_TIMEOUT": "200ms", "FURROW_METRICS_ADDR": "off", "FURROW_HTTP_ADDR": "127.0.0.1:0",
		}
		for k, v := range more {
			e[k] = v
		}
		return e
	}
	for _, c := range []struct {
		cmd, name string
	}{
		{"worker", "FURROW_HTTP_ADDR"},
		{"worker", "FURROW_PPROF_ADDR"},
		{"serve", "FURROW_PPROF_ADDR"},
		{"dev", "FURROW_PPROF_ADDR"},
	} {
		busy := busyAddr(t)
		code, first := startError(t, c.cmd, base(map[string]string{c.name: busy}))
		if code != 1 || !strings.Contains(first, c.name+"="+busy) || !strings.Contains(first, "address already in use") {
			t.Errorf("furrow %s with %s busy: exit %d, %q; want exit 1 and an error naming the setting", c.cmd, c.name, code, first)
		}
	}
}

// A FURROW_DEV_DATA_DIR where no file can be made stops `furrow dev` with
// an error naming it, whether the key ring or the embedded Temporal would
// have been the first to use it.
func TestDevDataDirErrorsNameTheSetting(t *testing.T) {
	if testing.Short() {
		t.Skip("migrates a database")
	}
	file := filepath.Join(t.TempDir(), "a-file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	db := testenv.NewDatabase(t, schema)
	for name, more := range map[string]map[string]string{
		"dev key ring":      nil,
		"embedded Temporal": {"FURROW_SECRET_KEYS": "k1:" + testKey(1)},
	} {
		e := map[string]string{
			"FURROW_DATABASE_URL": db, "FURROW_DEV_DATA_DIR": filepath.Join(file, "data"), "FURROW_METRICS_ADDR": "off",
			"FURROW_HTTP_ADDR": "127.0.0.1:0", "FURROW_DEV_TEMPORAL_ADDR": "127.0.0.1:0", "FURROW_DEV_UI_ADDR": "127.0.0.1:0",
		}
		for k, v := range more {
			e[k] = v
		}
		code, first := startError(t, "dev", e)
		if code != 1 || !strings.HasPrefix(first, "furrow: FURROW_DEV_DATA_DIR: ") || !strings.Contains(first, "not a directory") {
			t.Errorf("%s first: exit %d, %q; want exit 1 and an error starting with FURROW_DEV_DATA_DIR", name, code, first)
		}
	}
}
