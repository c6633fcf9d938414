package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/afloat/afloat/overload"
)

// TestLabOverload: the command prints the package's run, series and
// summary, in each format.
func TestLabOverload(t *testing.T) {
	r, err := overload.Run(overload.Config{Profile: "game2", Inside: 2, Outside: 2, Seed: 1, Alpha: 0})
	if err != nil {
		t.Fatal(err)
	}
	for _, format := range []string{"table", "csv", "jsonl"} {
		var want bytes.Buffer
		if err := overload.WriteRun(&want, r, format); err != nil {
			t.Fatal(err)
		}
		status, out, errOut := call(t, "", "lab", "overload", "--profile", "game2", "--inside", "2", "--outside", "2", "--format", format)
		if status != 0 || out != want.String() {
			t.Errorf("%s: status %d, stderr %q, output differs from the package's:\n%s", format, status, errOut, out)
		}
		if format == "csv" && !strings.HasPrefix(errOut, "summary 2/2: goodput 65.0 %") {
			t.Errorf("csv: the summary on stderr is %q", errOut)
		}
	}
	status, out, _ := call(t, "", "lab", "overload", "--profile", "game1", "--compare")
	if status != 0 || !strings.Contains(out, "no limit") || !strings.Contains(out, "100/1000") || !strings.Contains(out, "adaptive") {
		t.Errorf("--compare: status %d, output %q", status, out)
	}
}

func TestLabAndBenchUsageErrors(t *testing.T) {
	for i, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"lab"}, []string{"missing lab"}},
		{[]string{"lab", "underload"}, []string{`unknown lab "underload"`}},
		{[]string{"lab", "overload", "--profile", "olympics"}, []string{`profile "olympics"`, "want one of worldcup"}},
		{[]string{"lab", "overload", "--format", "xml"}, []string{`--format "xml"`, "table, csv or jsonl"}},
		{[]string{"lab", "overload", "--inside", "-1"}, []string{"inside"}},
		{[]string{"lab", "overload", "--inside", "10", "--outside", "-5"}, []string{"outside"}},
		{[]string{"lab", "overload", "--alpha", "1000"}, []string{"alpha"}},
		{[]string{"lab", "overload", "--timeout", "-1"}, []string{"timeout"}},
		{[]string{"lab", "overload", "--duration", "1e12"}, []string{"duration"}},
		{[]string{"lab", "overload", "--seed", "-1"}, []string{"-seed", "from 0 to 4294967295"}},
		{[]string{"lab", "overload", "--adaptive"}, []string{"adaptive"}},
		{[]string{"lab", "overload", "extra"}, []string{`unexpected argument "extra"`}},
		{[]string{"bench"}, []string{"missing benchmark"}},
		{[]string{"bench", "redis"}, []string{`unknown benchmark "redis"`}},
		{[]string{"bench", "bulkhead", "--work", "1ns"}, []string{"work 1ns", "want 100µs to 1s"}},
		{[]string{"bench", "bulkhead", "--deadline", "1ms"}, []string{"deadline 1ms", "want the work"}},
		{[]string{"bench", "bulkhead", "--modes", "none,sleep"}, []string{`mode "sleep"`, "afloat-fixed"}},
		{[]string{"bench", "bulkhead", "--modes", ""}, []string{`mode ""`}},
		{[]string{"bench", "bulkhead", "--soak", "1s", "--soak-load", "0"}, []string{"soak at 0 × capacity", "above 0 and at most 100"}},
		{[]string{"bench", "bulkhead", "--soak", "1s", "--soak-mode", "prayer"}, []string{`mode "prayer"`}},
		{[]string{"bench", "bulkhead", "--soak", "1s", "--soak-every", "-1s"}, []string{"positive durations"}},
	} {
		status, out, errOut := call(t, "", tc.args...)
		if status != 2 || out != "" {
			t.Errorf("step %d: afloat %v: status %d, stdout %q; want 2 and nothing printed", i, tc.args, status, out)
		}
		for _, w := range tc.want {
			if !strings.Contains(errOut, w) {
				t.Errorf("step %d: afloat %v: stderr %q does not mention %q", i, tc.args, errOut, w)
			}
		}
	}
}
