package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestQuotaCheckTenantLimits: --tenant NAME:R:B checks the limits the log
// states against the operator's. A log that admits 30,000 tokens at once
// and states R and B large enough to allow it passes a check that trusts
// it — which says the limits are unverified — and fails (exit 1) with the
// true limits given, naming the tenant, both limits, the file and the
// line; the real log passes with them, its tenant verified; limits that
// do not parse, or a tenant given twice, are refused (exit 2).
func TestQuotaCheckTenantLimits(t *testing.T) {
	dir := t.TempDir()
	logPath := filepath.Join(dir, "run.jsonl")
	if status, _, errOut := call(t, "", "quota", "chaos", "--seed", "3", "--duration", "20s", "--log", logPath); status != 0 {
		t.Fatalf("chaos --log: %d %s", status, errOut)
	}
	raw, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(raw), "\n")
	if !strings.Contains(lines[0], `"ev":"start","tenant":"acme",`) || !strings.Contains(lines[0], `"rate":500,"burst":6000,`) {
		t.Fatalf("the run's first line is not acme's start at R 500, B 6000: %q", lines[0])
	}
	at := -1
	for i, l := range lines {
		if strings.Contains(l, `"ev":"admit","tenant":"acme","region":"eu","n":`) {
			at = i
			break
		}
	}
	if at < 0 {
		t.Fatal("no admission in eu")
	}
	surge := strings.Replace(lines[at], `"n":`, `"n":3000`, 1) // n becomes 3000x: 30,000 tokens or more
	forged := strings.Replace(lines[0], `"rate":500,"burst":6000`, `"rate":1000000,"burst":1000000`, 1) +
		strings.Join(lines[1:at+1], "") + surge + strings.Join(lines[at+1:], "")
	forgedPath := filepath.Join(dir, "forged.jsonl")
	if err := os.WriteFile(forgedPath, []byte(forged), 0o644); err != nil {
		t.Fatal(err)
	}

	for i, tc := range []struct {
		args   []string
		status int
		out    []string // on stdout when the status is 0
		errOut []string // on stderr
	}{
		{[]string{forgedPath}, 0, []string{`"violations":0`, `"unverified":["acme"]`}, []string{"the limits of acme come from the log itself, unverified"}},
		{[]string{"--tenant", "acme:500:6000", forgedPath}, 1, nil,
			[]string{"forged.jsonl: line 1:", `tenant "acme"`, "given R 500, B 6000, hard (acme:500:6000)", "the log's start event says R 1000000, B 1000000, hard"}},
		{[]string{"--tenant", "acme:500:6000", logPath}, 0, []string{`"violations":0`, `"verified":["acme"]`}, nil},
		{[]string{"--tenant", "acme:500:6001", logPath}, 1, nil, []string{"run.jsonl: line 1:", "given R 500, B 6001, hard", "says R 500, B 6000, hard"}},
		{[]string{"--tenant", "acme:500:6000:100:3", logPath}, 1, nil, []string{"given R 500, B 6000, best-effort, E 100, 3 regions", "says R 500, B 6000, hard"}},
		{[]string{"--tenant", "acme:500:6000", "--tenant", "globex:50:200", logPath}, 1, nil, []string{`no start event for tenant "globex"`, "run.jsonl"}},
		{[]string{"--tenant", "acme:500", logPath}, 2, nil, []string{"-tenant", "want NAME:R:B (hard mode) or NAME:R:B:E:N", "Run 'afloat quota check --help' for usage."}},
		{[]string{"--tenant", "acme:0:6000", logPath}, 2, nil, []string{`R "0": want tokens a second, above 0`}},
		{[]string{"--tenant", "acme:500:6000", "--tenant", "acme:500:6000", logPath}, 2, nil, []string{`tenant "acme" given twice`}},
	} {
		status, out, errOut := call(t, "", append([]string{"quota", "check"}, tc.args...)...)
		if status != tc.status {
			t.Errorf("step %d: quota check %v: status %d, stdout %q, stderr %q; want %d", i, tc.args, status, out, errOut, tc.status)
			continue
		}
		if status != 0 && out != "" {
			t.Errorf("step %d: quota check %v: printed %q; want no check line", i, tc.args, out)
		}
		for _, w := range tc.out {
			if !strings.Contains(out, w) {
				t.Errorf("step %d: quota check %v: stdout %q does not say %q", i, tc.args, out, w)
			}
		}
		for _, w := range tc.errOut {
			if !strings.Contains(errOut, w) {
				t.Errorf("step %d: quota check %v: stderr %q does not say %q", i, tc.args, errOut, w)
			}
		}
		if len(tc.errOut) == 0 && errOut != "" {
			t.Errorf("step %d: quota check %v: stderr %q", i, tc.args, errOut)
		}
	}
}
