package main

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestQuotaChaos: the log's lines carry the fields the issue names, the
// last line is the summary, and the check subcommand agrees with it.
func TestQuotaChaos(t *testing.T) {
	status, out, errOut := call(t, "", "quota", "chaos", "--seed", "3", "--duration", "40s")
	if status != 0 || errOut != "" {
		t.Fatalf("status %d, stderr %q", status, errOut)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	seen := map[string]bool{}
	for i, line := range lines[:len(lines)-1] {
		var e map[string]any
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("line %d %q: %v", i+1, line, err)
		}
		ev, _ := e["ev"].(string)
		seen[ev] = true
		if _, ok := e["t_ns"]; !ok {
			t.Fatalf("line %d lacks t_ns: %s", i+1, line)
		}
		want := map[string][]string{
			"admit": {"tenant", "region", "n"},
			"lease": {"tenant", "region", "id", "epoch", "rate", "burst", "activates_ns", "expires_ns"},
		}[ev]
		for _, k := range want {
			if _, ok := e[k]; !ok {
				t.Fatalf("line %d (%s) lacks %q: %s", i+1, ev, k, line)
			}
		}
	}
	for _, ev := range []string{"start", "admit", "reject", "lease", "install", "stop"} {
		if !seen[ev] {
			t.Errorf("no %q line in the log", ev)
		}
	}
	var sum map[string]any
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &sum); err != nil || sum["ev"] != "summary" || sum["violations"] != 0.0 {
		t.Fatalf("summary %q: %v", lines[len(lines)-1], err)
	}

	// The same run to a file, then checked.
	log := filepath.Join(t.TempDir(), "run.jsonl")
	status, out, _ = call(t, "", "quota", "chaos", "--seed", "3", "--duration", "40s", "--log", log)
	if status != 0 || strings.Count(out, "\n") != 1 || out != lines[len(lines)-1]+"\n" {
		t.Fatalf("with --log: status %d, stdout %q", status, out)
	}
	status, out, _ = call(t, "", "quota", "check", log)
	if status != 0 || !strings.Contains(out, `"violations":0`) || !strings.Contains(out, `"worst_excess":`+jsonNumber(sum["worst_excess"])) {
		t.Fatalf("check: %d %s", status, out)
	}
	// A tampered log: the checker fails it.
	f, _ := os.OpenFile(log, os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(`{"t_ns":40000000000,"ev":"admit","tenant":"acme","region":"eu","n":100000}` + "\n")
	f.Close()
	if status, out, _ = call(t, "", "quota", "check", log); status != 1 || !strings.Contains(out, `"violations":1`) {
		t.Fatalf("tampered log: %d %s", status, out)
	}

	status, out, _ = call(t, "", "quota", "chaos", "--seeds", "1-4", "--duration", "20s", "--mode", "best-effort")
	if status != 0 || !strings.Contains(out, `"seeds":4`) || !strings.Contains(out, `"failed":0`) {
		t.Fatalf("--seeds: %d %s", status, out)
	}
}

func jsonNumber(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func TestQuotaSim(t *testing.T) {
	status, out, errOut := call(t, "", "quota", "sim", "--seed", "2", "--duration", "5s", "--faults", "none")
	if status != 0 || !strings.Contains(errOut, `"violations":0`) {
		t.Fatalf("status %d, stderr %q", status, errOut)
	}
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Scan()
	if sc.Text() != "t_s,offered_eu,admitted_eu,offered_us,admitted_us,offered_ap,admitted_ap,admitted_total,rate" {
		t.Fatalf("header %q", sc.Text())
	}
	rows := 0
	for sc.Scan() {
		rows++
		if n := strings.Count(sc.Text(), ","); n != 8 {
			t.Fatalf("row %q has %d commas", sc.Text(), n)
		}
	}
	if rows != 5 {
		t.Fatalf("%d rows for 5 s in steps of 1 s", rows)
	}
}

func TestQuotaUsageErrors(t *testing.T) {
	for i, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"quota"}, "missing subcommand"},
		{[]string{"quota", "melt"}, `unknown subcommand "melt"`},
		{[]string{"quota", "chaos", "--mode", "soft"}, `mode "soft": want hard or best-effort`},
		{[]string{"quota", "chaos", "--faults", "shift,meteor"}, `fault "meteor"`},
		{[]string{"quota", "chaos", "--duration", "10ms"}, "duration 10ms: want 1s to 24h"},
		{[]string{"quota", "chaos", "--seed", "-1"}, "from 0 to 4294967295"},
		{[]string{"quota", "chaos", "--seeds", "9-3"}, `--seeds "9-3"`},
		{[]string{"quota", "chaos", "--seeds", "1-2", "--log", "x"}, "--log and --seeds"},
		{[]string{"quota", "chaos", "--workers", "1000"}, "--workers 1000"},
		{[]string{"quota", "chaos", "--log", "/nonexistent/dir/log"}, "--log"},
		{[]string{"quota", "sim", "--step", "1ms"}, "--step 1ms"},
		{[]string{"quota", "check"}, "want one FILE"},
		{[]string{"quota", "check", "/nonexistent"}, "no such file"},
	} {
		status, out, errOut := call(t, "", tc.args...)
		if status != 2 || out != "" || !strings.Contains(errOut, tc.want) {
			t.Errorf("step %d: afloat %v: status %d, stdout %q, stderr %q; want 2 and a message mentioning %q", i, tc.args, status, out, errOut, tc.want)
		}
	}
}
