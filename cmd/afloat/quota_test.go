package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/afloat/afloat/quota/chaos"
	"github.com/afloat/afloat/quota/etcdmember"
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

// TestQuotaSim: the command prints the series the package writes
// (chaos.RunSeries: TestRunSeries checks its rows), and the summary on
// stderr.
func TestQuotaSim(t *testing.T) {
	status, out, errOut := call(t, "", "quota", "sim", "--seed", "2", "--duration", "5s", "--faults", "none", "--step", "500ms")
	if status != 0 || !strings.Contains(errOut, `"violations":0`) {
		t.Fatalf("status %d, stderr %q", status, errOut)
	}
	var want bytes.Buffer
	if _, err := chaos.RunSeries(&want, chaos.Config{Seed: 2, Duration: 5 * time.Second, NoFaults: true}, 500*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if out != want.String() || strings.Count(out, "\n") != 11 {
		t.Errorf("the command printed\n%s\nthe package writes\n%s", out, want.String())
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
		{[]string{"quota", "chaos", "--seeds", "9-3"}, "seeds 9-3: want the first no larger than the last"},
		{[]string{"quota", "chaos", "--seeds", "1-x"}, `--seeds "1-x": want A-B`},
		{[]string{"quota", "chaos", "--seeds", "1-2", "--log", "x"}, "--log does not go with --seeds"},
		{[]string{"quota", "chaos", "--seeds", "1-2", "--workers", "1000"}, "workers 1000: want 0 (one per CPU) to 256"},
		{[]string{"quota", "chaos", "--log", "/nonexistent/dir/log"}, "--log"},
		{[]string{"quota", "sim", "--step", "1ms"}, "step 1ms: want 10ms to 1h0m0s"},
		{[]string{"quota", "check"}, "want one FILE or more"},
		// The services: each refusal names its flag or its config field.
		{[]string{"quota", "coordinator"}, "--config: config: invalid config file: no file given"},
		{[]string{"quota", "coordinator", "--config", "/nonexistent.yaml"}, "--config: config: invalid config file"},
		{[]string{"quota", "coordinator", "--config", "testdata/quota-bad-rate.yaml"}, "tenants[0].rate -5: want above 0"},
		{[]string{"quota", "coordinator", "--config", "../../docs/quota-cluster.yaml", "--etcd", "127.0.0.1:99999"}, `--etcd: "http://127.0.0.1:99999": want a port from 1 to 65535`},
		{[]string{"quota", "coordinator", "--config", "../../docs/quota-cluster.yaml", "--etcd", ","}, `--etcd ",": empty`},
		{[]string{"quota", "coordinator", "--config", "../../docs/quota-cluster.yaml", "--etcd", "a:1", "--data-dir", "x"}, "--etcd and --data-dir"},
		{[]string{"quota", "coordinator", "--config", "../../docs/quota-cluster.yaml", "--listen", "127.0.0.1:70000"}, "--listen"},
		{[]string{"quota", "region", "--coordinator", "a:1", "--config", "../../docs/quota-cluster.yaml"}, `--name "": not in the config's regions: want one of`},
		{[]string{"quota", "region", "--name", "eu", "--config", "../../docs/quota-cluster.yaml"}, "--coordinator: empty"},
		{[]string{"quota", "region", "--name", "mars", "--coordinator", "a:1", "--config", "../../docs/quota-cluster.yaml"}, `--name "mars": not in the config's regions`},
		{[]string{"quota", "region", "--name", "eu", "--coordinator", "ftp://a:1", "--config", "../../docs/quota-cluster.yaml"}, `--coordinator: "ftp://a:1"`},
		{[]string{"quota", "region", "--name", "eu", "--coordinator", "a:1", "--config", "../../docs/quota-cluster.yaml", "--event-log-interval", "5ms"}, "--event-log-interval 5ms: want 10ms to 10s"},
		{[]string{"quota", "region", "--name", "eu", "--coordinator", "a:1", "--config", "../../docs/quota-cluster.yaml", "--event-log-lines", "--event-log-interval", "1s"}, "not with --event-log-lines"},
		{[]string{"quota", "region", "--name", "eu", "--coordinator", "a:1", "--config", "../../docs/quota-cluster.yaml", "--event-log-keep", "0"}, "--event-log-keep 0: want 1 to 10000"},
		{[]string{"quota", "coordinator", "--config", "../../docs/quota-cluster.yaml", "--event-log-max-mb", "-1"}, "--event-log-max-mb -1: want 0 (never rotate)"},
		{[]string{"quota", "etcd"}, "--data-dir is required"},
		{[]string{"quota", "check", "/nonexistent"}, "no such file"},
		// A zero or negative duration is refused, not taken as the default.
		{[]string{"quota", "chaos", "--duration", "0s"}, "--duration 0s: want more than 0"},
		{[]string{"quota", "chaos", "--duration", "-1s"}, "duration -1s: want 1s to 24h"},
		{[]string{"quota", "sim", "--duration", "0s"}, "--duration 0s: want more than 0"},
		{[]string{"quota", "chaos", "--duration", "25h"}, "duration 25h0m0s: want 1s to 24h"},
		// One seed or a range, not both; --workers is for a range.
		{[]string{"quota", "chaos", "--seed", "4", "--seeds", "1-2"}, "--seed does not go with --seeds"},
		{[]string{"quota", "chaos", "--seeds", "1-2", "--seed", "0"}, "--seed does not go with --seeds"},
		{[]string{"quota", "chaos", "--seed", "4", "--workers", "2", "--duration", "1s"}, "--workers only with --seeds"},
	} {
		status, out, errOut := call(t, "", tc.args...)
		if status != 2 || out != "" || !strings.Contains(errOut, tc.want) {
			t.Errorf("step %d: afloat %v: status %d, stdout %q, stderr %q; want 2 and a message mentioning %q", i, tc.args, status, out, errOut, tc.want)
		}
		if usage := "Run 'afloat " + strings.Join(tc.args[:min(2, len(tc.args))], " ") + " --help' for usage."; len(tc.args) > 2 && !strings.Contains(errOut, usage) {
			t.Errorf("step %d: afloat %v: stderr %q does not end with %q", i, tc.args, errOut, usage)
		}
	}
}

// TestQuotaCheckIncompleteLogs: a log that ends before its run did — empty,
// cut at a line, cut inside one, or missing the newline of its last line —
// or that proves nothing — a stop line alone, a start and a stop with no
// admission — fails the check (exit 1) with what is missing, and never
// reads as "violations": 0; a complete log passes with or without the
// summary line that chaos prints after it on standard output (its limits
// said to be unverified), and a malformed line or one of an unknown kind
// inside a log is refused (exit 2), naming the file and the line.
func TestQuotaCheckIncompleteLogs(t *testing.T) {
	dir := t.TempDir()
	logPath := filepath.Join(dir, "run.jsonl")
	if status, _, errOut := call(t, "", "quota", "chaos", "--seed", "3", "--duration", "20s", "--log", logPath); status != 0 {
		t.Fatalf("chaos --log: %d %s", status, errOut)
	}
	status, stdoutLog, errOut := call(t, "", "quota", "chaos", "--seed", "3", "--duration", "20s")
	if status != 0 {
		t.Fatalf("chaos: %d %s", status, errOut)
	}
	raw, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	full := string(raw)
	lines := strings.SplitAfter(full, "\n") // and "" after the last newline
	if tail := lines[len(lines)-1]; tail != "" || !strings.Contains(lines[len(lines)-2], `"ev":"stop"`) {
		t.Fatalf("the log does not end with a stop line: %q", lines[len(lines)-2])
	}
	sumLine := strings.TrimPrefix(stdoutLog, full)
	if sumLine == stdoutLog || !strings.HasPrefix(sumLine, `{"ev":"summary"`) {
		t.Fatalf("chaos on standard output is not the log then the summary: %q", sumLine)
	}
	file := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	mid := len(strings.Join(lines[:100], "")) + 17 // inside line 101
	for i, tc := range []struct {
		path   string
		status int
		want   []string // on stderr when the status is not 0
	}{
		{file("empty.jsonl", ""), 1, []string{"empty.jsonl", "log has no events"}},
		{"/dev/null", 1, []string{"/dev/null", "log has no events"}},
		{file("blank.jsonl", "\n\n"), 1, []string{"log has no events"}},
		{file("summary-only.jsonl", sumLine), 1, []string{"log has no events"}},
		{file("cut-at-line.jsonl", strings.Join(lines[:100], "")), 1, []string{"cut-at-line.jsonl", "log is truncated", "no stop event", "line 100"}},
		{file("cut-mid-line.jsonl", full[:mid]), 1, []string{"cut-mid-line.jsonl", "log is truncated", "line 101", "cut off"}},
		{file("cut-summary.jsonl", stdoutLog[:len(stdoutLog)-20]), 1, []string{"log is truncated", "cut off"}},
		{file("no-stop-summary.jsonl", strings.Join(lines[:len(lines)-2], "")+sumLine), 1, []string{"log is truncated", "no stop event"}},
		{file("no-final-newline.jsonl", strings.TrimSuffix(full, "\n")), 1, []string{"no-final-newline.jsonl", "log is truncated", fmt.Sprintf("line %d is cut off", len(lines)-1)}},
		{file("stop-only.jsonl", lines[len(lines)-2]), 1, []string{"log has no start event in", "stop-only.jsonl"}},
		{file("no-admissions.jsonl", lines[0]+lines[len(lines)-2]), 1, []string{"log has no admissions in", "no-admissions.jsonl"}},
		{logPath, 0, nil},
		{file("stdout.jsonl", stdoutLog), 0, nil},
		{file("malformed.jsonl", lines[0]+"{\n"+strings.Join(lines[1:], "")), 2, []string{"malformed.jsonl: line 2", "Run 'afloat quota check --help' for usage."}},
		{file("unknown-kind.jsonl", lines[0]+`{"t_ns":1,"ev":"admitted","tenant":"acme","region":"eu","n":9000}`+"\n"+strings.Join(lines[1:], "")), 2,
			[]string{"unknown-kind.jsonl: line 2", `unknown event kind "admitted"`}},
	} {
		status, out, errOut := call(t, "", "quota", "check", tc.path)
		if status != tc.status {
			t.Errorf("step %d: quota check %s: status %d, stdout %q, stderr %q; want %d", i, filepath.Base(tc.path), status, out, errOut, tc.status)
			continue
		}
		if tc.status == 0 {
			if !strings.Contains(out, `"violations":0`) || !strings.Contains(out, `"unverified":["acme"]`) || !strings.Contains(errOut, "the limits of acme come from the log itself, unverified") {
				t.Errorf("step %d: quota check %s: stdout %q, stderr %q", i, filepath.Base(tc.path), out, errOut)
			}
			continue
		}
		if out != "" {
			t.Errorf("step %d: quota check %s: printed %q; want nothing on stdout for a log it cannot check", i, filepath.Base(tc.path), out)
		}
		for _, w := range tc.want {
			if !strings.Contains(errOut, w) {
				t.Errorf("step %d: quota check %s: stderr %q does not mention %q", i, filepath.Base(tc.path), errOut, w)
			}
		}
	}
}

// TestQuotaCoordinatorWithoutEmbeddedEtcd: a binary built without the
// embedetcd tag says how to get the embedded etcd, or to give --etcd.
func TestQuotaCoordinatorWithoutEmbeddedEtcd(t *testing.T) {
	if etcdmember.EmbeddedEtcd {
		t.Skip("built with the embedded etcd")
	}
	status, _, errOut := call(t, "", "quota", "coordinator", "--config", "../../docs/quota-cluster.yaml", "--listen", "127.0.0.1:0", "--data-dir", t.TempDir())
	if status != 1 || !strings.Contains(errOut, "-tags embedetcd") || !strings.Contains(errOut, "--etcd ENDPOINTS") {
		t.Fatalf("status %d, stderr %q", status, errOut)
	}
}
