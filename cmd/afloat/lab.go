package main

import (
	"cmp"
	"fmt"
	"io"
	"strings"

	"github.com/afloat/afloat/internal/cli"
	"github.com/afloat/afloat/overload"
)

// labFlags are the flags of lab overload.
type labFlags struct {
	cfg              overload.Config
	seed             cli.Uint32
	format, game     string
	compare          bool
	retries, periods int
}

// labRunFlags are the flags of a run, which a game does not take.
var labRunFlags = []string{"profile", "inside", "outside", "adaptive", "threads", "alpha", "retries", "timeout", "max-patience", "duration", "seed", "compare", "format"}

func (f *labFlags) register(c *cli.Command) {
	f.seed = 1
	c.StringVar(&f.cfg.Profile, "profile", "worldcup", "`NAME` of the load and server: "+strings.Join(overload.ProfileNames(), ", "))
	c.IntVar(&f.cfg.Inside, "inside", 0, "the bulkhead's limit, `N` requests inside (0: no bulkhead); the initial limit with --adaptive; with --compare, the limit compared (0: the profile's)")
	c.IntVar(&f.cfg.Outside, "outside", 0, "the bulkhead's queue, `N` requests waiting outside; with --compare, the shortest queue compared (0: the profile's)")
	c.BoolVar(&f.cfg.Adaptive, "adaptive", false, "let the limit adapt, and give the bulkhead each client's deadline")
	c.IntVar(&f.cfg.Threads, "threads", 0, fmt.Sprintf("instead of a bulkhead, a thread pool of `N` (1 to %d) with an unbounded queue", overload.MaxThreads))
	c.Float64Var(&f.cfg.Alpha, "alpha", 0, fmt.Sprintf("slowdown above the knee, `A`: 0 for the seed's linear server, up to %d for one that also loses capacity", overload.MaxAlpha))
	c.IntVar(&f.retries, "retries", 0, fmt.Sprintf("how many times a client that gave up tries again, `N` from 0 to %d (default: the profile's)", overload.MaxRetries))
	c.Float64Var(&f.cfg.Timeout, "timeout", 0, "clients give up after `S` seconds (default: the profile's); alone, all alike, with --max-patience the least patient")
	c.Float64Var(&f.cfg.MaxPatience, "max-patience", 0, "the most patient client gives up after `S` seconds, the others spread log-uniformly down to the timeout (default: the profile's)")
	c.Float64Var(&f.cfg.Duration, "duration", 0, "simulate `S` seconds (default: the profile's)")
	c.Var(&f.seed, "seed", "seed of the arrivals, `N` from 0 to 4294967295")
	c.StringVar(&f.format, "format", "table", "output: table, csv or jsonl")
	c.BoolVar(&f.compare, "compare", false, "run the profile's comparison (no limit, inside/outside, queues 5 and 10 times as long, adaptive; for database: no limit, its thread pool, inside/outside) and print their summaries")
	c.StringVar(&f.game, "game", "", "instead of a run, play one of the seed's games in whole periods, `NAME`: "+strings.Join(overload.GameNames, ", "))
	c.IntVar(&f.periods, "periods", 12, fmt.Sprintf("the game's length, `N` periods from 1 to %d", overload.MaxPeriods))
}

func runLabOverload(c *cli.Command, args []string) int {
	var f labFlags
	f.register(c)
	if status, ok := c.ParseFlags(args); !ok {
		return status
	}
	f.cfg.Seed = uint32(f.seed)
	err := cmp.Or(c.NoZero("timeout", "max-patience", "duration"),
		c.NotWith("game", ": a game has its own rules", labRunFlags...),
		c.OnlyWith("game", "periods"),
		c.NotWith("compare", ", which prints a table of summaries", "format"),
		overload.CheckFormat(f.format))
	if err == nil && c.Given("retries") {
		f.cfg.Retries, err = overload.ExactRetries(f.retries)
	}
	if err != nil {
		return c.Refuse(err)
	}
	switch {
	case c.Given("game"):
		g, err := overload.PlayGame(f.game, f.periods)
		if err != nil {
			return c.Refuse(err)
		}
		return c.Fail(overload.WriteGame(c.Stdout, g))
	case f.compare:
		runs, err := overload.Compare(f.cfg)
		if err != nil {
			return c.Refuse(err)
		}
		return c.Fail(overload.WriteComparison(c.Stdout, runs))
	}
	r, err := overload.Run(f.cfg)
	if err != nil {
		return c.Refuse(err)
	}
	if err := overload.WriteRun(c.Stdout, r, f.format); err != nil {
		return c.Failed(err)
	}
	if f.format == overload.FormatCSV {
		fmt.Fprintln(c.Stderr, overload.SummaryLine(r.Summary))
	}
	return cli.ExitOK
}

func printProfiles(w io.Writer) {
	fmt.Fprint(w, "\nProfiles:\n")
	overload.WriteProfiles(w)
	note("lab-overload")(w)
}
