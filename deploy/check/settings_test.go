package check

import (
	"strings"
	"testing"

	"github.com/furrowhq/furrow/internal/doccheck"
)

// furrowSettings returns every FURROW_* variable cmd/furrow reads.
func furrowSettings(t *testing.T) map[string]bool {
	t.Helper()
	out, err := doccheck.Settings("../../cmd/furrow")
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// checkSettings fails t for every FURROW_* name in env that cmd/furrow does
// not read; where says which file and object set it.
func checkSettings(t *testing.T, where string, env map[string]string) {
	t.Helper()
	known := furrowSettings(t)
	for k := range env {
		if strings.HasPrefix(k, "FURROW_") && !known[k] {
			t.Errorf("%s sets %s, which is not a setting of cmd/furrow", where, k)
		}
	}
}
