// Package importrules holds Furrow's packages to the dependency rule drawn
// in docs/architecture.md: the table there is the rule, and this test fails
// when an import breaks it or a package is missing from it.
package importrules

import (
	"bufio"
	"go/build"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/furrowhq/furrow"

// rule is one row of the table: the packages of Furrow a package may import.
type rule struct {
	any    bool     // "any package"
	except []string // "any package but ..."
	allow  []string // names, or prefixes ending in "/*"
}

var tick = regexp.MustCompile("`([^`]+)`")

// readRules parses the table under "## Package dependency rule".
func readRules(t *testing.T, path string) map[string]rule {
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rules := map[string]rule{}
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "## ") {
			in = line == "## Package dependency rule"
			continue
		}
		if !in || !strings.HasPrefix(line, "| `") {
			continue
		}
		cells := strings.Split(line, "|")
		if len(cells) < 4 {
			continue
		}
		who, may := cells[1], cells[2]
		var r rule
		switch {
		case strings.Contains(may, "any package but"):
			r.any = true
			for _, m := range tick.FindAllStringSubmatch(may, -1) {
				r.except = append(r.except, m[1])
			}
		case strings.Contains(may, "any package"):
			r.any = true
		case strings.TrimSpace(may) == "nothing":
		default:
			for _, m := range tick.FindAllStringSubmatch(may, -1) {
				r.allow = append(r.allow, m[1])
			}
		}
		for _, m := range tick.FindAllStringSubmatch(who, -1) {
			rules[m[1]] = r
		}
	}
	if len(rules) == 0 {
		t.Fatalf("%s: no table under \"## Package dependency rule\"", path)
	}
	return rules
}

func matches(pattern, pkg string) bool {
	if p, ok := strings.CutSuffix(pattern, "/*"); ok {
		return strings.HasPrefix(pkg, p+"/")
	}
	return pattern == pkg
}

func (r rule) permits(pkg string) bool {
	if r.any {
		return !slices.ContainsFunc(r.except, func(p string) bool { return matches(p, pkg) })
	}
	return slices.ContainsFunc(r.allow, func(p string) bool { return matches(p, pkg) })
}

// short names a package of the module as the table does: "furrow" for the
// root, the path below the module otherwise.
func short(importPath string) string {
	if importPath == module {
		return "furrow"
	}
	return strings.TrimPrefix(importPath, module+"/")
}

func TestImportsFollowTheArchitecture(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	rules := readRules(t, filepath.Join(root, "docs", "architecture.md"))
	skip := map[string]bool{"e2e": true, "examples": true, "deploy": true, ".git": true, ".furrow": true}
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if skip[strings.Split(rel, string(filepath.Separator))[0]] || strings.HasSuffix(rel, "testdata") {
			return filepath.SkipDir
		}
		p, err := build.ImportDir(path, 0)
		if err != nil {
			return nil // no Go files here
		}
		name := "furrow"
		if rel != "." {
			name = filepath.ToSlash(rel)
		}
		r, ok := rules[name]
		if !ok {
			t.Errorf("package %s is not in the table of docs/architecture.md: add its row", name)
			return nil
		}
		for _, imp := range p.Imports {
			if imp != module && !strings.HasPrefix(imp, module+"/") {
				continue
			}
			if dep := short(imp); !r.permits(dep) {
				t.Errorf("%s imports %s, which docs/architecture.md's dependency rule does not allow", name, dep)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestRuleCatchesABreach checks the parser against a rule it must refuse:
// a test that could never fail would hold nothing.
func TestRuleCatchesABreach(t *testing.T) {
	root, _ := filepath.Abs("../..")
	rules := readRules(t, filepath.Join(root, "docs", "architecture.md"))
	for pkg, forbidden := range map[string]string{"store": "telemetry", "webhook": "furrow", "furrow": "store"} {
		r, ok := rules[pkg]
		if !ok {
			t.Fatalf("%s missing from the table", pkg)
		}
		if r.permits(forbidden) {
			t.Errorf("the table lets %s import %s", pkg, forbidden)
		}
	}
}
