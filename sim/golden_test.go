package sim

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

type goldenCase struct {
	name string
	cfg  Config
}

// goldenCases is every scenario with noise off and on, two seeds, with and
// without its action file in testdata/actions.
func goldenCases(t testing.TB) []goldenCase {
	t.Helper()
	scripts := map[string]string{
		"steady":      "steady-levers",
		"bad-deploy":  "bad-deploy-rollback",
		"surge":       "surge-prepare",
		"cache-flush": "cache-flush-recover",
		"mystery":     "mystery-respond",
	}
	var cases []goldenCase
	for _, name := range ScenarioNames() {
		script := scripts[name]
		raw, err := os.ReadFile(filepath.Join("testdata", "actions", script+".jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		actions, err := ParseActions(bytes.NewReader(raw), 0)
		if err != nil {
			t.Fatalf("%s: %v", script, err)
		}
		for _, v := range []struct {
			seed    uint32
			noise   bool
			actions []Action
			suffix  string
		}{
			{1, false, nil, ""},
			{7, true, nil, ""},
			{1, false, actions, "-" + script},
			{7, true, actions, "-" + script},
		} {
			mode := "quiet"
			if v.noise {
				mode = "noise"
			}
			cases = append(cases, goldenCase{
				name: fmt.Sprintf("%s-seed%d-%s%s", name, v.seed, mode, strings.TrimPrefix(v.suffix, "-"+name)),
				cfg:  Config{Scenario: name, Seed: v.seed, Noise: v.noise, Actions: v.actions},
			})
		}
	}
	return cases
}

// TestGolden compares every golden case's jsonl output with the file
// stored in testdata/golden; go test ./sim -run Golden -update rewrites
// them. The runs are pure, so any difference is a change to the model.
func TestGolden(t *testing.T) {
	for _, c := range goldenCases(t) {
		t.Run(c.name, func(t *testing.T) {
			var got bytes.Buffer
			if err := WriteFrames(&got, mustRun(t, c.cfg), FormatJSONL); err != nil {
				t.Fatal(err)
			}
			checkGolden(t, c.name+".jsonl", got.Bytes())
		})
	}
	// The other two formats, once each.
	frames := mustRun(t, Config{Scenario: "bad-deploy", Seed: 7, Noise: true, Minutes: 40})
	for _, format := range []Format{FormatCSV, FormatTable} {
		var got bytes.Buffer
		if err := WriteFrames(&got, frames, format); err != nil {
			t.Fatal(err)
		}
		checkGolden(t, "bad-deploy-seed7-noise-40min."+string(format), got.Bytes())
	}
}

func checkGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", "golden", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./sim -run Golden -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		gl, wl := strings.Split(string(got), "\n"), strings.Split(string(want), "\n")
		for i := 0; i < len(gl) && i < len(wl); i++ {
			if gl[i] != wl[i] {
				t.Fatalf("%s differs at line %d:\n got %s\nwant %s", path, i+1, gl[i], wl[i])
			}
		}
		t.Fatalf("%s: %d lines, want %d", path, len(gl), len(wl))
	}
}
