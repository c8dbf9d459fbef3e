// Package e2e drives the furrow binary from the outside: it builds it once,
// starts it against real PostgreSQL, Redis and Temporal, and talks HTTP to
// it as devices, users and webhook receivers would.
package e2e

import (
	"flag"
	"fmt"
	"os"
	"testing"

	"github.com/furrowhq/furrow/internal/loopback"
)

// binary is the furrow binary built for this test run.
var binary string

func TestMain(m *testing.M) {
	flag.Parse()
	if testing.Short() {
		// Every test here starts the binary and skips in -short mode:
		// building it would be the quick loop's longest step.
		os.Exit(m.Run())
	}
	dir, err := os.MkdirTemp("", "furrow-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if binary, err = loopback.BuildFurrow(dir); err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}
