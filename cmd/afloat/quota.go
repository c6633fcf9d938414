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
	w := chaos.NewJSONWriter(logOut)
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
	rest, status, ok := c.parseArgs(args)
	if !ok {
		return status
	}
	if len(rest) == 0 {
		return c.usage(fmt.Errorf("want one FILE or more: event logs of afloat quota chaos --log or of --event-log (- for standard input)"))
	}
	var all collected
	for _, name := range rest {
		if err := readLog(name, c.stdin, &all); err != nil {
			if errors.Is(err, chaos.ErrNoEvents) || errors.Is(err, chaos.ErrTruncated) {
				// The run did not finish (or never started): its check fails.
				return c.failed(err)
			}
			return c.usage(err)
		}
	}
	chk := chaos.NewChecker()
	end := &lastTime{chk: chk}
	for _, e := range chaos.Merge(all) {
		end.Write(&e)
	}
	rep := chk.Finish(end.t)
	return writeEvent(c.stdout, "check", rep, rep.Violations == 0)
}

// collected keeps the events of several logs, to merge them.
type collected []chaos.Event

func (c *collected) Write(e *chaos.Event) { *c = append(*c, *e) }

// readLog feeds the events of the log in the file name (- for stdin) to w;
// errors name the file.
func readLog(name string, stdin io.Reader, w chaos.EventWriter) error {
	in := stdin
	if name != "-" {
		file, err := os.Open(name)
		if err != nil {
			return err
		}
		defer file.Close()
		in = file
	} else {
		name = "standard input"
	}
	if err := chaos.ReadLog(in, w); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}

func printCheckNotes(w io.Writer) {
	fmt.Fprint(w, `
FILE is the event log of afloat quota chaos --log FILE, or its standard
output (the log, then the summary line), or the --event-log files of a
cluster's coordinators and region agents: several files are merged by
time (t_ns) and checked as one run. The check prints one JSON line,
{"ev":"check","violations":N,...}, and exits 1 when N > 0.

A log that ends before its run did is not checked: it exits 1 with what is
missing, and prints no check line. That is a log with no events (an empty
file) or a truncated one: no stop event (a run writes stop last), or a last
line cut off before its newline. Each file is judged on its own: a
process's --event-log gains its stop line when the process stops (a killed
process's file gets one when it is restarted and stopped). A line that is
not an event anywhere else refuses the file: exit 2, with the line number.
`)
}

// lastTime passes events to the checker and remembers the last time.
type lastTime struct {
	chk *chaos.Checker
	t   int64
}

func (l *lastTime) Write(e *chaos.Event) {
	if e.Ev == "summary" {
		return // the last line of a chaos log on standard output
	}
	l.t = max(l.t, e.T)
	l.chk.Write(e)
}
