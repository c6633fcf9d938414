package main

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
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

// config is the run the flags ask for, checked (chaos.Config.Validate)
// before anything is written.
func (f *chaosFlags) config(c *command) (chaos.Config, error) {
	mode, err := quota.ParseMode(f.mode)
	if err != nil {
		return chaos.Config{}, fmt.Errorf("--mode: %w", err)
	}
	faults, err := chaos.ParseFaults(f.faults)
	if err != nil {
		return chaos.Config{}, fmt.Errorf("--faults: %w", err)
	}
	cfg := chaos.Config{Seed: uint32(f.seed), Mode: mode, Duration: f.duration, Faults: faults, NoFaults: faults == 0}
	return cfg, cmp.Or(c.noZero("duration"), cfg.Validate())
}

func runQuotaChaos(c *command, args []string) int {
	var (
		f              chaosFlags
		logPath, seeds string
		workers        int
	)
	f.register(c)
	c.StringVar(&logPath, "log", "", "write the event log to `FILE` instead of standard output (the summary stays there)")
	c.StringVar(&seeds, "seeds", "", "run seeds `A-B` in parallel and print the worst; no log; not with --seed")
	c.IntVar(&workers, "workers", 0, "goroutines for --seeds, 1 to 256 (default: one per CPU)")
	if status, ok := c.parse(args); !ok {
		return status
	}
	cfg, err := f.config(c)
	if err = cmp.Or(err, c.notWith("seeds", ": give one seed or a range of seeds", "seed"),
		c.notWith("seeds", ": a log is one seed's", "log"), c.onlyWith("seeds", "workers")); err != nil {
		return c.usage(err)
	}
	if seeds != "" {
		from, to, err := parseSeeds(seeds)
		if err != nil {
			return c.usage(err)
		}
		m, err := chaos.RunMany(cfg, from, to, workers)
		if err != nil {
			return c.fail(err, quota.ErrConfig)
		}
		return writeEvent(c.stdout, "summary", m, m.Failed == 0)
	}
	logOut := c.stdout
	if logPath != "" {
		file, err := os.Create(logPath)
		if err != nil {
			return c.usage(fmt.Errorf("--log: %w", err))
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
	cfg, err := f.config(c)
	if err != nil {
		return c.usage(err)
	}
	sum, err := chaos.RunSeries(c.stdout, cfg, step)
	if err != nil {
		return c.fail(err, quota.ErrConfig)
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
