package check

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// settingName is what a Furrow setting looks like.
var settingName = regexp.MustCompile(`^FURROW_[A-Z0-9_]+$`)

// furrowSettings returns every FURROW_* variable cmd/furrow reads: the
// string constants of its non-test sources that are whole setting names
// (loadConfig passes each to getenv as such a literal).
func furrowSettings(t *testing.T) map[string]bool {
	t.Helper()
	files, err := filepath.Glob("../../cmd/furrow/*.go")
	if err != nil || len(files) == 0 {
		t.Fatalf("no sources of cmd/furrow found (%v)", err)
	}
	fset := token.NewFileSet()
	out := map[string]bool{}
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING {
				if s, err := strconv.Unquote(lit.Value); err == nil && settingName.MatchString(s) {
					out[s] = true
				}
			}
			return true
		})
	}
	// Sanity: the enumeration finds the settings every build has.
	for _, must := range []string{"FURROW_DATABASE_URL", "FURROW_TEMPORAL_ADDRESS", "FURROW_TRUSTED_PROXIES"} {
		if !out[must] {
			t.Fatalf("found %d settings in cmd/furrow but not %s: the enumeration is broken", len(out), must)
		}
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
