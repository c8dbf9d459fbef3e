// Package testtemporal starts the embedded Temporal server for tests, as
// Furrow's workers expect it: its search attributes registered. It is apart
// from testenv so that only the tests that need a Temporal server link one.
package testtemporal

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/furrowhq/furrow/temporal/devserver"
	"github.com/furrowhq/furrow/workflows"
)

// startLimit bounds a start: a cold server migrates its SQLite schema first.
const startLimit = 2 * time.Minute

// Options are a test's server options: a free loopback port, no UI, no
// log, and Furrow's search attributes.
func Options() devserver.Options {
	return devserver.Options{
		FrontendAddr: "127.0.0.1:0", DisableUI: true, SearchAttributes: workflows.SearchAttributes(),
		Logger: slog.New(slog.DiscardHandler),
	}
}

// Start starts a server with Options, or returns why it could not within
// two minutes. The caller stops it.
func Start() (*devserver.Server, error) {
	ctx, cancel := context.WithTimeout(context.Background(), startLimit)
	defer cancel()
	return devserver.Start(ctx, Options())
}

// New starts a server with Options for t, fails t if it cannot, and stops
// the server when t ends. With -short it skips t instead: a start takes
// seconds.
func New(t testing.TB) *devserver.Server {
	t.Helper()
	if testing.Short() {
		t.Skip("starts an embedded Temporal server")
	}
	srv, err := Start()
	if err != nil {
		t.Fatalf("embedded Temporal: %v", err)
	}
	t.Cleanup(func() { _ = srv.Stop() })
	return srv
}
