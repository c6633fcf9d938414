package main

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/afloat/afloat/assign/assigntest"
)

func TestAssignCommands(t *testing.T) {
	srv := assigntest.Start(t)
	r := func(args ...string) []string {
		return append([]string{"assign", args[0], "--redis", srv.URL, "--pool", "cli"}, args[1:]...)
	}
	runSteps(t, []cliStep{
		{r("pick"), 2, `assign: unknown pool "cli"`},
		{r("add", "--count", "5", "b", "a"), 0, `added 2 to pool "cli"`},
		{r("add", "a", "c"), 0, `added 1 to pool "cli"; 1 already active (counts untouched)`},
		{r("pick"), 0, "c\n"},
		{r("pick", "--id", "req-1"), 0, "c\n"},
		{r("pick", "--id", "req-1"), 0, "c\n"},  // the same request again: the same member, counted once
		{r("pick", "--n", "3"), 0, "c\nc\nc\n"}, // c catches up with a and b at 5
		{r("remove", "a"), 0, `removed 1 from pool "cli"`},
		{r("remove", "a"), 2, `"a" is not an active member of pool "cli"; nothing was changed`},
		{r("restore", "--policy", "zero", "a"), 0, `restored 1 to pool "cli" at zero`},
		{r("list"), 0, "MEMBER  COUNT  STATE   FAILURES\na       0      active  0\nb       5      active  0\nc       5      active  0\n"},
		{r("restore", "--policy", "newest", "a"), 2, `--policy "newest": assign: invalid argument: restore policy "newest": want current-minimum, keep-history, zero`},
		{r("add", "--count", "-1", "x"), 2, "initial count -1: want an integer from 0 to 9007199254740992"},
		{r("add"), 2, "add: 0 members: want 1 to 10000"},
		{r("add", "--count", "1", "--at-minimum", "x"), 2, "--count does not go with --at-minimum"},
		{r("pick", "--n", "0"), 2, "batch of 0 picks: want 1 to 10000"},
		{r("pick", "--n", "2", "--id", "req-2"), 2, "--id works with --n 1 only"},
		{r("list", "--format", "xml"), 2, `format "xml": want table or jsonl`},
		{[]string{"assign", "pick", "--redis", "http://" + srv.Addr, "--pool", "cli"}, 2, "want redis://host:port[/db]"},
		{[]string{"assign", "pick", "--redis", srv.URL, "--pool", "no such"}, 2, `pool name "no such": want letters, digits and - _ . : only`},
		{[]string{"assign", "pick", "--redis", srv.URL}, 2, "--pool is required"},
		{[]string{"assign", "frobnicate"}, 2, `unknown subcommand "frobnicate"`},
	})
	status, out, _ := call(t, "", r("list", "--format", "jsonl")...)
	var m struct {
		Member string `json:"member"`
		Count  int    `json:"count"`
	}
	if status != 0 || json.Unmarshal([]byte(strings.SplitN(out, "\n", 2)[0]), &m) != nil || m.Member != "a" {
		t.Errorf("list --format jsonl: %d %q", status, out)
	}
}

// Cooldowns, weights, settings and status from the command line, on
// Redis's own clock (the cooldowns last an hour: nothing ends during the
// test), and the refusals of bad flags.
func TestAssignCooldownAndStatus(t *testing.T) {
	srv := assigntest.Start(t)
	r := func(args ...string) []string {
		return append([]string{"assign", args[0], "--redis", srv.URL, "--pool", "keys"}, args[1:]...)
	}
	runSteps(t, []cliStep{
		{r("cooldown", "--for", "1h", "k1"), 2, `assign: unknown pool "keys"`},
		{r("add", "--weight", "3", "k3"), 0, `added 1 to pool "keys"`},
		{r("add", "k1", "k2"), 0, `added 2 to pool "keys"`},
		{r("pick", "--n", "5"), 0, "k1\nk2\nk3\nk3\nk3\n"},
		{r("cooldown", "--for", "1h", "k1", "k2"), 0, `"k2" in pool "keys" cools down until `},
		{r("pick", "--n", "2"), 0, "k3\nk3\n"},
		{r("settings", "--evict-after", "2"), 0, `pool "keys": evict after 2 failures in a row (0: never), last resort fail`},
		{r("status"), 0, "evict after 2 failures in a row (0: never), last resort fail"},
		{r("status"), 0, "k3      5      3       -      0          active   0       0         -"},
		{r("status"), 0, "k1      1      1       -      0          cooling  0       0         20"},
		{r("list"), 0, "k2      1      cooling  0"},
		{r("cooldown", "--for", "1h", "k3"), 0, `"k3" in pool "keys" cools down until `},
		{r("pick"), 1, `every member is cooling down; the first comes back at 20`},
		{r("settings", "--last-resort", "earliest"), 0, "last resort earliest"},
		{r("pick"), 0, "k1\n"},
		{r("pick", "--sticky", "s1"), 0, "k1\n"}, // earliest back of all cooling
		{r("pick", "--sticky", ""), 2, `sticky key "": want 1 to 200 bytes of UTF-8`},
		{r("pick", "--sticky", "s1", "--id", "r1"), 2, "--id does not go with --sticky"},
		{r("pick", "--sticky", "s1", "--n", "2"), 2, "--n does not go with --sticky"},
		{r("limit", "--rate", "2", "--per", "1h", "k2"), 0, `limited 1 members of pool "keys" to 2 per 1h0m0s, bursts of 2`},
		{r("status"), 0, "k2      1      1       2/1h0m0s burst 2"},
		{r("limit", "--clear", "k2"), 0, `cleared the rate limits of 1 members of pool "keys"`},
		{r("limit", "k2"), 2, "--rate is required (or --clear, or --concurrency)"},
		{r("limit", "--rate", "0", "k2"), 2, "rate 0: want 1 to 1000000 requests"},
		{r("limit", "--rate", "1", "--per", "0s", "k2"), 2, "rate per 0s: want whole milliseconds from 1ms to 24h0m0s"},
		{r("limit", "--rate", "1", "--burst", "0", "k2"), 2, "burst 0: want 1 to 1000000"},
		{r("limit", "--clear", "--rate", "1", "k2"), 2, "--rate does not go with --clear"},
		{r("limit", "--rate", "1", "nobody"), 2, `"nobody" is not a member of pool "keys"`},
		{r("cooldown", "k1"), 2, "--for is required"},
		{r("cooldown", "--for", "0s", "k1"), 2, "cooldown 0s: want 1ms to 720h0m0s"},
		{r("cooldown", "--for", "soon", "k1"), 2, `--for "soon": want a duration such as 500ms`},
		{r("cooldown", "--for", "1s"), 2, "cooldown: 0 members: want 1 to 10000"},
		{r("cooldown", "--for", "1s", "k1", "nobody"), 2, `"nobody" is not an active member of pool "keys"; nothing was changed`},
		{r("add", "--weight", "0", "k4"), 2, "weight 0: want 1 to 1000"},
		{r("add", "--weight", "1001", "k4"), 2, "weight 1001: want 1 to 1000"},
		{r("status", "--format", "xml"), 2, `format "xml": want table or json`},
		{r("status", "extra"), 2, `unexpected argument "extra"`},
		{r("settings", "--evict-after", "-1"), 2, "evict after -1 failures: want 0 (never) to 1000"},
		{r("settings", "--last-resort", "any"), 2, `--last-resort "any": assign: invalid argument: last resort "any": want fail, earliest`},
		{[]string{"assign", "status", "--redis", srv.URL}, 2, "--pool is required"},
	})
	// Settings may come before a pool's members, and each flag changes
	// only its own setting.
	e := func(args ...string) []string {
		return append([]string{"assign", args[0], "--redis", srv.URL, "--pool", "early"}, args[1:]...)
	}
	runSteps(t, []cliStep{
		{e("settings", "--evict-after", "4"), 0, `pool "early": evict after 4 failures in a row (0: never), last resort fail`},
		{e("settings", "--last-resort", "earliest"), 0, `pool "early": evict after 4 failures in a row (0: never), last resort earliest`},
		{e("status"), 2, `assign: unknown pool "early"`},
	})
	// Concurrency caps: pick --lease leases the least-used member with
	// room; a full one is out until a lease ends.
	c := func(args ...string) []string {
		return append([]string{"assign", args[0], "--redis", srv.URL, "--pool", "caps"}, args[1:]...)
	}
	runSteps(t, []cliStep{
		{c("add", "a", "b"), 0, `added 2 to pool "caps"`},
		{c("limit", "--concurrency", "1", "a", "b"), 0, `capped 2 members of pool "caps" at 1 leases in flight`},
		{c("pick", "--lease", "1h"), 0, "a\t1\t20"},
		{c("pick", "--lease", "1h"), 0, "b\t2\t20"},
		{c("pick", "--lease", "1h"), 1, "every member is cooling down; the first comes back at 20"},
		{c("pick"), 1, "every member is cooling down"},
		{c("status"), 0, "a       1      1       -      1/1        full   0       0         20"},
		{c("status"), 0, "2 leases open (pick --lease), the first to end first:\nLEASE  MEMBER  DEADLINE\n1      a       20"},
		{c("release", "--member", "a", "1", "2"), 0, `released 1 leases of "a" in pool "caps"; 1 settled already`},
		{c("status"), 0, "a       1      1       -      0/1        active  0       0         -"},
		{c("pick", "--lease", "1h"), 0, "a\t3\t20"},
		{c("limit", "--concurrency", "0", "b"), 0, `cleared the concurrency caps of 1 members of pool "caps"`},
		{c("pick"), 0, "b\n"},
		{c("limit", "--concurrency", "2", "--rate", "5", "b"), 0, `limited 1 members of pool "caps" to 5 per 1s, bursts of 5`},
		{c("limit", "--concurrency", "-1", "a"), 2, "--concurrency -1: want 1 to 1000000 leases in flight, or 0 for no cap"},
		{c("limit", "--concurrency", "1000001", "a"), 2, "--concurrency 1000001: want 1 to 1000000"},
		{c("limit", "--concurrency", "1", "--per", "1m", "a"), 2, "--per only with --rate"},
		{c("limit", "--concurrency", "1", "nobody"), 2, `"nobody" is not a member of pool "caps"`},
		{c("pick", "--lease", "0s"), 2, "--lease 0s: want 1ms to 24h0m0s"},
		{c("pick", "--lease", "1s", "--n", "2"), 2, "--n does not go with --lease"},
		{c("pick", "--lease", "1s", "--sticky", "s"), 2, "--sticky does not go with --lease"},
		{c("release", "--member", "", "1"), 2, `member name "": want 1 to 512 bytes of UTF-8`},
		{c("release", "--member", "a", "x"), 2, `lease id "x": want the id PickLease returned`},
	})

	status, out, _ := call(t, "", r("status", "--format", "json")...)
	var st struct {
		Pool     string
		Settings struct {
			EvictAfter int    `json:"evict_after"`
			LastResort string `json:"last_resort"`
		}
		Members []struct {
			Member       string
			Count        int
			Weight       int
			CoolingUntil time.Time `json:"cooling_until"`
		}
	}
	if status != 0 || json.Unmarshal([]byte(out), &st) != nil || st.Pool != "keys" || st.Settings.EvictAfter != 2 ||
		st.Settings.LastResort != "earliest" || len(st.Members) != 3 || st.Members[2].Member != "k3" ||
		st.Members[2].Weight != 3 || st.Members[2].CoolingUntil.IsZero() {
		t.Errorf("status --format json: %d %q: %+v", status, out, st)
	}
}

func TestAssignBench(t *testing.T) {
	srv := assigntest.Start(t)
	args := []string{"assign", "bench", "--redis", srv.URL, "--pool-size", "10", "--workers", "4", "--duration", "200ms", "--batch", "0,4", "--json"}
	if _, err := exec.LookPath("redis-benchmark"); err == nil {
		args = append(args, "--peer")
	} else if os.Getenv("AFLOAT_REQUIRE_REDIS") != "" {
		t.Fatal("no redis-benchmark on PATH (Debian's redis-tools, which redis-server brings)")
	}
	status, out, errOut := call(t, "", args...)
	if status != 0 {
		t.Fatalf("status %d: %s", status, errOut)
	}
	var rs []struct {
		Runner    string  `json:"runner"`
		Batch     int     `json:"batch"`
		Picks     int64   `json:"picks"`
		Errors    int64   `json:"errors"`
		PicksPerS float64 `json:"picks_per_s"`
		Spread    int64   `json:"max_minus_min"`
	}
	if err := json.Unmarshal([]byte(out), &rs); err != nil {
		t.Fatal(err)
	}
	for _, r := range rs {
		if r.Picks == 0 || r.Errors != 0 || r.PicksPerS <= 0 || r.Spread > 1 {
			t.Errorf("%+v: want picks, no errors, max−min ≤ 1", r)
		}
	}
	if len(rs) != 2 && len(rs) != 4 {
		t.Fatalf("%d results", len(rs))
	}
	// A busy pool: weights, a cooling member and a limited one on.
	busy := []string{"assign", "bench", "--redis", srv.URL, "--pool", "busy", "--pool-size", "10", "--workers", "4", "--duration", "100ms", "--batch", "0", "--busy", "--json"}
	status, out, errOut = call(t, "", busy...)
	rs = nil
	if err := json.Unmarshal([]byte(out), &rs); status != 0 || err != nil || len(rs) != 1 || rs[0].Picks == 0 || rs[0].Errors != 0 {
		t.Fatalf("bench --busy: %d %q %q %v", status, out, errOut, err)
	}
	status, out, _ = call(t, "", "assign", "status", "--redis", srv.URL, "--pool", "busy")
	if status != 0 || !strings.Contains(out, "member-00005  0      1       -") || !strings.Contains(out, "cooling") ||
		!strings.Contains(out, "member-00002") || !strings.Contains(out, "1000000/1s burst 1000000") {
		t.Errorf("the busy pool after the bench:\n%s", out)
	}
	for i, step := range []struct {
		args []string
		want string
	}{
		{[]string{"--workers", "0"}, "workers 0: want 1 to 10000"},
		{[]string{"--pool-size", "-1"}, "pool size -1: want 1 to 100000"},
		{[]string{"--duration", "1ms"}, "duration 1ms: want 100ms to 1h0m0s"},
		{[]string{"--batch", "0,x"}, "want comma-separated batch sizes from 0 (none) to 10000"},
	} {
		status, _, errOut := call(t, "", append([]string{"assign", "bench", "--redis", srv.URL}, step.args...)...)
		if status != 2 || !strings.Contains(errOut, step.want) {
			t.Errorf("step %d: %v: status %d, %q; want 2 and %q", i, step.args, status, errOut, step.want)
		}
	}
}

func TestProxyCheck(t *testing.T) {
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer target.Close()
	// The target itself acts as a proxy that answers 200 to anything: a
	// healthy candidate.
	list := filepath.Join(t.TempDir(), "proxies.txt")
	os.WriteFile(list, []byte(target.Listener.Addr().String()+"\nnonsense\n127.0.0.1:1\n"), 0o644)
	status, out, errOut := call(t, "", "proxy", "check", "--probe", "http://127.0.0.1:9/health", "--timeout", "2s", list)
	if status != 0 || !strings.Contains(out, "1 of 2 healthy") || !strings.Contains(errOut, `skipped line 2: "nonsense"`) {
		t.Fatalf("status %d\n%s\n%s", status, out, errOut)
	}
	for i, step := range []struct {
		args []string
		want string
	}{
		{[]string{list}, "--probe is required"},
		{[]string{"--probe", "ftp://x", list}, `probe URL "ftp://x"`},
		{[]string{"--probe", "http://x/", "--timeout", "0s", list}, "probe timeout 0s: want 10ms to 1m0s"},
		{[]string{"--probe", "http://x/"}, "want one FILE"},
		{[]string{"--probe", "http://x/", "--pool", "p", "--redis", "", list}, "--redis is required (or set AFLOAT_REDIS_URL)"},
	} {
		status, _, errOut := call(t, "", append([]string{"proxy", "check"}, step.args...)...)
		if status != 2 || !strings.Contains(errOut, step.want) {
			t.Errorf("step %d: %v: status %d, %q; want 2 and %q", i, step.args, status, errOut, step.want)
		}
	}
}

// TestProxyCheckRefusesAListWithoutProxies: a list in which no line is a
// proxy — every line bad, or nothing but blanks and comments — is a refused
// input file (exit 2) that names the file and lists the bad lines, not a
// check of nothing that exits 0.
func TestProxyCheckRefusesAListWithoutProxies(t *testing.T) {
	dir := t.TempDir()
	file := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for i, tc := range []struct {
		path, stdin string
		want        []string
	}{
		{file("bad.txt", "nonsense\n# a comment\nftp://x:1\n127.0.0.1:99999\n"), "",
			[]string{"bad.txt: assign: invalid argument: proxy list: no valid proxy line: 3 bad lines", `line 1: "nonsense"`, `line 3: "ftp://x:1"`, `line 4: "127.0.0.1:99999"`}},
		{file("empty.txt", ""), "", []string{"empty.txt: assign: invalid argument: proxy list: no proxy line", "want one host:port or URL a line"}},
		{file("comments.txt", "# none yet\n\n"), "", []string{"comments.txt: assign: invalid argument: proxy list: no proxy line"}},
		{"-", "nonsense\n", []string{"standard input: assign: invalid argument: proxy list: no valid proxy line: 1 bad line", `line 1: "nonsense"`}},
	} {
		status, out, errOut := call(t, tc.stdin, "proxy", "check", "--probe", "http://127.0.0.1:9/", tc.path)
		if status != 2 || out != "" {
			t.Errorf("step %d: proxy check %s: status %d, stdout %q, stderr %q; want 2 and nothing printed", i, filepath.Base(tc.path), status, out, errOut)
		}
		for _, w := range append(tc.want, "Run 'afloat proxy check --help' for usage.") {
			if !strings.Contains(errOut, w) {
				t.Errorf("step %d: proxy check %s: stderr %q does not mention %q", i, filepath.Base(tc.path), errOut, w)
			}
		}
	}
}

// TestAssignBenchUnderFaults: redis dies while a bench runs. The bench
// fails (exit 1), and still prints what it measured — picks, and the
// errors the dead server caused — before its error.
func TestAssignBenchUnderFaults(t *testing.T) {
	srv := assigntest.Start(t)
	for _, asJSON := range []bool{true, false} {
		if !asJSON {
			srv.Restart() // up again for the second run
		}
		// When the run starts (its progress line), stop the server as soon
		// as every member of the pool has been picked once.
		stderr := &triggerWriter{on: "afloat: 2 workers", do: func() {
			for range 2000 {
				if n, err := srv.Do("ZCOUNT", "afloat:assign:{afloat-bench}:counts", "1", "+inf"); err == nil && n == ":5" {
					break
				}
				time.Sleep(time.Millisecond) // polling for picks, not measuring time
			}
			srv.Stop()
		}}
		args := []string{"assign", "bench", "--redis", srv.URL, "--pool-size", "5", "--workers", "2", "--duration", "1s"}
		if asJSON {
			args = append(args, "--json")
		}
		var stdout bytes.Buffer
		status := run(args, strings.NewReader(""), &stdout, stderr)
		stderr.wait()
		out, errOut := stdout.String(), stderr.String()
		if status != 1 || !strings.Contains(errOut, "afloat assign bench: ") {
			t.Fatalf("json %v: status %d, stdout %q, stderr %q; want 1 and the error", asJSON, status, out, errOut)
		}
		if asJSON {
			var rs []struct {
				Runner string `json:"runner"`
				Picks  int64  `json:"picks"`
				Errors int64  `json:"errors"`
				Spread int64  `json:"max_minus_min"`
				Error  string `json:"error"`
			}
			if err := json.Unmarshal([]byte(out), &rs); err != nil || len(rs) != 1 {
				t.Fatalf("stdout %q: %v; want the one run's result", out, err)
			}
			if r := rs[0]; r.Runner != "afloat" || r.Picks == 0 || r.Errors == 0 || r.Spread != -1 || r.Error == "" {
				t.Errorf("%+v: want afloat's run with its picks, its errors, the spread unread (-1) and the error", r)
			}
			continue
		}
		// runner workers batch picks errors picks/s p50 p99 max−min
		lines := strings.Split(out, "\n")
		row := strings.Fields(lines[min(1, len(lines)-1)])
		if !strings.HasPrefix(out, "runner") || len(row) != 9 || row[0] != "afloat" || row[3] == "0" || row[4] == "0" || row[8] != "?" {
			t.Errorf("stdout %q: want the results table, a row with picks and errors and max−min unknown", out)
		}
	}
}

// triggerWriter is a stderr that runs do, once, in a goroutine, when a
// write contains on.
type triggerWriter struct {
	syncBuffer
	on   string
	do   func()
	once sync.Once
	done sync.WaitGroup
}

func (w *triggerWriter) Write(p []byte) (int, error) {
	if strings.Contains(string(p), w.on) {
		w.once.Do(func() { w.done.Go(w.do) })
	}
	return w.syncBuffer.Write(p)
}

func (w *triggerWriter) wait() { w.done.Wait() }

// The least-in-flight variant from the command line: members added to its
// leases, leases acquired on the member with the fewest open and released
// by id (a second release is no error, and says so), the view of what is
// in flight, and the refusals of bad flags.
func TestAssignLeasesCommands(t *testing.T) {
	srv := assigntest.Start(t)
	r := func(args ...string) []string {
		return append([]string{"assign", args[0], "--redis", srv.URL, "--pool", "inflight"}, args[1:]...)
	}
	run := func(want int, args ...string) string {
		t.Helper()
		status, out, errOut := call(t, "", args...)
		if status != want {
			t.Fatalf("afloat %s: status %d, stdout %q, stderr %q; want %d", strings.Join(args[1:], " "), status, out, errOut, want)
		}
		if status != 0 {
			return errOut
		}
		return out
	}
	if s := run(2, r("leases")...); !strings.Contains(s, `unknown pool "inflight"`) {
		t.Errorf("leases before any member: %q", s)
	}
	if s := run(0, r("leases", "--add", "b", "a")...); !strings.Contains(s, `added 2 to the leases of pool "inflight"; 0 there already`) {
		t.Errorf("leases --add: %q", s)
	}
	lease := func() (member, id string) {
		t.Helper()
		f := strings.Split(strings.TrimSuffix(run(0, r("acquire", "--ttl", "1h")...), "\n"), "\t")
		if len(f) != 3 {
			t.Fatalf("acquire printed %q, want member, id and deadline", f)
		}
		if _, err := time.Parse(time.RFC3339Nano, f[2]); err != nil {
			t.Fatalf("acquire's deadline %q: %v", f[2], err)
		}
		return f[0], f[1]
	}
	m1, id1 := lease()
	m2, _ := lease()
	if m1 != "a" || m2 != "b" {
		t.Fatalf("two leases went to %s and %s, want a then b (fewest open, ties by name)", m1, m2)
	}
	if s := run(0, r("leases")...); !strings.Contains(s, "2 leases open") || !strings.Contains(s, "MEMBER  IN FLIGHT  STATE\na       1          active\nb       1          active\n") {
		t.Errorf("leases with two open:\n%s", s)
	}
	if s := run(0, r("release", id1)...); !strings.Contains(s, `released 1 leases of pool "inflight"; 0 settled already`) {
		t.Errorf("release: %q", s)
	}
	if s := run(0, r("release", id1)...); !strings.Contains(s, "released 0 leases") || !strings.Contains(s, "1 settled already") {
		t.Errorf("release again: %q", s)
	}
	var in struct {
		Pool    string `json:"pool"`
		Open    int    `json:"open"`
		Members []struct {
			Member   string `json:"member"`
			InFlight int    `json:"in_flight"`
			Active   bool   `json:"active"`
		} `json:"members"`
	}
	if err := json.Unmarshal([]byte(run(0, r("leases", "--format", "json")...)), &in); err != nil || in.Pool != "inflight" || in.Open != 1 ||
		len(in.Members) != 2 || in.Members[0].Member != "a" || in.Members[0].InFlight != 0 || in.Members[1].InFlight != 1 {
		t.Errorf("leases --format json: %+v %v", in, err)
	}
	run(0, r("leases", "--remove", "a")...)
	if m, _ := lease(); m != "b" {
		t.Errorf("with a removed the lease went to %s, want b", m)
	}
	for i, step := range []struct {
		args []string
		out  string
	}{
		{r("acquire"), "--ttl is required: want a duration such as 30s"},
		{r("acquire", "--ttl", "0s"), "--ttl 0s: want 1ms to 24h0m0s"},
		{r("acquire", "--ttl", "25h"), "--ttl 25h0m0s: want 1ms to 24h0m0s"},
		{r("release"), "release: 0 lease ids: want 1 to 10000"},
		{r("release", "xyz"), `lease id "xyz": want the id PickLeastInFlight returned`},
		{r("leases", "a"), `members given without --add or --remove: ["a"]`},
		{r("leases", "--add", "--remove", "a"), "does not go with"},
		{r("leases", "--add"), "add: 0 members: want 1 to 10000"},
		{r("leases", "--format", "xml"), `format "xml": want table or json`},
		{[]string{"assign", "acquire", "--redis", srv.URL, "--ttl", "1s"}, "--pool is required"},
	} {
		if s := run(2, step.args...); !strings.Contains(s, step.out) {
			t.Errorf("step %d: afloat %s: %q, want %q", i, strings.Join(step.args[1:], " "), s, step.out)
		}
	}
}

// cliStep is one afloat command line and what it must answer.
type cliStep struct {
	args   []string
	status int
	out    string // in stdout (or stderr when the status is not 0)
}

// runSteps runs each step's command in turn and checks its exit status
// and output.
func runSteps(t *testing.T, steps []cliStep) {
	t.Helper()
	for i, step := range steps {
		status, out, errOut := call(t, "", step.args...)
		got := out
		if step.status != 0 {
			got = errOut
		}
		if status != step.status || !strings.Contains(got, step.out) {
			t.Errorf("step %d: afloat %s: status %d, stdout %q, stderr %q; want %d and %q", i, strings.Join(step.args[1:], " "), status, out, errOut, step.status, step.out)
		}
	}
}
