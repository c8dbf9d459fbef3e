package webhook

import (
	"go/build"
	"strings"
	"testing"
)

// selfPath is this package's import path, which only its external tests
// import.
const selfPath = "github.com/furrowhq/furrow/webhook"

// TestImportsStandardLibraryOnly holds the package to what its receivers
// rely on: it imports the standard library alone, nothing of Furrow and no
// third party, so a receiver's build pulls in nothing else. Its tests are
// held to the same rule.
func TestImportsStandardLibraryOnly(t *testing.T) {
	p, err := build.ImportDir(".", 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Imports) == 0 {
		t.Fatal("no imports found: the test reads the wrong directory")
	}
	for _, imp := range p.Imports {
		if !standard(imp) {
			t.Errorf("webhook imports %s: only the standard library is allowed", imp)
		}
	}
	for _, imp := range append(p.TestImports, p.XTestImports...) {
		if !standard(imp) && imp != selfPath {
			t.Errorf("webhook's tests import %s: only the standard library and webhook are allowed", imp)
		}
	}
}

// standard reports whether path is in the standard library, whose paths
// alone have no dot in their first element.
func standard(path string) bool {
	first, _, _ := strings.Cut(path, "/")
	return !strings.Contains(first, ".")
}
