package conventions

import (
	"bytes"
	"encoding/json"
	"go/ast"
	"go/doc"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// pkg is what go list says of a package.
type pkg struct {
	ImportPath   string
	Name         string
	Dir          string
	Doc          string
	TestGoFiles  []string
	XTestGoFiles []string
}

// listPackages lists the module's packages with go list, which applies
// the build constraints that a walk of the folders would not. The tag
// embedetcd is on, as make test has it for the quota's etcd tests: the
// etcd ledger's example needs the embedded server and runs there.
func listPackages(t *testing.T) []pkg {
	t.Helper()
	out, err := exec.Command("go", "list", "-tags", "embedetcd", "-json", "github.com/afloat/afloat/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	var pkgs []pkg
	dec := json.NewDecoder(bytes.NewReader(out))
	for dec.More() {
		var p pkg
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		pkgs = append(pkgs, p)
	}
	if len(pkgs) < 10 {
		t.Fatalf("go list found %d packages: not the module", len(pkgs))
	}
	return pkgs
}

// harnesses are public packages whose every call takes the test's
// testing.TB (they start servers for tests, and skip or fail the test when
// they cannot): an example can show the calls, as assigntest's does, but
// cannot run outside a test. Their own tests and their users' run them.
var harnesses = map[string]bool{
	"github.com/afloat/afloat/assign/assigntest": true,
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
