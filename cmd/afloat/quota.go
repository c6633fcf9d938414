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

	"github.com/afloat/afloat/internal/cli"
	"github.com/afloat/afloat/quota"
	"github.com/afloat/afloat/quota/chaos"
	"github.com/afloat/afloat/quota/eventlog"
)

// chaosFlags are the flags chaos and sim share.
type chaosFlags struct {
	seed     cli.Uint32
	mode     string
	duration time.Duration
	faults   string
}

func (f *chaosFlags) register(c *cli.Command) {
	f.seed = 1
	c.Var(&f.seed, "seed", "seed of the run, `S` from 0 to 4294967295; a seed replays exactly")
	c.StringVar(&f.mode, "mode", "hard", "hard (admissions ≤ R·Δ + B) or best-effort (≤ R·Δ + B + 3·E, E = 100)")
	c.DurationVar(&f.duration, "duration", chaos.DefaultDuration, "virtual time to run, 1s to 24h (0 is refused, not the default)")
	c.StringVar(&f.faults, "faults", "all", "faults to inject, comma-separated: shift, partition, crash, skew, dup; or all, none")
}

// config is the run the flags ask for, checked (chaos.Config.Validate)
// before anything is written.
func (f *chaosFlags) config(c *cli.Command) (chaos.Config, error) {
	mode, err := quota.ParseMode(f.mode)
	if err != nil {
		return chaos.Config{}, fmt.Errorf("--mode: %w", err)
	}
	faults, err := chaos.ParseFaults(f.faults)
	if err != nil {
		return chaos.Config{}, fmt.Errorf("--faults: %w", err)
	}
	cfg := chaos.Config{Seed: uint32(f.seed), Mode: mode, Duration: f.duration, Faults: faults, NoFaults: faults == 0}
	return cfg, cmp.Or(c.NoZero("duration"), cfg.Validate())
}

func runQuotaChaos(c *cli.Command, args []string) int {
	var (
		f              chaosFlags
		logPath, seeds string
		workers        int
	)
	f.register(c)
	c.StringVar(&logPath, "log", "", "write the event log to `FILE` instead of standard output (the summary stays there)")
	c.StringVar(&seeds, "seeds", "", "run seeds `A-B` in parallel and print the worst; no log; not with --seed")
	c.IntVar(&workers, "workers", 0, "goroutines for --seeds, 1 to 256 (default: one per CPU)")
	if status, ok := c.ParseFlags(args); !ok {
		return status
	}
	cfg, err := f.config(c)
	if err = cmp.Or(err, c.NotWith("seeds", ": give one seed or a range of seeds", "seed"),
		c.NotWith("seeds", ": a log is one seed's", "log"), c.OnlyWith("seeds", "workers")); err != nil {
		return c.Refuse(err)
	}
	if seeds != "" {
		from, to, err := cli.ParseRange("--seeds", seeds)
		if err != nil {
			return c.Refuse(err)
		}
		m, err := chaos.RunMany(cfg, from, to, workers)
		if err != nil {
			return c.Fail(err, quota.ErrConfig)
		}
		return verdict(c, "summary", m, m.Failed == 0)
	}
	logOut := c.Stdout
	if logPath != "" {
		file, err := os.Create(logPath)
		if err != nil {
			return c.Refuse(fmt.Errorf("--log: %w", err))
		}
		defer file.Close()
		logOut = file
	}
	w := eventlog.NewJSONWriter(logOut)
	cfg.Log = w
	sum, err := chaos.Run(cfg)
	if err != nil {
		return c.Failed(err)
	}
	if err := w.Flush(); err != nil {
		return c.Failed(fmt.Errorf("writing the log: %w", err))
	}
	return verdict(c, "summary", sum, sum.OK())
}

// verdict prints v as one JSON line with "ev" first, as the lines of an
// event log are (eventlog.WriteLine), and returns cli.ExitOK when the run
// it sums up passed, else cli.ExitError.
func verdict(c *cli.Command, ev string, v any, passed bool) int {
	switch err := eventlog.WriteLine(c.Stdout, ev, v); {
	case err != nil:
		return c.Failed(err)
	case !passed:
		return cli.ExitError
	}
	return cli.ExitOK
}

func runQuotaSim(c *cli.Command, args []string) int {
	var (
		f    chaosFlags
		step time.Duration
	)
	f.register(c)
	c.DurationVar(&step, "step", time.Second, "length of a CSV row, 10ms to 1h")
	if status, ok := c.ParseFlags(args); !ok {
		return status
	}
	cfg, err := f.config(c)
	if err != nil {
		return c.Refuse(err)
	}
	sum, err := chaos.RunSeries(c.Stdout, cfg, step)
	if err != nil {
		return c.Fail(err, quota.ErrConfig)
	}
	line, _ := json.Marshal(sum)
	fmt.Fprintf(c.Stderr, "%s\n", line)
	if !sum.OK() {
		return cli.ExitError
	}
	return cli.ExitOK
}

func runQuotaCheck(c *cli.Command, args []string) int {
	var limits eventlog.LimitsFlag
	c.Var(&limits, "tenant", "a tenant's limits `NAME:R:B` (hard mode) or NAME:R:B:E:N (best-effort: E per region, N regions), checked against the log's; repeat for each tenant")
	rest, status, ok := c.ParseArgs(args)
	if !ok {
		return status
	}
	if len(rest) == 0 {
		return c.Refuse(fmt.Errorf("want one FILE or more: event logs of afloat quota chaos --log or of --event-log (- for standard input)"))
	}
	logs := make([]eventlog.Log, len(rest))
	for i, name := range rest {
		var (
			in    io.ReadCloser
			title = name
			err   error
		)
		if name == "-" {
			in, title, err = c.Open(name)
		} else {
			in, err = eventlog.OpenLog(name) // with its rotated parts, oldest first
		}
		if errors.Is(err, eventlog.ErrUnproven) {
			return c.Failed(err) // parts missing: the check fails
		}
		if err != nil {
			return c.Refuse(err)
		}
		defer in.Close()
		logs[i] = eventlog.Log{Name: title, R: in}
	}
	res, err := eventlog.CheckLogs(logs, limits)
	switch {
	case err == nil:
	case errors.Is(err, eventlog.ErrUnproven):
		return c.Failed(err)
	default:
		return c.Refuse(err) // a line that is not an event, limits given twice
	}
	if len(res.Unverified) > 0 {
		fmt.Fprintf(c.Stderr, "afloat quota check: the limits of %s come from the log itself, unverified; give --tenant NAME:R:B for each tenant to check them\n",
			strings.Join(res.Unverified, ", "))
	}
	return verdict(c, "check", res, res.Violations == 0)
}
