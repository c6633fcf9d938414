package conventions

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The command's budget (STYLE.md, "cmd/ only wires"): the main package
// of cmd/afloat under maxCommandLines non-test lines, and no function of
// cmd/ over maxFunctionLines — what grows past either belongs in a package
// of its own.
const (
	maxCommandLines  = 1200
	maxFunctionLines = 60
)

// TestCommandIsThin: cmd/afloat's main package stays under its line
// budget, and no function anywhere under cmd/ is longer than
// maxFunctionLines, counted from its signature to its closing brace.
func TestCommandIsThin(t *testing.T) {
	root := filepath.Join("..", "..", "cmd")
	main := filepath.Join(root, "afloat")
	lines, funcs := 0, 0
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if filepath.Dir(path) == main {
			lines += strings.Count(string(src), "\n")
		}
		f, err := parser.ParseFile(fset, path, src, 0)
		if err != nil {
			return err
		}
		for _, decl := range f.Decls {
			fd, ok := decl.(*ast.FuncDecl)
			if !ok || fd.Body == nil {
				continue
			}
			funcs++
			if n := fset.Position(fd.End()).Line - fset.Position(fd.Pos()).Line + 1; n > maxFunctionLines {
				t.Errorf("%s: %s is %d lines: want at most %d (move the work into a package, or split it)", fset.Position(fd.Pos()), fd.Name.Name, n, maxFunctionLines)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if funcs < 50 {
		t.Fatalf("%d functions under cmd/: the command was not read", funcs)
	}
	if lines >= maxCommandLines {
		t.Errorf("cmd/afloat's main package has %d non-test lines: want under %d — cmd/ only wires; move the work into a package", lines, maxCommandLines)
	}
	t.Logf("cmd/afloat: %d non-test lines; %d functions under cmd/", lines, funcs)
}
