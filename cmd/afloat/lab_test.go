package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/afloat/afloat/overload"
)

// TestLabOverload: the command prints the package's run, series and
// summary, in each format; its comparison; and the games' grids.
func TestLabOverload(t *testing.T) {
	r, err := overload.Run(overload.Config{Profile: "database", Inside: 20, Outside: 20, Seed: 1, Duration: 30, Retries: overload.NoRetries})
	if err != nil {
		t.Fatal(err)
	}
	for _, format := range []string{"table", "csv", "jsonl"} {
		var want bytes.Buffer
		if err := overload.WriteRun(&want, r, format); err != nil {
			t.Fatal(err)
		}
		status, out, errOut := call(t, "", "lab", "overload", "--profile", "database", "--inside", "20", "--outside", "20", "--duration", "30", "--retries", "0", "--format", format)
		if status != 0 || out != want.String() {
			t.Errorf("%s: status %d, stderr %q, output differs from the package's:\n%s", format, status, errOut, out)
		}
		if format == "csv" && errOut != overload.SummaryLine(r.Summary)+"\n" {
			t.Errorf("csv: the summary on stderr is %q", errOut)
		}
	}
	status, out, _ := call(t, "", "lab", "overload", "--profile", "database", "--duration", "60", "--compare")
	if status != 0 || !strings.Contains(out, "no limit") || !strings.Contains(out, "20 threads") || !strings.Contains(out, "20/20") {
		t.Errorf("--compare: status %d, output %q", status, out)
	}
	g, err := overload.PlayGame("game2", 9)
	if err != nil {
		t.Fatal(err)
	}
	var want bytes.Buffer
	overload.WriteGame(&want, g)
	if status, out, errOut := call(t, "", "lab", "overload", "--game", "game2", "--periods", "9"); status != 0 || out != want.String() || !strings.Contains(out, "away") {
		t.Errorf("--game game2: status %d, stderr %q, output\n%s", status, errOut, out)
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
		{[]string{"lab", "overload", "--format", "xml"}, []string{`format "xml": want table, csv or jsonl`}},
		{[]string{"lab", "overload", "--inside", "-1"}, []string{"inside"}},
		{[]string{"lab", "overload", "--inside", "10", "--outside", "-5"}, []string{"outside"}},
		{[]string{"lab", "overload", "--alpha", "1000"}, []string{"alpha"}},
		{[]string{"lab", "overload", "--timeout", "-1"}, []string{"timeout"}},
		{[]string{"lab", "overload", "--duration", "1e12"}, []string{"duration"}},
		{[]string{"lab", "overload", "--seed", "-1"}, []string{"-seed", "from 0 to 4294967295"}},
		{[]string{"lab", "overload", "--adaptive"}, []string{"adaptive"}},
		{[]string{"lab", "overload", "--alpha", "NaN"}, []string{"alpha NaN", "want 0 (linear) to 100"}},
		{[]string{"lab", "overload", "--retries", "11"}, []string{"retries 11: want 0 (none) to 10"}},
		{[]string{"lab", "overload", "--retries", "-1"}, []string{"retries -1: want 0 (none) to 10"}},
		{[]string{"lab", "overload", "--timeout", "0"}, []string{"--timeout 0", "leave it out"}},
		{[]string{"lab", "overload", "--max-patience", "0"}, []string{"--max-patience 0", "leave it out"}},
		{[]string{"lab", "overload", "--max-patience", "5"}, []string{"max patience 5 s", "want the timeout (10 s) to 86400"}},
		{[]string{"lab", "overload", "--timeout", "60", "--max-patience", "30"}, []string{"max patience 30 s", "want the timeout (60 s)"}},
		{[]string{"lab", "overload", "--max-patience", "1e9"}, []string{"max patience 1e+09 s"}},
		{[]string{"lab", "overload", "--game", "game1", "--max-patience", "60"}, []string{"--max-patience does not go with --game"}},
		{[]string{"lab", "overload", "--threads", "20", "--inside", "5"}, []string{"a thread pool or a bulkhead"}},
		{[]string{"lab", "overload", "--compare", "--adaptive", "--inside", "5"}, []string{"leave threads and adaptive out"}},
		{[]string{"lab", "overload", "--compare", "--format", "csv"}, []string{"--format does not go with --compare"}},
		{[]string{"lab", "overload", "--game", "game3"}, []string{`game "game3"`, "game1, game2"}},
		{[]string{"lab", "overload", "--game", "game1", "--periods", "0"}, []string{"periods 0", "want 1 to 60"}},
		{[]string{"lab", "overload", "--game", "game1", "--inside", "2"}, []string{"--inside does not go with --game"}},
		{[]string{"lab", "overload", "--periods", "5"}, []string{"--periods only with --game"}},
		{[]string{"lab", "overload", "extra"}, []string{`unexpected argument "extra"`}},
		{[]string{"bench"}, []string{"missing benchmark"}},
		{[]string{"bench", "redis"}, []string{`unknown benchmark "redis"`}},
		{[]string{"bench", "bulkhead", "--work", "1ns"}, []string{"work 1ns", "want 100µs to 1s"}},
		{[]string{"bench", "bulkhead", "--deadline", "1ms"}, []string{"deadline 1ms", "want the work"}},
		{[]string{"bench", "bulkhead", "--modes", "none,sleep"}, []string{`mode "sleep"`, "afloat-fixed"}},
		{[]string{"bench", "bulkhead", "--modes", ""}, []string{`mode ""`}},
		{[]string{"bench", "bulkhead", "--soak", "1m", "--soak-load", "0"}, []string{"soak load 0 × capacity: want above 0 and at most 100"}},
		{[]string{"bench", "bulkhead", "--soak", "1m", "--soak-mode", "prayer"}, []string{`soak mode "prayer"`, "afloat-adaptive"}},
		{[]string{"bench", "bulkhead", "--soak", "1m", "--soak-every", "-1s"}, []string{"soak interval -1s: want 1s to 1h0m0s"}},
		// Each flag's zero, negative, NaN or too short a value is refused
		// with its range, before anything runs.
		{[]string{"bench", "bulkhead", "--soak", "0s"}, []string{"soak duration 0s: want 40s (4 × the interval) to 24h0m0s"}},
		{[]string{"bench", "bulkhead", "--soak", "-1s"}, []string{"soak duration -1s: want 40s (4 × the interval) to 24h0m0s"}},
		{[]string{"bench", "bulkhead", "--soak", "1ns"}, []string{"soak duration 1ns: want 40s (4 × the interval) to 24h0m0s"}},
		{[]string{"bench", "bulkhead", "--soak", "39s"}, []string{"soak duration 39s: want 40s"}},
		{[]string{"bench", "bulkhead", "--soak", "1m", "--soak-every", "20s"}, []string{"soak duration 1m0s: want 1m20s (4 × the interval) to 24h0m0s"}},
		{[]string{"bench", "bulkhead", "--soak", "25h"}, []string{"soak duration 25h0m0s", "to 24h0m0s"}},
		{[]string{"bench", "bulkhead", "--soak", "1m", "--soak-every", "0s"}, []string{"soak interval 0s: want 1s to 1h0m0s"}},
		{[]string{"bench", "bulkhead", "--soak", "1m", "--soak-load", "NaN"}, []string{"soak load NaN × capacity: want above 0 and at most 100"}},
		{[]string{"bench", "bulkhead", "--soak", "1m", "--soak-load", "+Inf"}, []string{"soak load +Inf × capacity: want above 0 and at most 100"}},
		{[]string{"bench", "bulkhead", "--soak", "1m", "--soak-load", "-3"}, []string{"soak load -3 × capacity: want above 0 and at most 100"}},
		{[]string{"bench", "bulkhead", "--work", "0s"}, []string{"--work 0s: want more than 0; leave it out for the default"}},
		{[]string{"bench", "bulkhead", "--work", "-1ms"}, []string{"work -1ms: want 100µs to 1s"}},
		{[]string{"bench", "bulkhead", "--deadline", "0s"}, []string{"--deadline 0s: want more than 0; leave it out for the default"}},
		// Flags of the soak without --soak, and of the comparison with it,
		// would be ignored: refused.
		{[]string{"bench", "bulkhead", "--soak-load", "5"}, []string{"--soak-load", "only with --soak"}},
		{[]string{"bench", "bulkhead", "--soak-every", "1s"}, []string{"--soak-every", "only with --soak"}},
		{[]string{"bench", "bulkhead", "--soak", "1m", "--work", "1ms"}, []string{"--work does not go with --soak"}},
		{[]string{"bench", "bulkhead", "--soak", "1m", "--short"}, []string{"--short does not go with --soak"}},
	} {
		status, out, errOut := call(t, "", tc.args...)
		if status != 2 || out != "" {
			t.Errorf("step %d: afloat %v: status %d, stdout %q; want 2 and nothing printed", i, tc.args, status, out)
		}
		if usage := "Run 'afloat " + strings.Join(tc.args[:min(2, len(tc.args))], " ") + " --help' for usage."; len(tc.args) > 2 && !strings.Contains(errOut, usage) {
			t.Errorf("step %d: afloat %v: stderr %q does not end with %q", i, tc.args, errOut, usage)
		}
		for _, w := range tc.want {
			if !strings.Contains(errOut, w) {
				t.Errorf("step %d: afloat %v: stderr %q does not mention %q", i, tc.args, errOut, w)
			}
		}
	}
}
