package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/afloat/afloat/overload/live"
	"github.com/afloat/afloat/sim"
)

// TestMain lets this test binary be the server process of afloat bench
// bulkhead, as main lets the afloat binary be: a test that reaches a live
// comparison or a soak starts os.Executable(), which here is this binary.
// It removes the binaries the tests built (testBinary) when they end.
func TestMain(m *testing.M) {
	live.ServeIfChild()
	code := m.Run()
	if builds.dir != "" {
		os.RemoveAll(builds.dir)
	}
	os.Exit(code)
}

// call runs the command line and returns its status and output.
func call(t *testing.T, stdin string, args ...string) (status int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	status = run(args, strings.NewReader(stdin), &out, &errOut)
	return status, out.String(), errOut.String()
}

func TestOpeningMinuteFromTheCommandLine(t *testing.T) {
	status, out, errOut := call(t, "", "sim", "run", "--scenario", "steady", "--seed", "1", "--minutes", "1", "--noise=false", "--format", "jsonl")
	if status != 0 || errOut != "" {
		t.Fatalf("status %d, stderr %q", status, errOut)
	}
	var f map[string]any
	if err := json.Unmarshal([]byte(out), &f); err != nil {
		t.Fatalf("output %q: %v", out, err)
	}
	want := map[string]float64{
		"requests_per_s": 1125, "serving": 10, "booting": 0, "shed_share": 0,
		"fleet_cost_per_h": 4, "cost_so_far": 0, "mean_age_s": 30, "bad_build_share": 0,
		"recommendations_available": 1, "burn": 0, "burn_1h": 0,
	}
	for k, v := range want {
		if f[k] != v {
			t.Errorf("%s = %v, want %v", k, f[k], v)
		}
	}
	if hit := f["cache_hit"].(float64); hit < 0.7714 || hit >= 0.7715 {
		t.Errorf("cache_hit = %v, want 0.7714…", hit)
	}
	if db := f["db_utilization"].(float64); db < 0.19285 || db >= 0.19295 {
		t.Errorf("db_utilization = %v, want 0.1929 (771.4 of 4,000 queries/s)", db)
	}
	// The jsonl frame carries every field the specification lists.
	for _, k := range strings.Fields(`minute clock requests_per_s admitted_per_s shed_share serving booting
		cache_hit cache_warm mean_age_s db_queries_per_s db_utilization query_time_ms service_time_ms
		utilization p99_ms timeout_share failed_share error_rate burn burn_1h budget_remaining paged
		fleet_cost_per_h cost_so_far bad_build_share recommendations_available`) {
		if _, ok := f[k]; !ok {
			t.Errorf("frame has no %q", k)
		}
	}
}

func TestCommandLineMatchesPackage(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "..", "sim", "testdata", "actions", "bad-deploy-rollback.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	for _, format := range []string{"table", "csv", "jsonl"} {
		status, out, errOut := call(t, string(raw), "sim", "run", "--scenario", "bad-deploy", "--seed", "7", "--actions", "-", "--format", format)
		if status != 0 {
			t.Fatalf("status %d: %s", status, errOut)
		}
		actions, _ := sim.ParseActions(bytes.NewReader(raw), 0)
		frames, _ := sim.Run(sim.Config{Scenario: "bad-deploy", Seed: 7, Noise: true, Actions: actions})
		var want bytes.Buffer
		sim.WriteFrames(&want, frames, sim.Format(format))
		if out != want.String() {
			t.Errorf("%s: the command line printed something else than the package writes", format)
		}
	}
}

func TestHelp(t *testing.T) {
	for _, args := range [][]string{{"--help"}, {"help"}, {"-h"}} {
		status, out, errOut := call(t, "", args...)
		if status != 0 || !strings.Contains(out, "sim run") || errOut != "" {
			t.Errorf("afloat %v: status %d, stdout %q, stderr %q", args, status, out, errOut)
		}
	}
	for _, args := range [][]string{{"sim", "--help"}, {"sim", "run", "--help"}, {"sim", "scenarios", "-h"}} {
		status, out, errOut := call(t, "", args...)
		if status != 0 || !strings.Contains(out, "Usage:") || errOut != "" {
			t.Errorf("afloat %v: status %d, stdout %q, stderr %q", args, status, out, errOut)
		}
	}
	_, out, _ := call(t, "", "sim", "run", "--help")
	for _, w := range []string{"--scenario", "-seed N", "rollback", "fleet_floor", "integer 0–40"} {
		if !strings.Contains(out, strings.TrimPrefix(w, "--")) {
			t.Errorf("sim run --help does not mention %q", w)
		}
	}
}

func TestScenarios(t *testing.T) {
	status, out, _ := call(t, "", "sim", "scenarios")
	if status != 0 {
		t.Fatal(status)
	}
	for _, name := range []string{"steady", "bad-deploy", "surge", "cache-flush", "mystery", "09:10", "8 minutes"} {
		if !strings.Contains(out, name) {
			t.Errorf("scenarios table does not mention %q", name)
		}
	}
	status, out, _ = call(t, "", "sim", "scenarios", "--format", "jsonl")
	if status != 0 || strings.Count(out, "\n") != len(sim.ScenarioNames()) || !strings.Contains(out, `"name":"mystery"`) {
		t.Fatalf("jsonl: status %d, %q", status, out)
	}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var sc map[string]any
		if err := json.Unmarshal([]byte(line), &sc); err != nil || sc["name"] == nil || sc["briefing"] == nil {
			t.Errorf("line %q: %v", line, err)
		}
	}
}

// TestUsageErrors: every refused command line exits 2, prints nothing on
// stdout and names the problem on stderr.
func TestUsageErrors(t *testing.T) {
	dir := t.TempDir()
	file := func(content string) string {
		f, err := os.CreateTemp(dir, "actions")
		if err != nil {
			t.Fatal(err)
		}
		f.WriteString(content)
		f.Close()
		return f.Name()
	}
	for i, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"simulate"}, []string{`unknown command "simulate"`, "afloat --help"}},
		{[]string{"sevre"}, []string{`unknown command "sevre" (did you mean "serve"?)`}},
		{[]string{"version", "extra"}, []string{`unexpected argument "extra"`}},
		// Bad durations and numbers name the flag and show a value that
		// would do; a misspelt flag gets the nearest one.
		{[]string{"bench", "bulkhead", "--work", "10"}, []string{`--work "10": want a duration such as 500ms, 10s or 1m30s`}},
		{[]string{"bench", "bulkhead", "--deadline", "fast"}, []string{`--deadline "fast": want a duration such as 500ms`}},
		{[]string{"lab", "overload", "--inside", "ten"}, []string{`--inside "ten": want a whole number such as 42`}},
		{[]string{"quota", "chaos", "--seeds", "1-2", "--workers", "two"}, []string{`--workers "two": want a whole number such as 42`}},
		{[]string{"sim", "run", "--scenario", "steady", "--minutes", "1.5"}, []string{`--minutes "1.5": want a whole number such as 42`}},
		{[]string{"sim", "run", "--scenari", "steady"}, []string{"unknown flag --scenari (did you mean --scenario?)"}},
		{[]string{"sim"}, []string{"missing subcommand"}},
		{[]string{"sim", "walk"}, []string{`unknown subcommand "walk"`}},
		{[]string{"sim", "run"}, []string{"--scenario is required", "steady, bad-deploy, surge, cache-flush"}},
		{[]string{"sim", "run", "--scenario", "calm"}, []string{`scenario "calm"`, "want one of steady"}},
		{[]string{"sim", "run", "--scenario", "steady", "--seed", "4294967296"}, []string{"-seed", "from 0 to 4294967295"}},
		{[]string{"sim", "run", "--scenario", "steady", "--seed", "x"}, []string{"-seed", "from 0 to 4294967295"}},
		{[]string{"sim", "run", "--scenario", "steady", "--minutes", "0x"}, []string{"-minutes"}},
		{[]string{"sim", "run", "--scenario", "steady", "--minutes", "-5"}, []string{"minutes -5", "from 1 to 10080"}},
		{[]string{"sim", "run", "--scenario", "steady", "--minutes", "20000"}, []string{"from 1 to 10080"}},
		{[]string{"sim", "run", "--scenario", "steady", "--format", "xml"}, []string{`format "xml"`, "table, csv or jsonl"}},
		{[]string{"sim", "run", "--scenario", "steady", "--noise=maybe"}, []string{"-noise"}},
		{[]string{"sim", "run", "--scenario", "steady", "extra"}, []string{`unexpected argument "extra"`}},
		{[]string{"sim", "run", "--scenario", "steady", "--bogus"}, []string{"-bogus"}},
		{[]string{"sim", "run", "--scenario", "steady", "--actions", filepath.Join(dir, "missing")}, []string{"--actions", "no such file"}},
		{[]string{"sim", "run", "--scenario", "steady", "--actions", file(`{"minute": 3, "control": "scale_up", "value": 2}`)},
			[]string{"line 1", `field "control"`, `unknown control "scale_up"`, "fleet_floor"}},
		{[]string{"sim", "run", "--scenario", "steady", "--actions", file(`{"minute": 3, "control": "target_utilization", "value": 1.5}`)},
			[]string{"line 1", `field "value"`, "from 0.2 to 0.95"}},
		{[]string{"sim", "run", "--scenario", "steady", "--minutes", "30", "--actions", file(`{"minute": 30, "control": "warmup"}`)},
			[]string{"line 1", `field "minute"`, "from 0 to 29"}},
		{[]string{"sim", "run", "--scenario", "surge", "--actions", file("{\"minute\": 3, \"control\": \"warmup\"}\n{\"minute\": 4, \"control\": \n")},
			[]string{"line 2", "malformed JSON"}},
		{[]string{"sim", "scenarios", "--format", "csv"}, []string{`format "csv"`}},
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

func TestServeUsageErrors(t *testing.T) {
	for i, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"serve", "--addr", "8080"}, `addr "8080": want host:port`},
		{[]string{"serve", "--log-format", "xml"}, `--log-format "xml": want text or json`},
		{[]string{"serve", "--log-level", "loud"}, `--log-level "loud"`},
		{[]string{"serve", "now"}, `unexpected argument "now"`},
	} {
		status, out, errOut := call(t, "", tc.args...)
		if status != 2 || out != "" || !strings.Contains(errOut, tc.want) {
			t.Errorf("step %d: afloat %v: %d, %q, %q; want 2 and %q", i, tc.args, status, out, errOut, tc.want)
		}
	}
	if status, out, _ := call(t, "", "serve", "--help"); status != 0 || !strings.Contains(out, "--addr") && !strings.Contains(out, "-addr") {
		t.Errorf("serve --help: %d %q", status, out)
	}
}

// TestInvalidPortsAreRefused: a port out of range, in any flag that takes
// one, is a refused command line (exit 2) naming the flag and the range —
// not a failure to listen or to connect (exit 1), nor a probe or a server
// that runs on regardless. A password in a Redis URL is not printed.
func TestInvalidPortsAreRefused(t *testing.T) {
	list := filepath.Join(t.TempDir(), "proxies.txt")
	if err := os.WriteFile(list, []byte("127.0.0.1:3128\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for i, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"serve", "--addr", "127.0.0.1:99999"}, []string{`addr "127.0.0.1:99999": want a port from 0 to 65535`}},
		{[]string{"serve", "--addr", "127.0.0.1:-1"}, []string{`addr "127.0.0.1:-1": want a port from 0 to 65535`}},
		{[]string{"serve", "--addr", "127.0.0.1:0", "--redis", "redis://127.0.0.1:99999"}, []string{"redis URL", "port 99999: want 1 to 65535"}},
		{[]string{"serve", "--addr", "127.0.0.1:0", "--redis", "redis://u:hunter2@127.0.0.1:70000"}, []string{"redis URL", "port 70000: want 1 to 65535"}},
		{[]string{"assign", "pick", "--redis", "redis://127.0.0.1:99999", "--pool", "p"}, []string{"--redis", "port 99999: want 1 to 65535"}},
		{[]string{"assign", "list", "--redis", "redis://127.0.0.1:0", "--pool", "p"}, []string{"--redis", "port 0: want 1 to 65535"}},
		{[]string{"assign", "add", "--redis", "redis://:hunter2@127.0.0.1:65536", "--pool", "p", "m"}, []string{"--redis", "port 65536"}},
		{[]string{"assign", "bench", "--redis", "redis://127.0.0.1:99999"}, []string{"redis URL", "port 99999: want 1 to 65535"}},
		{[]string{"proxy", "check", "--probe", "http://127.0.0.1:99999/health", list}, []string{"probe URL", "port 99999: want 1 to 65535"}},
		{[]string{"proxy", "check", "--probe", "http://127.0.0.1:9/", "--pool", "p", "--redis", "redis://127.0.0.1:99999", list}, []string{"--redis", "port 99999: want 1 to 65535"}},
		{[]string{"proxy", "check", "--probe", "http://127.0.0.1:9/", "--pool", "p", "--redis", "http://127.0.0.1:6379", list}, []string{"--redis", "want redis://host:port"}},
	} {
		status, out, errOut := call(t, "", tc.args...)
		if status != 2 || out != "" {
			t.Errorf("step %d: afloat %v: status %d, stdout %q, stderr %q; want 2 and nothing printed", i, tc.args, status, out, errOut)
		}
		for _, w := range append(tc.want, "Run 'afloat "+tc.args[0]) {
			if !strings.Contains(errOut, w) {
				t.Errorf("step %d: afloat %v: stderr %q does not mention %q", i, tc.args, errOut, w)
			}
		}
		if strings.Contains(errOut, "hunter2") {
			t.Errorf("step %d: afloat %v: stderr %q shows the password", i, tc.args, errOut)
		}
	}
}

// TestServeRunsAndStops starts the console on a free port through the
// command line and stops it with SIGINT, as a person does with Ctrl-C.
func TestServeRunsAndStops(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	var errOut syncBuffer
	done := make(chan int, 1)
	go func() { done <- run([]string{"serve", "--addr", addr}, strings.NewReader(""), io.Discard, &errOut) }()
	var res *http.Response
	for i := 0; ; i++ {
		if res, err = http.Get("http://" + addr + "/healthz"); err == nil {
			break
		}
		if i == 200 {
			t.Fatalf("the console never answered: %v; log %s", err, errOut.String())
		}
		time.Sleep(25 * time.Millisecond) // polling for a port, not measuring time
	}
	res.Body.Close()
	syscall.Kill(os.Getpid(), syscall.SIGINT)
	select {
	case status := <-done:
		if status != 0 {
			t.Fatalf("serve exited %d; log %s", status, errOut.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatal("serve did not stop on SIGINT")
	}
	for _, want := range []string{"console listening", "shutting down", "stopped"} {
		if !strings.Contains(errOut.String(), want) {
			t.Errorf("log lacks %q: %s", want, errOut.String())
		}
	}
}

// syncBuffer is a bytes.Buffer safe for the server's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// serveOnce runs afloat serve with args on a free loopback port, asks
// for /healthz with Host host, stops it with SIGINT and returns that
// answer's status and what it wrote to stderr.
func serveOnce(t *testing.T, host string, args ...string) (int, string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	var errOut syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- run(append([]string{"serve", "--addr", addr}, args...), strings.NewReader(""), io.Discard, &errOut)
	}()
	var res *http.Response
	for i := 0; ; i++ {
		req, _ := http.NewRequest("GET", "http://"+addr+"/healthz", nil)
		req.Host = host
		if res, err = http.DefaultClient.Do(req); err == nil {
			break
		}
		if i == 200 {
			t.Fatalf("the console never answered: %v; log %s", err, errOut.String())
		}
		time.Sleep(25 * time.Millisecond) // polling for a port, not measuring time
	}
	res.Body.Close()
	syscall.Kill(os.Getpid(), syscall.SIGINT)
	select {
	case status := <-done:
		if status != 0 {
			t.Fatalf("serve exited %d; log %s", status, errOut.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatal("serve did not stop on SIGINT")
	}
	return res.StatusCode, errOut.String()
}

// TestServeWarnsOfAllowRemoteOnLoopback: --allow-remote on a loopback
// --addr turns the Host check off (a DNS-rebinding page's Host is
// answered); the command says so on stderr and in the log, where before
// it said nothing. Without the flag: no warning, and such a Host is
// refused.
func TestServeWarnsOfAllowRemoteOnLoopback(t *testing.T) {
	status, errOut := serveOnce(t, "rebound.example:8080", "--allow-remote")
	if status != 200 {
		t.Errorf("with --allow-remote a foreign Host got %d: the warning would be wrong", status)
	}
	for _, want := range []string{"WARNING: --allow-remote with the loopback address", "DNS rebinding", `level=WARN msg="AllowRemote on a loopback address turns off the Host check`} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q: %s", want, errOut)
		}
	}
	status, errOut = serveOnce(t, "rebound.example:8080")
	if status != 403 || strings.Contains(errOut, "WARN") {
		t.Errorf("without --allow-remote: a foreign Host got %d (want 403), stderr %s", status, errOut)
	}
}

// TestVersion: afloat version and afloat --version print one line — the
// program's name, its module version, and the Go version it was built
// with — on stdout, exit 0.
func TestVersion(t *testing.T) {
	for _, args := range [][]string{{"version"}, {"--version"}, {"-version"}} {
		var out, errOut bytes.Buffer
		status := run(args, nil, &out, &errOut)
		line := out.String()
		if status != 0 || errOut.Len() != 0 || !strings.HasPrefix(line, "afloat ") || !strings.Contains(line, runtime.Version()) ||
			strings.Count(line, "\n") != 1 {
			t.Errorf("afloat %v: status %d, stdout %q, stderr %q; want one line \"afloat VERSION … %s …\"", args, status, line, errOut.String(), runtime.Version())
		}
	}
}

// TestVersionNamesTheCommit: the afloat binary built from a git checkout
// (-buildvcs=auto, as testBinary and make test-long build it) names the
// checkout's commit in afloat --version. Outside a git checkout it only
// checks the line's shape.
func TestVersionNamesTheCommit(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the afloat binary: make test-long runs it")
	}
	out, err := exec.Command(testBinary(t, ""), "--version").CombinedOutput()
	if err != nil || !strings.HasPrefix(string(out), "afloat ") || !strings.Contains(string(out), runtime.Version()) {
		t.Fatalf("afloat --version: %v, %q", err, out)
	}
	head, err := exec.Command("git", "rev-parse", "HEAD").Output()
	if err != nil {
		t.Logf("not a git checkout (%v): %q", err, out)
		return
	}
	if rev := strings.TrimSpace(string(head)); !strings.Contains(string(out), "revision "+rev) {
		t.Errorf("afloat --version printed %q: want the revision %s", out, rev)
	}
}
