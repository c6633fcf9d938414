package conventions

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// wallClock are the functions of package time that read or wait on the
// machine's clock. A model takes its time as a parameter; time.Time,
// time.Duration and their methods are arithmetic and stay allowed.
var wallClock = map[string]bool{
	"Now": true, "Since": true, "Until": true, "Sleep": true, "After": true, "AfterFunc": true,
	"Tick": true, "NewTimer": true, "NewTicker": true,
}

// seededRand are the names of math/rand and math/rand/v2 that build a
// generator from a seed the caller gives (or name its types); every other
// name of theirs is a function on the global source.
var seededRand = map[string]bool{
	"New": true, "NewSource": true, "NewPCG": true, "NewChaCha8": true, "NewZipf": true,
	"Rand": true, "Source": true, "Source64": true, "PCG": true, "ChaCha8": true, "Zipf": true,
}

// thinRunners are the files of bounded packages that may read the wall
// clock or draw global randomness, each with the reason: the thin runners
// and real-time defaults beside a pure core (STYLE.md, "Pure core, thin
// runner"). Keep it short; a file here is a file a reviewer reads.
var thinRunners = map[string]string{
	"bulkhead/clock.go":                "the real Clock, the default (WithClock passes a virtual one), and the monotonic reading of the adaptive path",
	"quota/chaos/run.go":               "RunMany runs a sweep of seeds on goroutines and reports its wall time (Many.Elapsed)",
	"quota/coordinator/incarnation.go": "the Server's Attach draws an incarnation (crypto/rand) and stamps when it attached",
	"quota/coordinator/server.go":      "Server, the runner that drives the Core on the machine's clock",
	"quota/eventlog/file.go":           "File, a process's log: its flush ticker and the time of its stop event",
	"quota/region/limiter.go":          "Allow and Now read the monotonic clock: shorthand for AllowAt, as x/time/rate's Allow is for AllowN",
	"quota/region/run.go":              "Run, the renewal loop that drives the limiter on the machine's clock",
	"quota/region/wait.go":             "Wait sleeps between decisions on the machine's clock: a runner over Decide, as x/time/rate's Wait is over Reserve",
}

// TestBoundariesInSource: the models and pure cores (the Makefile's
// BOUNDED, whose imports make boundaries checks) neither read the wall
// clock nor draw from a global random source in their non-test code,
// outside the thin runners listed above.
func TestBoundariesInSource(t *testing.T) {
	root := filepath.Join("..", "..")
	var patterns []string
	for _, dir := range strings.Fields(makeVar(t, "BOUNDED")) {
		if _, err := os.Stat(filepath.Join(root, dir)); err == nil { // one may not exist yet
			patterns = append(patterns, "github.com/afloat/afloat/"+dir)
		}
	}
	if len(patterns) < 10 {
		t.Fatalf("BOUNDED names %d packages that exist: the Makefile was not read", len(patterns))
	}
	used := map[string]bool{}
	for _, p := range goList(t, patterns...) {
		rel := strings.TrimPrefix(p.ImportPath, "github.com/afloat/afloat/")
		for _, name := range slices.Concat(p.GoFiles, p.IgnoredGoFiles) {
			if strings.HasSuffix(name, "_test.go") || !strings.HasSuffix(name, ".go") {
				continue
			}
			file := rel + "/" + name
			found := forbiddenCalls(t, filepath.Join(p.Dir, name))
			if _, ok := thinRunners[file]; ok {
				used[file] = len(found) > 0
				continue
			}
			for _, f := range found {
				t.Errorf("%s:%s (a model or pure core): take time and randomness as parameters, or move the code to a thin runner", file, f)
			}
		}
	}
	for file := range thinRunners {
		if !used[file] {
			t.Errorf("thinRunners lists %s, which reads no wall clock and draws no global randomness (or does not exist): take it off", file)
		}
	}
}

// forbiddenCalls returns the wall-clock reads and global random draws of
// a Go file, as "line: what".
func forbiddenCalls(t *testing.T, path string) []string {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	var found []string
	report := func(pos token.Pos, what string) {
		found = append(found, fmt.Sprintf("%d: %s", fset.Position(pos).Line, what))
	}
	names := map[string]string{} // local name → time, math/rand, math/rand/v2 or crypto/rand
	for _, imp := range f.Imports {
		path, _ := strconv.Unquote(imp.Path.Value)
		switch path {
		case "time", "math/rand", "math/rand/v2", "crypto/rand":
		default:
			continue
		}
		name := filepath.Base(strings.TrimSuffix(path, "/v2"))
		if imp.Name != nil {
			name = imp.Name.Name
		}
		switch name {
		case "_":
			if path == "crypto/rand" {
				report(imp.Pos(), "imports crypto/rand")
			}
			continue
		case ".":
			report(imp.Pos(), "imports "+path+" with a dot: its functions cannot be checked")
			continue
		}
		if path == "crypto/rand" {
			report(imp.Pos(), "imports crypto/rand, a global random source")
			continue
		}
		names[name] = path
	}
	ast.Inspect(f, func(n ast.Node) bool {
		sel, ok := n.(*ast.SelectorExpr)
		if !ok {
			return true
		}
		id, ok := sel.X.(*ast.Ident)
		if !ok {
			return true
		}
		switch path := names[id.Name]; {
		case path == "time" && wallClock[sel.Sel.Name]:
			report(sel.Pos(), "time."+sel.Sel.Name+" uses the wall clock")
		case (path == "math/rand" || path == "math/rand/v2") && !seededRand[sel.Sel.Name]:
			report(sel.Pos(), path+"."+sel.Sel.Name+" draws from the global source")
		}
		return true
	})
	return found
}
