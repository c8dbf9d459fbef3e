// Package deploycheck runs the checks of the deploy kit, which live in their
// own Go module (deploy/check/go.mod) to keep Helm, Kubernetes and Compose
// libraries out of the service's dependency graph. Running them from here
// makes `go test ./...`, and so `make test`, cover them.
package deploycheck

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
	"time"
)

func TestDeployModule(t *testing.T) {
	ctx := context.Background()
	if d, ok := t.Deadline(); ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, d.Add(-30*time.Second))
		defer cancel()
	}
	gobin := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(gobin); err != nil {
		gobin = "go"
	}
	cmd := exec.CommandContext(ctx, gobin, "test", "./...")
	cmd.Dir = "../../deploy/check"
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go test ./... in deploy/check failed: %v\n%s", err, out)
	}
	t.Logf("deploy/check: go test ./...\n%s", out)
}
