package assignbench

import (
	"bytes"
	"context"
	"encoding/csv"
	"fmt"
	"io"
	"net/url"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/afloat/afloat/assign"
	"github.com/afloat/afloat/assign/internal/lua"
	"github.com/afloat/afloat/internal/redisurl"
)

// Config is a throughput run of afloat assign bench.
type Config struct {
	RedisURL string
	Pool     string        // emptied and refilled with PoolSize members
	PoolSize int           // 1 to 100,000
	Workers  int           // goroutines (and redis-benchmark clients), 1 to 10,000
	Duration time.Duration // of each afloat run, 100 ms to 1 h
	Batches  []int         // 0: Pick per call (auto-pipelined); n: PickBatch(n); each 0 to 10,000
	// Peer runs redis-benchmark after each afloat run: the same script by
	// SHA on the same server and pool, with Workers clients, -P batch for a
	// batch, and as many picks as afloat made.
	Peer           bool
	RedisBenchmark string // the redis-benchmark binary (default: from PATH)
	// Busy gives the pool what a pool of API keys carries, so that both
	// runs take the pick's busy path: of every ten members, three weighted
	// 2, 3 and 4, one cooling for an hour and one rate-limited (MaxRate a
	// second in bursts of MaxBurst, which no run uses up: every pick of it
	// spends its limit, none is refused, and both runs make the same picks
	// at the same cost). A weighted member's count is unlike the others',
	// so the spread after the run is no measure of levelness.
	Busy bool
}

// DefaultConfig returns the run: 100 members, 50 workers,
// 10 s, unbatched, on the pool "afloat-bench".
func DefaultConfig(redisURL string) Config {
	return Config{RedisURL: redisURL, Pool: "afloat-bench", PoolSize: 100, Workers: 50, Duration: 10 * time.Second, Batches: []int{0}}
}

// Validate checks the configuration, naming the field at fault. Its
// errors wrap assign.assign.ErrInvalid.
func (c Config) Validate() error {
	if err := redisurl.Check(c.RedisURL, assign.ErrInvalid); err != nil {
		return err
	}
	if err := assign.CheckPoolName(c.Pool); err != nil {
		return err
	}
	if c.PoolSize < 1 || c.PoolSize > 100000 {
		return fmt.Errorf("%w: pool size %d: want 1 to 100000", assign.ErrInvalid, c.PoolSize)
	}
	if c.Workers < 1 || c.Workers > 10000 {
		return fmt.Errorf("%w: workers %d: want 1 to 10000", assign.ErrInvalid, c.Workers)
	}
	if c.Duration < 100*time.Millisecond || c.Duration > time.Hour {
		return fmt.Errorf("%w: duration %v: want 100ms to 1h0m0s", assign.ErrInvalid, c.Duration)
	}
	if len(c.Batches) == 0 {
		return fmt.Errorf("%w: batch: want at least one batch size", assign.ErrInvalid)
	}
	for _, b := range c.Batches {
		if b < 0 || b > assign.MaxBatch {
			return fmt.Errorf("%w: batch %d: want 0 (no batching) to %d", assign.ErrInvalid, b, assign.MaxBatch)
		}
	}
	return nil
}

// Result is one run: afloat's or redis-benchmark's.
type Result struct {
	Runner     string        `json:"runner"` // "afloat" or "redis-benchmark"
	Workers    int           `json:"workers"`
	Batch      int           `json:"batch"` // 0: one pick a call; n: n picks a round trip
	Picks      int64         `json:"picks"`
	Errors     int64         `json:"errors"`
	Elapsed    time.Duration `json:"elapsed_ns"`
	PicksPerS  float64       `json:"picks_per_s"`
	P50        time.Duration `json:"p50_ns"` // of a call (a whole batch for a batch)
	P99        time.Duration `json:"p99_ns"`
	Spread     int64         `json:"max_minus_min"` // of the pool's counts after the run; −1 if they could not be read
	TotalCount int64         `json:"total_count"`   // of the pool's counts after the run; −1 if they could not be read
	// Error is why the run failed after it measured; Run returns it too.
	Error string `json:"error,omitempty"`
}

// Run fills the pool and runs the configured picks, each batch size for
// Duration, and redis-benchmark after each when asked. progress, if not
// nil, is told what runs. On an error, the results so far come back with
// it, the failed run's included when it got as far as measuring (its
// picks and errors, and what settle read): a bench that fails under
// faults still shows what it measured.
func Run(ctx context.Context, c Config, progress func(string)) ([]Result, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	if progress == nil {
		progress = func(string) {}
	}
	if c.Peer && c.RedisBenchmark == "" {
		path, err := exec.LookPath("redis-benchmark")
		if err != nil {
			return nil, fmt.Errorf("assignbench: --peer needs redis-benchmark on PATH (Debian: apt-get install redis-tools): %w", err)
		}
		c.RedisBenchmark = path
	}
	rc, err := redisurl.Dial(c.RedisURL, assign.ErrInvalid)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	client, err := assign.FromRueidis(rc)
	if err != nil {
		return nil, err
	}
	p, err := assign.New(client, c.Pool)
	if err != nil {
		return nil, err
	}
	if err := p.Delete(ctx); err != nil {
		return nil, err
	}
	names := make([]string, c.PoolSize)
	for i := range names {
		names[i] = fmt.Sprintf("member-%05d", i)
	}
	for chunk := range slices.Chunk(names, assign.MaxMembers) {
		if _, err := p.Add(ctx, 0, chunk...); err != nil {
			return nil, err
		}
	}
	if c.Busy {
		if err := busy(ctx, p, names); err != nil {
			return nil, err
		}
	}
	var out []Result
	for _, batch := range c.Batches {
		progress(fmt.Sprintf("afloat: %d workers, batch %d, %v", c.Workers, batch, c.Duration))
		r, err := benchAfloat(ctx, p, c, batch)
		out = appendMeasured(out, r, err)
		if err != nil {
			return out, err
		}
		if c.Peer {
			progress(fmt.Sprintf("redis-benchmark: %d clients, -P %d, %d picks", c.Workers, max(batch, 1), r.Picks))
			pr, err := benchPeer(ctx, p, c, batch, r.Picks)
			out = appendMeasured(out, pr, err)
			if err != nil {
				return out, err
			}
		}
	}
	return out, nil
}

// busy sets Config.Busy's weights, cooldowns and limits on members.
func busy(ctx context.Context, p *assign.Pool, members []string) error {
	var weighted [3][]string
	var cooling, limited []string
	for i, m := range members {
		switch i % 10 {
		case 0, 1, 2:
			weighted[i%10] = append(weighted[i%10], m)
		case 5:
			cooling = append(cooling, m)
		case 7:
			limited = append(limited, m)
		}
	}
	for i, ms := range weighted {
		for chunk := range slices.Chunk(ms, assign.MaxMembers) {
			if err := p.SetWeight(ctx, i+2, chunk...); err != nil {
				return err
			}
		}
	}
	for chunk := range slices.Chunk(cooling, assign.MaxMembers) {
		if _, err := p.CooldownFor(ctx, time.Hour, chunk...); err != nil {
			return err
		}
	}
	for chunk := range slices.Chunk(limited, assign.MaxMembers) {
		// The most a Limit allows (assign.Limit): a million a second, which
		// no bench uses up.
		if err := p.SetLimit(ctx, assign.Limit{Rate: 1_000_000, Per: time.Second, Burst: 1_000_000}, chunk...); err != nil {
			return err
		}
	}
	return nil
}

// appendMeasured appends a run's result if the run measured anything —
// a run that failed before it started has no Runner — with its error.
func appendMeasured(out []Result, r Result, err error) []Result {
	if r.Runner == "" {
		return out
	}
	if err != nil {
		r.Error = err.Error()
	}
	return append(out, r)
}

func benchAfloat(ctx context.Context, p *assign.Pool, c Config, batch int) (Result, error) {
	before, err := poolTotal(ctx, p)
	if err != nil {
		return Result{}, err
	}
	runCtx, cancel := context.WithTimeout(ctx, c.Duration)
	defer cancel()
	type worker struct {
		lat          []time.Duration
		picks, fails int64
	}
	ws := make([]worker, c.Workers)
	start := time.Now()
	var wg sync.WaitGroup
	for i := range ws {
		w := &ws[i]
		wg.Go(func() {
			// Picks use ctx, not runCtx: a pick under way when the time is
			// up finishes instead of ending ambiguous.
			for runCtx.Err() == nil {
				t0 := time.Now()
				if batch == 0 {
					if _, err := p.Pick(ctx); err != nil {
						w.fails++
					} else {
						w.picks++
					}
				} else {
					res, err := p.PickBatch(ctx, batch)
					if err != nil {
						w.fails += int64(batch)
					}
					for _, r := range res {
						if r.Err != nil {
							w.fails++
						} else {
							w.picks++
						}
					}
				}
				w.lat = append(w.lat, time.Since(t0))
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	r := Result{Runner: "afloat", Workers: c.Workers, Batch: batch, Elapsed: elapsed}
	var lat []time.Duration
	for _, w := range ws {
		r.Picks += w.picks
		r.Errors += w.fails
		lat = append(lat, w.lat...)
	}
	slices.Sort(lat)
	if len(lat) > 0 {
		r.P50, r.P99 = lat[len(lat)/2], lat[min(len(lat)-1, len(lat)*99/100)]
	}
	r.PicksPerS = float64(r.Picks) / elapsed.Seconds()
	if err := settle(ctx, p, &r, before); err != nil {
		return r, err
	}
	return r, nil
}

// settle reads the pool after a run: the spread of the counts, and the
// total, which must have grown by exactly the picks counted.
func settle(ctx context.Context, p *assign.Pool, r *Result, before int64) error {
	st, err := p.Status(ctx)
	if err != nil {
		r.Spread, r.TotalCount = -1, -1
		return err
	}
	lo, hi := int64(1<<62), int64(-1)
	for _, m := range st.Members {
		if m.Active {
			lo, hi, r.TotalCount = min(lo, m.Count), max(hi, m.Count), r.TotalCount+m.Count
		}
	}
	r.Spread = hi - lo
	if r.Runner == "afloat" && r.TotalCount-before != r.Picks {
		return fmt.Errorf("assignbench: the pool's counts grew by %d, but %d picks succeeded", r.TotalCount-before, r.Picks)
	}
	return nil
}

func poolTotal(ctx context.Context, p *assign.Pool) (int64, error) {
	st, err := p.Status(ctx)
	var sum int64
	for _, m := range st.Members {
		sum += m.Count
	}
	return sum, err
}

// benchPeer runs redis-benchmark with the pick script's SHA (loaded by a
// pick before) on the same keys.
func benchPeer(ctx context.Context, p *assign.Pool, c Config, batch int, picks int64) (Result, error) {
	before, err := poolTotal(ctx, p)
	if err != nil {
		return Result{}, err
	}
	if _, err := p.Pick(ctx); err != nil { // makes sure the server has the script
		return Result{}, err
	}
	before++
	u, _ := url.Parse(c.RedisURL)
	args := []string{"-h", u.Hostname(), "-p", u.Port(), "-c", strconv.Itoa(c.Workers),
		"-n", strconv.FormatInt(max(picks, 1000), 10), "--csv"}
	if batch > 0 {
		args = append(args, "-P", strconv.Itoa(batch))
	}
	if u.User != nil {
		if pw, ok := u.User.Password(); ok {
			args = append(args, "--user", u.User.Username(), "-a", pw)
		} else {
			args = append(args, "-a", u.User.Username())
		}
	}
	if db := strings.Trim(u.Path, "/"); db != "" {
		args = append(args, "--dbnum", db)
	}
	if u.Scheme == "rediss" {
		args = append(args, "--tls")
	}
	k := lua.PoolKeys(c.Pool)
	args = append(args, "EVALSHA", lua.Pick.SHA, "5", k.Active, k.Removed, k.Cooling, k.Meta, k.Settings)
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, c.RedisBenchmark, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return Result{}, fmt.Errorf("assignbench: redis-benchmark: %v: %s", err, strings.TrimSpace(stderr.String()+stdout.String()))
	}
	r, err := parseRedisBenchmarkCSV(stdout.Bytes())
	if err != nil {
		return Result{}, err
	}
	r.Runner, r.Workers, r.Batch = "redis-benchmark", c.Workers, batch
	r.Picks = max(picks, 1000)
	r.Elapsed = time.Duration(float64(r.Picks) / r.PicksPerS * float64(time.Second))
	if err := settle(ctx, p, &r, before); err != nil {
		return r, err
	}
	if r.TotalCount-before != r.Picks {
		return r, fmt.Errorf("assignbench: redis-benchmark made %d picks, the pool's counts grew by %d", r.Picks, r.TotalCount-before)
	}
	return r, nil
}

// parseRedisBenchmarkCSV reads redis-benchmark --csv: a header line, then
// "test","rps","avg_latency_ms","min_latency_ms","p50_latency_ms",
// "p95_latency_ms","p99_latency_ms","max_latency_ms".
func parseRedisBenchmarkCSV(b []byte) (Result, error) {
	recs, err := csv.NewReader(bytes.NewReader(b)).ReadAll()
	if err != nil || len(recs) < 2 || len(recs[1]) < 7 {
		return Result{}, fmt.Errorf("assignbench: unexpected redis-benchmark output %q", clip(b))
	}
	var r Result
	num := func(s string) float64 { f, _ := strconv.ParseFloat(s, 64); return f }
	r.PicksPerS = num(recs[1][1])
	r.P50 = time.Duration(num(recs[1][4]) * float64(time.Millisecond))
	r.P99 = time.Duration(num(recs[1][6]) * float64(time.Millisecond))
	if r.PicksPerS <= 0 {
		return Result{}, fmt.Errorf("assignbench: redis-benchmark reported %q requests per second", recs[1][1])
	}
	return r, nil
}

// Write prints results as a table, each redis-benchmark run followed
// by afloat's ratio to it.
func Write(w io.Writer, rs []Result) error {
	var table bytes.Buffer
	tw := tabwriter.NewWriter(&table, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "runner\tworkers\tbatch\tpicks\terrors\tpicks/s\tp50\tp99\tmax−min\tafloat ÷ peer")
	for i, r := range rs {
		ratio := ""
		if r.Runner == "redis-benchmark" && i > 0 && rs[i-1].Runner == "afloat" && rs[i-1].Batch == r.Batch {
			ratio = fmt.Sprintf("%.2f×", rs[i-1].PicksPerS/r.PicksPerS)
		}
		batch := "none"
		if r.Batch > 0 {
			batch = strconv.Itoa(r.Batch)
		}
		spread := "?" // the counts could not be read after the run
		if r.Spread >= 0 {
			spread = strconv.FormatInt(r.Spread, 10)
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%d\t%d\t%.0f\t%v\t%v\t%s\t%s\n", r.Runner, r.Workers, batch, r.Picks, r.Errors,
			r.PicksPerS, r.P50.Round(time.Microsecond), r.P99.Round(time.Microsecond), spread, ratio)
	}
	tw.Flush()
	// No blanks at the ends of lines (an empty last column leaves some).
	for line := range strings.Lines(table.String()) {
		if _, err := io.WriteString(w, strings.TrimRight(line, " \n")+"\n"); err != nil {
			return err
		}
	}
	return nil
}

// clip shortens output quoted in an error message.
func clip(b []byte) string {
	if len(b) > 60 {
		return string(b[:60]) + "…"
	}
	return string(b)
}
