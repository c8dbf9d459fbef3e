package doccheck

import (
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// root is the repository's root, relative to this package's directory.
const root = "../.."

// configTable is the page whose table lists every setting.
const configTable = "docs/operating/configuration.md"

// repoURL is how alert rules name a file of this repository.
const repoURL = "https://github.com/furrowhq/furrow/blob/main/"

// pages returns every Markdown file of the repository, relative to root.
func pages(t *testing.T) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && p != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(p, ".md") {
			rel, err := filepath.Rel(root, p)
			if err != nil {
				return err
			}
			out = append(out, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, must := range []string{"README.md", "CONTRIBUTING.md", configTable} {
		if !slices.Contains(out, must) {
			t.Fatalf("found %d pages but not %s: %v", len(out), must, out)
		}
	}
	return out
}

func read(t *testing.T, page string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(page)))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// checkTarget returns why the repository-relative path#anchor does not
// resolve, or "".
func checkTarget(t *testing.T, path, anchor string) string {
	t.Helper()
	if path == ".." || strings.HasPrefix(path, "../") {
		return "leaves the repository"
	}
	info, err := os.Stat(filepath.Join(root, filepath.FromSlash(path)))
	if err != nil {
		return "no such file"
	}
	if anchor == "" {
		return ""
	}
	if info.IsDir() || !strings.HasSuffix(path, ".md") {
		return "names a heading in something that is not a Markdown page"
	}
	if !Anchors(read(t, path))[anchor] {
		return "names a heading the page does not have"
	}
	return ""
}

func TestRelativeLinksResolve(t *testing.T) {
	checked := 0
	for _, page := range pages(t) {
		for _, l := range Links(read(t, page)) {
			if !l.Relative() {
				continue
			}
			path, anchor := l.Split()
			if path == "" {
				path = page
			} else {
				path = filepath.ToSlash(filepath.Clean(filepath.Join(filepath.Dir(page), path)))
			}
			if why := checkTarget(t, path, anchor); why != "" {
				t.Errorf("%s:%d: link %s %s", page, l.Line, l.Target, why)
			}
			checked++
		}
	}
	if checked < 50 {
		t.Errorf("only %d relative links checked: the link reader is broken", checked)
	}
}

// Every page for readers is one click from the README.
func TestEveryPageIsLinkedFromTheReadme(t *testing.T) {
	linked := map[string]bool{}
	for _, l := range Links(read(t, "README.md")) {
		if path, _ := l.Split(); l.Relative() && path != "" {
			linked[filepath.ToSlash(filepath.Clean(path))] = true
		}
	}
	for _, page := range pages(t) {
		if page == "README.md" || !(strings.HasPrefix(page, "docs/") || !strings.Contains(page, "/")) {
			continue
		}
		if !linked[page] {
			t.Errorf("README.md does not link %s", page)
		}
	}
}

func TestConfigurationTableListsEverySetting(t *testing.T) {
	code, err := Settings(filepath.Join(root, "cmd", "furrow"))
	if err != nil {
		t.Fatal(err)
	}
	table := TableSettings(read(t, configTable))
	for name := range code {
		if _, ok := table[name]; !ok {
			t.Errorf("cmd/furrow reads %s but %s's table does not list it", name, configTable)
		}
	}
	for name, line := range table {
		if !code[name] {
			t.Errorf("%s:%d lists %s, which cmd/furrow does not read", configTable, line, name)
		}
	}
}

// alertRules is the part of a Prometheus rule file the runbooks need.
type alertRules struct {
	Groups []struct {
		Rules []struct {
			Alert       string            `yaml:"alert"`
			Annotations map[string]string `yaml:"annotations"`
		} `yaml:"rules"`
	} `yaml:"groups"`
}

// Every alert links its own section of the operators' pages.
func TestEveryAlertHasARunbook(t *testing.T) {
	var rules alertRules
	if err := yaml.Unmarshal(read(t, "deploy/observability/alerts.yaml"), &rules); err != nil {
		t.Fatal(err)
	}
	alerts := 0
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			if r.Alert == "" {
				continue
			}
			alerts++
			url := r.Annotations["runbook_url"]
			rel, ok := strings.CutPrefix(url, repoURL)
			if !ok {
				t.Errorf("alert %s: runbook_url %q is not a page of %s", r.Alert, url, repoURL)
				continue
			}
			path, anchor, _ := strings.Cut(rel, "#")
			if !strings.HasPrefix(path, "docs/operating/") || anchor != Slug(r.Alert) {
				t.Errorf("alert %s: runbook_url %q should name the section %q of a page in docs/operating/", r.Alert, url, r.Alert)
			}
			if why := checkTarget(t, path, anchor); why != "" {
				t.Errorf("alert %s: runbook_url %q %s", r.Alert, url, why)
			}
		}
	}
	if alerts < 7 {
		t.Errorf("only %d alert rules read from alerts.yaml", alerts)
	}
}

// A package that lacks a setting every build has is an error, not a
// short list that the checks would hold the docs and the kit to.
func TestSettingsRefusesABrokenEnumeration(t *testing.T) {
	dir := t.TempDir()
	src := "package main\n\nconst addr = \"FURROW_TEMPORAL_ADDRESS\"\n"
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	if got, err := Settings(dir); err == nil {
		t.Fatalf("Settings of a package without FURROW_DATABASE_URL = %v, want an error", got)
	}
	if _, err := Settings(filepath.Join(dir, "missing")); err == nil {
		t.Fatal("Settings of a missing directory gave no error")
	}
}
