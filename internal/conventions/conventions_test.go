package conventions

import (
	"bytes"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/doc"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

// pkg is what go list says of a package.
type pkg struct {
	ImportPath     string
	Name           string
	Dir            string
	Doc            string
	GoFiles        []string
	IgnoredGoFiles []string // excluded by build constraints
	TestGoFiles    []string
	XTestGoFiles   []string
	Imports        []string // of the package's own files, not its tests'
}

// listPackages lists the module's packages with go list, which applies
// the build constraints that a walk of the folders would not. The tag
// embedetcd is on, as make test has it for the quota's etcd tests: the
// etcd ledger's example needs the embedded server and runs there.
// The listing is made once for all the tests that read it: each go list
// of the module costs more than the test that reads it.
func listPackages(t *testing.T) []pkg {
	t.Helper()
	pkgs, err := modulePackages()
	if err != nil {
		t.Fatal(err)
	}
	if len(pkgs) < 10 {
		t.Fatalf("go list found %d packages: not the module", len(pkgs))
	}
	return pkgs
}

var modulePackages = sync.OnceValues(func() ([]pkg, error) { return list("github.com/afloat/afloat/...") })

// goList returns what go list says of the packages the patterns name.
func goList(t *testing.T, patterns ...string) []pkg {
	t.Helper()
	pkgs, err := list(patterns...)
	if err != nil {
		t.Fatal(err)
	}
	return pkgs
}

func list(patterns ...string) ([]pkg, error) {
	out, err := exec.Command("go", append([]string{"list", "-tags", "embedetcd", "-json"}, patterns...)...).Output()
	if err != nil {
		return nil, fmt.Errorf("go list: %w", err)
	}
	var pkgs []pkg
	dec := json.NewDecoder(bytes.NewReader(out))
	for dec.More() {
		var p pkg
		if err := dec.Decode(&p); err != nil {
			return nil, fmt.Errorf("go list: %w", err)
		}
		pkgs = append(pkgs, p)
	}
	return pkgs, nil
}

// harnesses are public packages whose every call takes the test's
// testing.TB (they start servers for tests, and skip or fail the test when
// they cannot): an example can show the calls, as assigntest's does, but
// cannot run outside a test. Their own tests and their users' run them.
var harnesses = map[string]bool{
	"github.com/afloat/afloat/assign/assigntest": true,
	"github.com/afloat/afloat/quota/servicetest": true,
}

// testOnly are the packages only tests may import: the harnesses, and
// the helpers the quota's process tests share.
func testOnly(path string) bool {
	return harnesses[path] || path == "github.com/afloat/afloat/quota/internal/opstest"
}

// testOnlyImports lists the imports of test-only packages by packages
// that are not test-only themselves.
func testOnlyImports(pkgs []pkg) []string {
	var bad []string
	for _, p := range pkgs {
		if testOnly(p.ImportPath) {
			continue
		}
		for _, imp := range p.Imports {
			if testOnly(imp) {
				bad = append(bad, p.ImportPath+" imports "+imp)
			}
		}
	}
	return bad
}

// TestHarnessesOnlyInTests: no package's own code imports a harness or
// the tests' helpers (they start servers, and skip or fail the test they
// are given); the check flags a planted import.
func TestHarnessesOnlyInTests(t *testing.T) {
	if bad := testOnlyImports(listPackages(t)); len(bad) > 0 {
		t.Errorf("test-only packages imported by code, %d:\n\t%s", len(bad), strings.Join(bad, "\n\t"))
	}
	planted := []pkg{{ImportPath: "github.com/afloat/afloat/cmd/afloat", Imports: []string{"fmt", "github.com/afloat/afloat/quota/servicetest"}}}
	if bad := testOnlyImports(planted); len(bad) != 1 {
		t.Errorf("a planted import of quota/servicetest: flagged %v, want it", bad)
	}
}

// public reports whether other modules can import the package.
func public(p pkg) bool {
	return p.Name != "main" && !strings.Contains(p.ImportPath+"/", "/internal/")
}

// runnableExamples returns the names of the package's examples that go
// test runs: those with an // Output: comment.
func runnableExamples(t *testing.T, p pkg) []string {
	t.Helper()
	fset := token.NewFileSet()
	var files []*ast.File
	for _, name := range append(p.TestGoFiles, p.XTestGoFiles...) {
		f, err := parser.ParseFile(fset, filepath.Join(p.Dir, name), nil, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	var names []string
	for _, ex := range doc.Examples(files...) {
		if ex.Output != "" || ex.EmptyOutput {
			names = append(names, "Example"+ex.Name)
		}
	}
	return names
}

// TestEveryPackageIsDocumented lists every package with no package
// comment.
func TestEveryPackageIsDocumented(t *testing.T) {
	var missing []string
	for _, p := range listPackages(t) {
		if strings.TrimSpace(p.Doc) == "" {
			missing = append(missing, p.ImportPath)
		}
	}
	if len(missing) > 0 {
		t.Errorf("packages with no package comment, %d (write one in doc.go: what the package is for, with a short usage sketch):\n\t%s",
			len(missing), strings.Join(missing, "\n\t"))
	}
}

// TestEveryPublicPackageHasARunnableExample lists every public package
// with no example that go test runs.
func TestEveryPublicPackageHasARunnableExample(t *testing.T) {
	var missing []string
	checked := 0
	for _, p := range listPackages(t) {
		if !public(p) || harnesses[p.ImportPath] {
			continue
		}
		checked++
		if len(runnableExamples(t, p)) == 0 {
			missing = append(missing, p.ImportPath)
		}
	}
	if checked == 0 {
		t.Fatal("no public package found")
	}
	if len(missing) > 0 {
		t.Errorf("public packages with no runnable example, %d of %d (write an Example function with an // Output: comment in example_test.go):\n\t%s",
			len(missing), checked, strings.Join(missing, "\n\t"))
	}
}

// maxCommandFunc is the most lines a function of a command may span:
// cmd/ parses flags and wires (ARCHITECTURE.md), and a function longer
// than a screen holds logic that belongs in a package.
const maxCommandFunc = 60

// longFuncs returns the functions and function literals of src (a file)
// that span more than max lines, as "file:line name (n lines)".
func longFuncs(t *testing.T, name string, src any, max int) []string {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, name, src, 0)
	if err != nil {
		t.Fatal(err)
	}
	var long []string
	ast.Inspect(f, func(n ast.Node) bool {
		what := "a function literal"
		switch x := n.(type) {
		case *ast.FuncDecl:
			what = x.Name.Name
		case *ast.FuncLit:
		default:
			return true
		}
		start, end := fset.Position(n.Pos()), fset.Position(n.End())
		if lines := end.Line - start.Line + 1; lines > max {
			long = append(long, fmt.Sprintf("%s:%d %s (%d lines)", name, start.Line, what, lines))
		}
		return true
	})
	return long
}

// TestCommandsAreThin lists every function of a command (its tests aside)
// longer than maxCommandFunc lines.
func TestCommandsAreThin(t *testing.T) {
	var long []string
	checked := 0
	for _, p := range listPackages(t) {
		if p.Name != "main" {
			continue
		}
		checked++
		for _, name := range p.GoFiles {
			long = append(long, longFuncs(t, filepath.Join(p.Dir, name), nil, maxCommandFunc)...)
		}
	}
	if checked == 0 {
		t.Fatal("no command found")
	}
	if len(long) > 0 {
		t.Errorf("functions of commands longer than %d lines, %d (move the logic into its package: cmd/ parses flags and wires):\n\t%s",
			maxCommandFunc, len(long), strings.Join(long, "\n\t"))
	}
	// The check counts what it must: a function of max lines passes, one
	// of max+1 does not, nor a literal inside a short one.
	body := func(n int) string { return strings.Repeat("\tx++\n", n-2) }
	src := "package p\n\nfunc fits() {\n" + body(maxCommandFunc) + "}\n\nfunc over() {\n" + body(maxCommandFunc+1) +
		"}\n\nvar f = func() {\n" + body(maxCommandFunc+1) + "}\n"
	got := longFuncs(t, "p.go", src, maxCommandFunc)
	if want := []string{"p.go:64 over (61 lines)", "p.go:126 a function literal (61 lines)"}; !slices.Equal(got, want) {
		t.Errorf("longFuncs found %q; want %q", got, want)
	}
}

// TestExamplesAreFound: the check finds the examples it must, and tells a
// runnable one from one that only compiles, so that it cannot pass by
// finding nothing.
func TestExamplesAreFound(t *testing.T) {
	var heap, assign pkg
	for _, p := range listPackages(t) {
		switch p.ImportPath {
		case "github.com/afloat/afloat/internal/heap":
			heap = p
		case "github.com/afloat/afloat/assign":
			assign = p
		}
	}
	if got := runnableExamples(t, heap); len(got) != 1 || got[0] != "Example" {
		t.Errorf("internal/heap: runnable examples %v, want [Example]", got)
	}
	if public(heap) || !public(assign) {
		t.Errorf("public(internal/heap) = %v, public(assign) = %v; want false, true", public(heap), public(assign))
	}
	dir := t.TempDir()
	src := `package x_test

import "fmt"

func ExampleRuns() {
	fmt.Println("hi")
	// Output: hi
}

func ExampleOnlyCompiles() {
	fmt.Println("no output comment")
}
`
	if err := os.WriteFile(filepath.Join(dir, "x_test.go"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	got := runnableExamples(t, pkg{Dir: dir, XTestGoFiles: []string{"x_test.go"}})
	if len(got) != 1 || got[0] != "ExampleRuns" {
		t.Errorf("runnable examples %v, want [ExampleRuns]", got)
	}
}

// shortSkipped returns the tests in the files that call testing.Short():
// those make test skips (it runs with -short).
func shortSkipped(t *testing.T, dir string, files []string) []string {
	t.Helper()
	fset := token.NewFileSet()
	var names []string
	for _, name := range files {
		f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Recv != nil || !strings.HasPrefix(fn.Name.Name, "Test") || fn.Body == nil {
				continue
			}
			ast.Inspect(fn.Body, func(n ast.Node) bool {
				if sel, ok := n.(*ast.SelectorExpr); ok && sel.Sel.Name == "Short" {
					if id, ok := sel.X.(*ast.Ident); ok && id.Name == "testing" {
						names = append(names, fn.Name.Name)
						return false
					}
				}
				return true
			})
		}
	}
	return names
}

// makeVar returns the value of a variable the Makefile sets with :=,
// with its continuation lines.
func makeVar(t *testing.T, name string) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "..", "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	text := strings.ReplaceAll(string(raw), "\\\n", " ")
	for line := range strings.SplitSeq(text, "\n") {
		if v, ok := strings.CutPrefix(line, name+" := "); ok {
			return v
		}
	}
	t.Fatalf("the Makefile sets no %s", name)
	return ""
}

// TestLongTestsAreRun: every test that skips under -short (make test
// runs with -short) runs in make test-long — by name in LONG_TESTS, or as
// a model's test, all of which make test-long runs again under -race —
// so that no test is left out of both tiers.
func TestLongTestsAreRun(t *testing.T) {
	long := map[string]bool{}
	listed := strings.TrimSuffix(strings.TrimPrefix(makeVar(t, "LONG_TESTS"), "^("), ")$$")
	for name := range strings.SplitSeq(listed, "|") {
		long[name] = true
	}
	models := map[string]bool{}
	for _, p := range strings.Fields(makeVar(t, "NORACE")) {
		models["github.com/afloat/afloat/"+p] = true
	}
	if len(long) < 3 || len(models) < 3 {
		t.Fatalf("LONG_TESTS %v, NORACE %v: the Makefile was not read", long, models)
	}
	found := map[string]bool{}
	for _, p := range listPackages(t) {
		for _, name := range shortSkipped(t, p.Dir, append(p.TestGoFiles, p.XTestGoFiles...)) {
			found[name] = true
			if !models[p.ImportPath] && !long[name] {
				t.Errorf("%s: %s skips under -short but is not in the Makefile's LONG_TESTS: neither tier runs it", p.ImportPath, name)
			}
		}
	}
	for name := range long {
		if !found[name] {
			t.Errorf("LONG_TESTS names %s, which no test skipping under -short is called", name)
		}
	}
}

// TestFuzzTargetsAreRun: make fuzz runs every fuzz target of the module
// in its own package, so that a target that moves with its code keeps
// being fuzzed (three once sat under a package that no longer had them,
// and make fuzz failed on them).
func TestFuzzTargetsAreRun(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "..", "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	makefile := string(raw)
	module := "github.com/afloat/afloat/"
	seen := 0
	for _, p := range listPackages(t) {
		for _, name := range append(p.TestGoFiles, p.XTestGoFiles...) {
			src, err := os.ReadFile(filepath.Join(p.Dir, name))
			if err != nil {
				t.Fatal(err)
			}
			for line := range strings.SplitSeq(string(src), "\n") {
				rest, ok := strings.CutPrefix(line, "func Fuzz")
				if !ok {
					continue
				}
				target := "Fuzz" + rest[:strings.IndexByte(rest, '(')]
				seen++
				want := fmt.Sprintf("./%s -run '^$$' -fuzz '^%s$$'", strings.TrimPrefix(p.ImportPath, module), target)
				if !strings.Contains(makefile, want) {
					t.Errorf("%s: %s is not in make fuzz: want a line with %s", p.ImportPath, target, want)
				}
			}
		}
	}
	if seen < 10 {
		t.Fatalf("found %d fuzz targets: the test files were not read", seen)
	}
}
