package scale

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestWatch steps Fault's judgement through scripted polls on fixed
// instants: a fault that costs no lease, one that costs some for a
// while, one whose action outlasts the loss, and one never recovered.
func TestWatch(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	cov := func(ms, leased int) Coverage {
		return Coverage{At: at(ms), Leased: []int{10, leased}, Tenants: 10}
	}
	type poll struct {
		cv      Coverage
		actDone int // ms; −1 while the action runs
	}
	for i, tc := range []struct {
		polls     []poll
		decidedAt int // index of the poll that decides, −1 for none
		want      Recovery
	}{
		{ // nothing lost: decided one settle after the action's end
			polls:     []poll{{cov(0, 10), 0}, {cov(1000, 10), 0}, {cov(2000, 10), 0}, {cov(2500, 10), 0}},
			decidedAt: 2,
			want:      Recovery{Recovered: true, Worst: cov(0, 10)},
		},
		{ // lost from 500 ms to 1200 ms: valid again at 1500, settled 2 s later
			polls:     []poll{{cov(0, 10), 0}, {cov(500, 3), 0}, {cov(1000, 6), 0}, {cov(1500, 10), 0}, {cov(3000, 10), 0}, {cov(3500, 10), 0}},
			decidedAt: 5,
			want:      Recovery{Recovered: true, Lost: true, Took: 1500 * time.Millisecond, Worst: cov(500, 3)},
		},
		{ // valid again while the action still runs: settled from its end
			polls:     []poll{{cov(0, 4), -1}, {cov(500, 10), -1}, {cov(3000, 10), 3000}, {cov(4000, 10), 3000}, {cov(5000, 10), 3000}},
			decidedAt: 4,
			want:      Recovery{Recovered: true, Lost: true, Took: 500 * time.Millisecond, Worst: cov(0, 4)},
		},
		{ // never valid again: decided at the bound
			polls:     []poll{{cov(0, 10), 0}, {cov(4000, 0), 0}, {cov(9000, 1), 0}, {cov(10000, 1), 0}},
			decidedAt: 3,
			want:      Recovery{Lost: true, Took: 10 * time.Second, Worst: cov(4000, 0)},
		},
	} {
		var r Recovery
		w := &watch{t0: t0, settle: 2 * time.Second, bound: 10 * time.Second, r: &r}
		decided := -1
		for k, p := range tc.polls {
			var done time.Time
			if p.actDone >= 0 {
				done = at(p.actDone)
			}
			if w.observe(p.cv, done) {
				decided = k
				break
			}
		}
		if decided != tc.decidedAt {
			t.Errorf("step %d: decided at poll %d, want %d", i, decided, tc.decidedAt)
		}
		if r.Recovered != tc.want.Recovered || r.Lost != tc.want.Lost || r.Took != tc.want.Took || r.Worst.Pairs() != tc.want.Worst.Pairs() {
			t.Errorf("step %d: recovered %v lost %v took %v worst %d, want %v %v %v %d", i,
				r.Recovered, r.Lost, r.Took, r.Worst.Pairs(), tc.want.Recovered, tc.want.Lost, tc.want.Took, tc.want.Worst.Pairs())
		}
	}
}

// TestQuantileAgainstSamples compares the histogram's quantile with the
// samples' own: it must fall in the bucket that holds the sample of that
// rank.
func TestQuantileAgainstSamples(t *testing.T) {
	bounds := []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, math.Inf(1)}
	rng := rand.New(rand.NewPCG(1, 2))
	for step := range 200 {
		n := 1 + rng.IntN(2000)
		samples := make([]float64, n)
		h := Histogram{Bounds: bounds, Counts: make([]float64, len(bounds)), Count: float64(n)}
		for i := range samples {
			samples[i] = math.Exp(rng.NormFloat64()*2 - 4)
			for b, le := range bounds {
				if samples[i] <= le {
					h.Counts[b]++
				}
			}
		}
		slices.Sort(samples)
		for _, q := range []float64{0.5, 0.9, 0.99} {
			exact := samples[max(0, int(math.Ceil(q*float64(n)))-1)]
			b := 0
			for exact > bounds[b] {
				b++
			}
			lo, hi := 0.0, bounds[b]
			if b > 0 {
				lo = bounds[b-1]
			}
			if math.IsInf(hi, 1) {
				hi = lo
			}
			if got := h.Quantile(q); got < lo || got > hi {
				t.Errorf("step %d: Quantile(%v) of %d samples = %v, want within [%v, %v] (the sample's %v)", step, q, n, got, lo, hi, exact)
			}
		}
	}
	if q := (Histogram{}).Quantile(0.99); !math.IsNaN(q) {
		t.Errorf("Quantile of an empty histogram = %v, want NaN", q)
	}
}

// TestHistogramSub: what was observed between two scrapes, and a
// process restarted in between (counts fell) taken whole.
func TestHistogramSub(t *testing.T) {
	b := []float64{1, math.Inf(1)}
	old := Histogram{Bounds: b, Counts: []float64{5, 8}, Count: 8, Sum: 4}
	now := Histogram{Bounds: b, Counts: []float64{7, 12}, Count: 12, Sum: 9}
	if d := now.Sub(old); !slices.Equal(d.Counts, []float64{2, 4}) || d.Count != 4 || d.Sum != 5 {
		t.Errorf("Sub = %+v, want counts [2 4], count 4, sum 5", d)
	}
	restarted := Histogram{Bounds: b, Counts: []float64{1, 2}, Count: 2, Sum: 1}
	if d := restarted.Sub(old); d.Count != 2 {
		t.Errorf("Sub after a restart = %+v, want the new process's whole", d)
	}
	if s := old.Add(now); !slices.Equal(s.Counts, []float64{12, 20}) || s.Count != 20 {
		t.Errorf("Add = %+v, want counts [12 20], count 20", s)
	}
}

// agentMetricsText is a region agent's GET /metrics as its registry
// writes it, cut to the families the harness reads and one it skips.
const agentMetricsText = `# HELP afloat_quota_region_balance_tokens Tokens in the region's bucket.
# TYPE afloat_quota_region_balance_tokens gauge
afloat_quota_region_balance_tokens{region="eu",tenant="t00000"} 200
afloat_quota_region_grants_total{outcome="accepted",region="eu"} 1500
afloat_quota_region_renewal_duration_seconds_bucket{region="eu",result="granted",le="0.01"} 900
afloat_quota_region_renewal_duration_seconds_bucket{region="eu",result="granted",le="0.1"} 1000
afloat_quota_region_renewal_duration_seconds_bucket{region="eu",result="granted",le="+Inf"} 1000
afloat_quota_region_renewal_duration_seconds_sum{region="eu",result="granted"} 12.5
afloat_quota_region_renewal_duration_seconds_count{region="eu",result="granted"} 1000
afloat_quota_region_renewal_duration_seconds_bucket{region="eu",result="failed",le="0.01"} 0
afloat_quota_region_renewal_duration_seconds_bucket{region="eu",result="failed",le="0.1"} 0
afloat_quota_region_renewal_duration_seconds_bucket{region="eu",result="failed",le="+Inf"} 3
afloat_quota_region_renewal_duration_seconds_sum{region="eu",result="failed"} 6
afloat_quota_region_renewal_duration_seconds_count{region="eu",result="failed"} 3
`

// TestScrapeAgent reads the renewal histograms (asked for without gzip)
// and the run counters from a server that answers as an agent does.
func TestScrapeAgent(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/status" {
			w.Write([]byte(`{"region":"eu","tenants":[],"run":{"renewals":4839,"renew_failures":682245,"installed":4800,"kept":3}}`)) //nolint:errcheck
			return
		}
		if r.URL.Path != "/metrics" || r.Header.Get("Accept-Encoding") != "identity" {
			http.Error(w, "want GET /metrics, Accept-Encoding: identity", 400)
			return
		}
		w.Write([]byte(agentMetricsText)) //nolint:errcheck
	}))
	defer srv.Close()
	cfg := DefaultConfig("afloat", "etcd", t.TempDir())
	cfg.Tenants = 1
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	c.AgentURLs[0] = srv.URL
	m, err := c.ScrapeAgent(context.Background(), 0)
	if err != nil {
		t.Fatal(err)
	}
	g := m.Renewals["granted"]
	if !slices.Equal(g.Bounds, []float64{0.01, 0.1, math.Inf(1)}) || !slices.Equal(g.Counts, []float64{900, 1000, 1000}) || g.Count != 1000 || g.Sum != 12.5 {
		t.Errorf("granted renewals %+v, want the text's", g)
	}
	if f := m.Renewals["failed"]; f.Count != 3 || f.Counts[2] != 3 {
		t.Errorf("failed renewals %+v, want 3", f)
	}
	run, _, err := c.AgentRun(context.Background(), 0)
	if err != nil || run.Renewals != 4839 || run.RenewFailures != 682245 || run.Kept != 3 {
		t.Errorf("AgentRun = %+v, %v: want the status's run counters", run, err)
	}
	if m.Bytes != int64(len(agentMetricsText)) {
		t.Errorf("scrape of %d bytes, want %d", m.Bytes, len(agentMetricsText))
	}
}

func TestLabel(t *testing.T) {
	for i, tc := range []struct{ labels, name, want string }{
		{`{region="eu",result="granted",le="0.01"}`, "le", "0.01"},
		{`{region="eu",result="granted"}`, "result", "granted"},
		{`{outcome="accepted",region="eu"}`, "region", "eu"},
		{`{xregion="ap",region="eu"}`, "region", "eu"},
		{`{region="eu"}`, "tenant", ""},
	} {
		if got := label(tc.labels, tc.name); got != tc.want {
			t.Errorf("step %d: label(%s, %s) = %q, want %q", i, tc.labels, tc.name, got, tc.want)
		}
	}
}

// TestProcessSignals runs a process through what the faults do to one:
// a pause (its state in /proc is stopped), a resume, SIGTERM; and kill -9.
func TestProcessSignals(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh")
	}
	dir := t.TempDir()
	p := &Process{Name: "sleeper", Log: dir + "/sleeper.stderr", bin: sh, args: []string{"-c", "exec sleep 60"}}
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	if err := p.Start(); err == nil {
		t.Error("a second Start of a running process: no error")
	}
	state := func() string {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.Pid()))
		if err != nil {
			return err.Error()
		}
		return strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))[0]
	}
	if err := p.Pause(); err != nil {
		t.Fatal(err)
	}
	// The kernel stops the process asynchronously: wait for it (bounded).
	for deadline := time.Now().Add(5 * time.Second); state() != "T" && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	if s := state(); s != "T" {
		t.Errorf("after SIGSTOP the state is %q, want T", s)
	}
	u, err := p.Usage()
	if err != nil || u.RSS <= 0 || u.PeakRSS < u.RSS {
		t.Errorf("Usage = %+v, %v: want a resident size and a peak at least as large", u, err)
	}
	// Term resumes a paused process first, or SIGTERM would wait.
	if err := p.Term(5 * time.Second); err != nil {
		t.Errorf("Term: %v", err)
	}
	if p.Running() || p.Pid() != 0 {
		t.Error("running after Term")
	}
	if err := p.Pause(); err != ErrNotRunning {
		t.Errorf("Pause of an ended process: %v, want ErrNotRunning", err)
	}
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	p.Kill()
	if p.Running() {
		t.Error("running after Kill")
	}
	log, _ := os.ReadFile(p.Log)
	if n := strings.Count(string(log), "=== scale: sleeper started"); n != 2 {
		t.Errorf("the log names %d starts, want 2:\n%s", n, log)
	}
}

// TestReadyzLeased reads how far an agent is from its GET /readyz, as
// the agent writes it, and falls back when it says nothing.
func TestReadyzLeased(t *testing.T) {
	for i, tc := range []struct {
		progress string
		want     int
		ok       bool
	}{
		{"7,200 of 10,000 tenants leased", 7200, true},
		{"100,000 of 100,000 tenants leased", 100_000, true},
		{"0 of 3 tenants leased", 0, true},
		{"", 0, false},
		{"standing by", 0, false},
	} {
		n, ok := readyz{Progress: tc.progress}.leased()
		if n != tc.want || ok != tc.ok {
			t.Errorf("step %d: leased() of %q = %d, %v; want %d, %v", i, tc.progress, n, ok, tc.want, tc.ok)
		}
	}
}
