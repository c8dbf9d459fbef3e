package webhook

import (
	"go/ast"
	"go/build"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// constantTime are the comparisons that take the same time whatever the
// bytes compared.
var constantTime = map[string]bool{"crypto/hmac.Equal": true, "crypto/subtle.ConstantTimeCompare": true}

// variableTime are the comparisons that stop at the first byte that
// differs, and so tell an attacker how much of a forged signature is right.
var variableTime = map[string]bool{
	"bytes.Equal": true, "bytes.Compare": true, "strings.Compare": true, "strings.EqualFold": true,
	"reflect.DeepEqual": true, "slices.Equal": true, "slices.Compare": true,
}

// TestSignaturesComparedInConstantTime holds the package to SPEC's rule
// that the expected and received v1 are compared in constant time: every
// exported Verify function reaches hmac.Equal or
// subtle.ConstantTimeCompare, and no code of the package compares bytes
// or text with == or != (but to a constant, such as a header's part name)
// or with a variable-time function.
func TestSignaturesComparedInConstantTime(t *testing.T) {
	fset, files, info := typeCheck(t)
	funcs := map[types.Object]*ast.FuncDecl{}
	for _, f := range files {
		for _, d := range f.Decls {
			if fd, ok := d.(*ast.FuncDecl); ok {
				funcs[info.Defs[fd.Name]] = fd
			}
		}
	}
	var roots []types.Object
	for obj, fd := range funcs {
		if fd.Name.IsExported() && strings.HasPrefix(fd.Name.Name, "Verify") {
			roots = append(roots, obj)
		}
	}
	if len(roots) < 2 {
		t.Fatalf("found %d exported Verify functions: the test reads the wrong package", len(roots))
	}
	for _, root := range roots {
		if !reaches(root, funcs, info) {
			t.Errorf("%s compares signatures without hmac.Equal or subtle.ConstantTimeCompare", root.Name())
		}
	}
	for _, f := range files {
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.BinaryExpr:
				if (n.Op == token.EQL || n.Op == token.NEQ) && comparesBytes(info, n.X) && comparesBytes(info, n.Y) {
					t.Errorf("%s: %s compares bytes or text in variable time; use hmac.Equal", fset.Position(n.Pos()), n.Op)
				}
			case *ast.CallExpr:
				if name := calleeName(info, n); variableTime[name] {
					t.Errorf("%s: %s compares in variable time; use hmac.Equal", fset.Position(n.Pos()), name)
				}
			}
			return true
		})
	}
}

// typeCheck parses and type-checks the package's own files, tests left
// out.
func typeCheck(t *testing.T) (*token.FileSet, []*ast.File, *types.Info) {
	t.Helper()
	p, err := build.ImportDir(".", 0)
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	var files []*ast.File
	for _, name := range p.GoFiles {
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	info := &types.Info{Types: map[ast.Expr]types.TypeAndValue{}, Defs: map[*ast.Ident]types.Object{}, Uses: map[*ast.Ident]types.Object{}}
	conf := types.Config{Importer: importer.Default()}
	if _, err := conf.Check(selfPath, fset, files, info); err != nil {
		t.Fatal(err)
	}
	return fset, files, info
}

// reaches reports whether the function root calls, itself or through
// functions of the package, a constant-time comparison.
func reaches(root types.Object, funcs map[types.Object]*ast.FuncDecl, info *types.Info) bool {
	seen := map[types.Object]bool{root: true}
	for queue := []types.Object{root}; len(queue) > 0; queue = queue[1:] {
		fd := funcs[queue[0]]
		if fd == nil || fd.Body == nil {
			continue
		}
		found := false
		ast.Inspect(fd.Body, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok || found {
				return !found
			}
			if constantTime[calleeName(info, call)] {
				found = true
			} else if obj := callee(info, call); obj != nil && funcs[obj] != nil && !seen[obj] {
				seen[obj] = true
				queue = append(queue, obj)
			}
			return true
		})
		if found {
			return true
		}
	}
	return false
}

// callee returns the function or method call calls, nil for another call
// (a conversion, a function value).
func callee(info *types.Info, call *ast.CallExpr) types.Object {
	var id *ast.Ident
	switch fn := ast.Unparen(call.Fun).(type) {
	case *ast.Ident:
		id = fn
	case *ast.SelectorExpr:
		id = fn.Sel
	default:
		return nil
	}
	if f, ok := info.Uses[id].(*types.Func); ok {
		return f.Origin()
	}
	return nil
}

// calleeName is "pkgpath.Name" of a package-level function call calls, ""
// otherwise.
func calleeName(info *types.Info, call *ast.CallExpr) string {
	f, ok := callee(info, call).(*types.Func)
	if !ok || f.Pkg() == nil || f.Type().(*types.Signature).Recv() != nil {
		return ""
	}
	return f.Pkg().Path() + "." + f.Name()
}

// comparesBytes reports whether e is a value, not a constant, of text or
// bytes: a string or an array of bytes.
func comparesBytes(info *types.Info, e ast.Expr) bool {
	tv, ok := info.Types[e]
	if !ok || tv.Value != nil {
		return false
	}
	switch u := tv.Type.Underlying().(type) {
	case *types.Basic:
		return u.Info()&types.IsString != 0
	case *types.Array:
		b, ok := u.Elem().Underlying().(*types.Basic)
		return ok && (b.Kind() == types.Byte || b.Kind() == types.Uint8)
	}
	return false
}

// The Python example receiver compares with hmac.compare_digest too: its
// verify functions call it, and never compare a digest with ==, != or in.
func TestPythonReceiverComparesInConstantTime(t *testing.T) {
	src, err := os.ReadFile(filepath.Join("..", "examples", "receiver-python", "receiver.py"))
	if err != nil {
		t.Fatal(err)
	}
	defs := regexp.MustCompile(`(?m)^def `).Split(string(src), -1)
	digestName := regexp.MustCompile(`(?m)^\s*(\w+)\s*=\s*\[?\s*hmac\.new\(`)
	verifiers := 0
	for _, def := range defs {
		name, _, _ := strings.Cut(def, "(")
		if !strings.HasPrefix(name, "verify") {
			continue
		}
		verifiers++
		if !strings.Contains(def, "hmac.compare_digest(") {
			t.Errorf("receiver.py: %s does not compare with hmac.compare_digest", name)
		}
		digests := []string{`\.(hex)?digest\(\)`}
		for _, m := range digestName.FindAllStringSubmatch(def, -1) {
			digests = append(digests, `\b`+m[1]+`\b`)
		}
		compared := regexp.MustCompile(`(` + strings.Join(digests, "|") + `)\s*(==|!=|(not\s+)?in\b)|(==|!=|\bin)\s*(` + strings.Join(digests, "|") + `)`)
		for _, line := range strings.Split(def, "\n") {
			if code := strings.TrimSpace(line); !strings.HasPrefix(code, "for ") && !strings.HasPrefix(code, "#") && compared.MatchString(code) {
				t.Errorf("receiver.py: %s compares a digest in variable time: %s", name, code)
			}
		}
	}
	if verifiers < 2 {
		t.Fatalf("receiver.py: found %d verify functions, want the v1 and the Standard Webhooks verifiers", verifiers)
	}
}
