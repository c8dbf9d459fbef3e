// Package doccheck reads Furrow's Markdown documentation and deploy kit so
// that tests can hold them to the repository: the relative links of every
// page and the headings they name, and the configuration table and the
// kit's environments against the settings the binary reads.
package doccheck

import (
	"bufio"
	"bytes"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"unicode"
)

// Link is one inline Markdown link of a page.
type Link struct {
	Line   int    // 1-based line of the page
	Target string // as written: path, path#heading or #heading
}

// Relative reports whether l points inside the repository rather than at a
// URL with a scheme.
func (l Link) Relative() bool {
	return !scheme.MatchString(l.Target)
}

// Split returns l's path (empty for the page itself) and heading anchor.
func (l Link) Split() (path, anchor string) {
	path, anchor, _ = strings.Cut(l.Target, "#")
	return path, anchor
}

var (
	scheme   = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+.-]*:`)
	link     = regexp.MustCompile(`\]\(([^()\s]+)(?:\s+"[^"]*")?\)`)
	codeSpan = regexp.MustCompile("`+[^`]*`+")
	heading  = regexp.MustCompile(`^(#{1,6})\s+(.*?)\s*#*\s*$`)
	// inlineLink is a link inside a heading's text, whose text alone counts.
	inlineLink = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`)
)

// lines calls f with each line of md outside fenced code blocks.
func lines(md []byte, f func(n int, line string)) {
	sc := bufio.NewScanner(bytes.NewReader(md))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	var fence string
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		trimmed := strings.TrimSpace(line)
		if fence != "" {
			if strings.HasPrefix(trimmed, fence) {
				fence = ""
			}
			continue
		}
		if strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~") {
			fence = trimmed[:3]
			continue
		}
		f(n, line)
	}
}

// Links returns the inline links of md, outside code blocks and code spans.
func Links(md []byte) []Link {
	var out []Link
	lines(md, func(n int, line string) {
		// A code span in a link's text keeps the link; one holding a
		// whole link is an example, not a link.
		line = codeSpan.ReplaceAllString(line, "")
		for _, m := range link.FindAllStringSubmatch(line, -1) {
			out = append(out, Link{Line: n, Target: m[1]})
		}
	})
	return out
}

// Anchors returns the anchors GitHub gives md's headings: lower case,
// punctuation dropped, spaces as hyphens, and -1, -2 … after repeats.
func Anchors(md []byte) map[string]bool {
	out := map[string]bool{}
	seen := map[string]int{}
	lines(md, func(_ int, line string) {
		m := heading.FindStringSubmatch(line)
		if m == nil {
			return
		}
		a := Slug(m[2])
		if k := seen[a]; k > 0 {
			out[fmt.Sprintf("%s-%d", a, k)] = true
		} else {
			out[a] = true
		}
		seen[a]++
	})
	return out
}

// Slug is the anchor of a heading's text.
func Slug(text string) string {
	text = inlineLink.ReplaceAllString(text, "$1")
	var b strings.Builder
	for _, r := range strings.ToLower(text) {
		switch {
		case unicode.IsLetter(r), unicode.IsDigit(r), r == '-', r == '_':
			b.WriteRune(r)
		case r == ' ':
			b.WriteRune('-')
		}
	}
	return b.String()
}

// settingCell matches a setting's name in a table cell.
var settingCell = regexp.MustCompile("`(FURROW_[A-Z0-9_]+)`")

// TableSettings returns the FURROW_* names in the first column of md's
// tables, with the line of each.
func TableSettings(md []byte) map[string]int {
	out := map[string]int{}
	lines(md, func(n int, line string) {
		if !strings.HasPrefix(strings.TrimSpace(line), "|") {
			return
		}
		cells := strings.Split(strings.TrimSpace(line), "|")
		if len(cells) < 3 {
			return
		}
		for _, m := range settingCell.FindAllStringSubmatch(cells[1], -1) {
			out[m[1]] = n
		}
	})
	return out
}

// settingName is what a Furrow setting looks like.
var settingName = regexp.MustCompile(`^FURROW_[A-Z0-9_]+$`)

// Settings returns every FURROW_* variable the Go package in dir reads
// (cmd/furrow): the string literals of its non-test sources that are whole
// setting names, as each is handed to getenv. It fails when the sources
// cannot be read or when a setting every build has is not among them, so
// that a broken enumeration never passes for an empty one.
func Settings(dir string) (map[string]bool, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil || len(files) == 0 {
		return nil, fmt.Errorf("doccheck: no Go sources in %s (%v)", dir, err)
	}
	fset := token.NewFileSet()
	out := map[string]bool{}
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		if err != nil {
			return nil, fmt.Errorf("doccheck: %w", err)
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
	for _, must := range []string{"FURROW_DATABASE_URL", "FURROW_TEMPORAL_ADDRESS", "FURROW_REQUEST_TIMEOUT", "FURROW_TRUSTED_PROXIES"} {
		if !out[must] {
			return nil, fmt.Errorf("doccheck: found %d settings in %s but not %s: the enumeration is broken", len(out), dir, must)
		}
	}
	return out, nil
}
