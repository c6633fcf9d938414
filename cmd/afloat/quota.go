package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/afloat/afloat/quota"
	"github.com/afloat/afloat/quota/chaos"
	"github.com/afloat/afloat/quota/eventlog"
)

// chaosFlags are the flags chaos and sim share.
type chaosFlags struct {
	seed     seedFlag
	mode     string
	duration time.Duration
	faults   string
}

func (f *chaosFlags) register(c *command) {
	f.seed = 1
	c.Var(&f.seed, "seed", "seed of the run, `S` from 0 to 4294967295; a seed replays exactly")
	c.StringVar(&f.mode, "mode", "hard", "hard (admissions ≤ R·Δ + B) or best-effort (≤ R·Δ + B + 3·E, E = 100)")
	c.DurationVar(&f.duration, "duration", chaos.DefaultDuration, "virtual time to run, 1s to 24h (0 is refused, not the default)")
	c.StringVar(&f.faults, "faults", "all", "faults to inject, comma-separated: shift, partition, crash, skew, dup; or all, none")
}

func (f *chaosFlags) config() (chaos.Config, error) {
	// The package takes a zero Duration for its default; here 0 is a typo.
	if f.duration < chaos.MinDuration || f.duration > chaos.MaxDuration {
		return chaos.Config{}, fmt.Errorf("--duration %v: want 1s to 24h", f.duration)
	}
	mode, err := quota.ParseMode(f.mode)
	if err != nil {
		return chaos.Config{}, fmt.Errorf("--mode: %w", err)
	}
	faults, err := chaos.ParseFaults(f.faults)
	if err != nil {
		return chaos.Config{}, fmt.Errorf("--faults: %w", err)
	}
	cfg := chaos.Config{Seed: uint32(f.seed), Mode: mode, Duration: f.duration, Faults: faults, NoFaults: faults == 0}
	if err := cfg.Validate(); err != nil {
		return chaos.Config{}, err
	}
	return cfg, nil
}

func printChaosNotes(w io.Writer) {
	fmt.Fprint(w, `
The tenant is the seed's: R = 500 tokens/s (30,000 a minute), B = 6,000,
regions eu, us and ap, leases of 10 s with a 500 ms skew margin. Every log
line has t_ns (virtual time), ev and the fields of its kind (see
docs/quota.md); the last line is {"ev":"summary",...}. The exit status is
1 when the checker found a violation.
`)
}

func runQuotaChaos(c *command, args []string) int {
	var (
		f       chaosFlags
		logPath string
		seeds   string
		workers int
	)
	f.register(c)
	c.StringVar(&logPath, "log", "", "write the event log to `FILE` instead of standard output (the summary stays there)")
	c.StringVar(&seeds, "seeds", "", "run seeds `A-B` in parallel and print the worst; no log; not with --seed")
	c.IntVar(&workers, "workers", 0, "goroutines for --seeds, 1 to 256 (default: one per CPU)")
	if status, ok := c.parse(args); !ok {
		return status
	}
	fail := c.usage
	if c.given("seed") && c.given("seeds") {
		return fail(errors.New("--seed and --seeds: give one seed or a range of seeds, not both"))
	}
	cfg, err := f.config()
	if err != nil {
		return fail(err)
	}
	if workers < 0 || workers > 256 {
		return fail(fmt.Errorf("--workers %d: want 1 to 256 (or 0 for one per CPU)", workers))
	}
	if c.given("workers") && !c.given("seeds") {
		return fail(errors.New("--workers needs --seeds: one seed runs on one goroutine"))
	}
	if seeds != "" {
		if logPath != "" {
			return fail(fmt.Errorf("--log and --seeds: a log is one seed's; drop one"))
		}
		from, to, err := parseSeeds(seeds)
		if err != nil {
			return fail(err)
		}
		m, err := chaos.RunMany(cfg, from, to, workers)
		if err != nil {
			return c.failed(err)
		}
		return writeEvent(c.stdout, "summary", m, m.Failed == 0)
	}

	logOut := c.stdout
	if logPath != "" {
		file, err := os.Create(logPath)
		if err != nil {
			return fail(fmt.Errorf("--log: %w", err))
		}
		defer file.Close()
		logOut = file
	}
	w := eventlog.NewJSONWriter(logOut)
	cfg.Log = w
	sum, err := chaos.Run(cfg)
	if err != nil {
		return c.failed(err)
	}
	if err := w.Flush(); err != nil {
		return c.failed(fmt.Errorf("writing the log: %w", err))
	}
	return writeEvent(c.stdout, "summary", sum, sum.OK())
}

// writeEvent prints v as one JSON line with "ev" first, as the lines of an
// event log are, and returns exitOK when the run it sums up passed, else
// exitError.
func writeEvent(w io.Writer, ev string, v any, passed bool) int {
	body, _ := json.Marshal(v)
	line, _ := json.Marshal(map[string]string{"ev": ev})
	if len(body) > 2 { // an object with fields: join the two
		line = append(line[:len(line)-1], ',')
		line = append(line, body[1:]...)
	}
	fmt.Fprintf(w, "%s\n", line)
	if !passed {
		return exitError
	}
	return exitOK
}

// parseSeeds reads A-B.
func parseSeeds(s string) (uint32, uint32, error) {
	a, b, ok := strings.Cut(s, "-")
	from, err1 := strconv.ParseUint(a, 10, 32)
	to, err2 := strconv.ParseUint(b, 10, 32)
	if !ok || err1 != nil || err2 != nil || to < from || to-from >= 10_000_000 {
		return 0, 0, fmt.Errorf("--seeds %q: want A-B with 0 ≤ A ≤ B ≤ 4294967295 and at most 10,000,000 seeds", s)
	}
	return uint32(from), uint32(to), nil
}

func runQuotaSim(c *command, args []string) int {
	var (
		f    chaosFlags
		step time.Duration
	)
	f.register(c)
	c.DurationVar(&step, "step", time.Second, "length of a CSV row, 10ms to 1h")
	if status, ok := c.parse(args); !ok {
		return status
	}
	fail := c.usage
	cfg, err := f.config()
	if err != nil {
		return fail(err)
	}
	if step < 10*time.Millisecond || step > time.Hour {
		return fail(fmt.Errorf("--step %v: want 10ms to 1h", step))
	}
	series := chaos.NewSeries(chaos.DefaultRegions, step)
	cfg.Log = series
	sum, err := chaos.Run(cfg)
	if err != nil {
		return c.failed(err)
	}
	steps := int((cfg.Duration + step - 1) / step)
	if err := series.WriteCSV(c.stdout, chaos.DefaultRate.Float(), steps); err != nil {
		return exitError
	}
	line, _ := json.Marshal(sum)
	fmt.Fprintf(c.stderr, "%s\n", line)
	if !sum.OK() {
		return exitError
	}
	return exitOK
}

func runQuotaCheck(c *command, args []string) int {
	var limits tenantLimits
	c.Var(&limits, "tenant", "a tenant's limits `NAME:R:B` (hard mode) or NAME:R:B:E:N (best-effort: E per region, N regions), checked against the log's; repeat for each tenant")
	rest, status, ok := c.parseArgs(args)
	if !ok {
		return status
	}
	if len(rest) == 0 {
		return c.usage(fmt.Errorf("want one FILE or more: event logs of afloat quota chaos --log or of --event-log (- for standard input)"))
	}
	var logs []eventlog.Log
	for _, name := range rest {
		if name == "-" {
			logs = append(logs, eventlog.Log{Name: "standard input", R: c.stdin})
			continue
		}
		file, err := os.Open(name)
		if err != nil {
			return c.usage(err)
		}
		defer file.Close()
		logs = append(logs, eventlog.Log{Name: name, R: file})
	}
	res, err := eventlog.CheckLogs(logs, limits)
	switch {
	case err == nil:
	case errors.Is(err, eventlog.ErrUnproven):
		return c.failed(err)
	default:
		return c.usage(err) // a line that is not an event, limits given twice
	}
	if len(res.Unverified) > 0 {
		fmt.Fprintf(c.stderr, "afloat quota check: the limits of %s come from the log itself, unverified; give --tenant NAME:R:B for each tenant to check them\n",
			strings.Join(res.Unverified, ", "))
	}
	return writeEvent(c.stdout, "check", res, res.Violations == 0)
}

// tenantLimits is the repeatable --tenant flag.
type tenantLimits []eventlog.Limits

func (t *tenantLimits) String() string {
	s := make([]string, len(*t))
	for i, l := range *t {
		s[i] = l.String()
	}
	return strings.Join(s, ",")
}

// Set reads one tenant's limits; CheckLogs refuses a tenant given twice.
func (t *tenantLimits) Set(v string) error {
	l, err := eventlog.ParseLimits(v)
	if err != nil {
		return err
	}
	*t = append(*t, l)
	return nil
}

func printCheckNotes(w io.Writer) {
	fmt.Fprint(w, `
FILE is the event log of afloat quota chaos --log FILE, or its standard
output (the log, then the summary line), or the --event-log files of a
cluster's coordinators and region agents: several files are merged by
time (t_ns) and checked as one run. The check prints one JSON line,
{"ev":"check","violations":N,...}, and exits 1 when N > 0.

The check proves something or fails. It exits 1, printing what is
missing and no check line, for a log that ends before its run did (no
events, no stop event — a run writes stop last —, or a last line without
its newline, as a killed writer or a cut copy leaves), and for a run that
states no tenant's limits (no start event) or admits nothing. Each file
is judged whole on its own: a process's --event-log gains its stop line
when the process stops (a killed process's file gets one when it is
restarted and stopped). A line that is not an event — malformed, or of a
kind no component writes — refuses the file: exit 2, with the file and
the line number.

Without --tenant, each tenant is held to the R and B its own log states,
and the check says so on standard error and lists them as "unverified".
With --tenant, every tenant of the logs must be given (a log cannot add
a tenant of its own), each start and tenant event must state exactly the
limits given (hard mode for NAME:R:B; best-effort with E and N for
NAME:R:B:E:N), else the check exits 1 naming the tenant, the limits given
and the log's, and the check line lists the tenants as "verified". A run
in which an operator changed a tenant's limits is checked without
--tenant.
`)
}
