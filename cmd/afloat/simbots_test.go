package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/afloat/afloat/internal/cli"
	"github.com/afloat/afloat/sim"
	"github.com/afloat/afloat/sim/bots"
)

func TestSimBots(t *testing.T) {
	status, out, errOut := call(t, "", "sim", "bots", "--scenario", "bad-deploy", "--seeds", "1-20")
	if status != 0 || errOut != "" {
		t.Fatalf("status %d, stderr %q", status, errOut)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 4 || !strings.Contains(lines[1], "nothing") || !strings.Contains(lines[2], "runbook") || !strings.Contains(lines[3], "expert") || !strings.Contains(lines[2], "  20  ") {
		t.Errorf("table:\n%s", out)
	}

	// --write gives a file of the shipped form that reads back.
	path := filepath.Join(t.TempDir(), "d.json")
	if status, _, errOut := call(t, "", "sim", "bots", "--scenario", "steady", "--seeds", "3-4", "--bots", "hindsight", "--write", path); status != 0 {
		t.Fatalf("--write: status %d, %s", status, errOut)
	}
	raw, err := os.ReadFile(path)
	if err != nil || !strings.Contains(string(raw), `"bot":"hindsight"`) || !strings.Contains(string(raw), `"first_seed":3`) {
		t.Errorf("written %s, %v", raw, err)
	}

	status, out, _ = call(t, "", "sim", "bots", "--shipped")
	if status != 0 || strings.Count(out, "\n") != 1+len(sim.ScenarioNames())*len(bots.Names()) {
		t.Errorf("--shipped: status %d:\n%s", status, out)
	}
}

func TestSimBotsRefuses(t *testing.T) {
	for i, tc := range []struct {
		args []string
		want string
	}{
		{[]string{}, "--scenario is required"},
		{[]string{"--scenario", "calm"}, `scenario "calm"`},
		{[]string{"--all", "--scenario", "steady"}, "--scenario does not go with --all"},
		{[]string{"--scenario", "steady", "--seeds", "5-1"}, "seeds 5-1: want first ≤ last"},
		{[]string{"--scenario", "steady", "--seeds", "5"}, `--seeds "5": want A-B`},
		{[]string{"--scenario", "steady", "--seeds", "1-200000"}, "at most 100000 seeds"},
		{[]string{"--scenario", "steady", "--bots", "nothing,genius"}, `bot "genius": want one of nothing, runbook, expert`},
		{[]string{"--scenario", "steady", "--workers", "0"}, "--workers 0: want more than 0"},
		{[]string{"--scenario", "steady", "--workers", "300"}, "workers 300: want 0 (one per CPU) to 256"},
		{[]string{"--shipped", "--seeds", "1-5"}, "--seeds does not go with --shipped"},
		{[]string{"--shipped", "--scenario", "calm"}, `scenario "calm"`},
	} {
		status, _, errOut := call(t, "", append([]string{"sim", "bots"}, tc.args...)...)
		if status != cli.ExitUsage || !strings.Contains(errOut, tc.want) {
			t.Errorf("step %d: sim bots %v: status %d, %q; want %d and %q", i, tc.args, status, errOut, cli.ExitUsage, tc.want)
		}
	}
}
