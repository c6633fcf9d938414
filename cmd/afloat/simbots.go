package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/afloat/afloat/sim"
	"github.com/afloat/afloat/sim/bots"
)

// maxBotSeeds bounds --seeds for sim bots: a distribution is kept whole.
const maxBotSeeds = 100_000

func runSimBots(c *command, args []string) int {
	stdout, stderr := c.stdout, c.stderr
	var (
		scenario, seeds, list, write string
		all, shipped                 bool
		workers                      int
	)
	c.StringVar(&scenario, "scenario", "", "`NAME` of the scenario: "+strings.Join(sim.ScenarioNames(), ", "))
	c.BoolVar(&all, "all", false, "every scenario (instead of --scenario)")
	c.StringVar(&seeds, "seeds", "1-1000", "seeds `A-B`, noise on, at the scenario's length")
	c.StringVar(&list, "bots", "nothing,runbook", "comma-separated `LIST` of bots: nothing, runbook, expert (the expert searches: about 0.05 s a seed)")
	c.IntVar(&workers, "workers", 0, "goroutines, 1 to 256 (default: one per CPU)")
	c.StringVar(&write, "write", "", "also write the distributions to `FILE` in the form of sim/bots/distributions.json")
	c.BoolVar(&shipped, "shipped", false, "print the distributions shipped in the binary (seeds 1-1000, every bot) and run nothing")
	if status, ok := c.parse(args); !ok {
		return status
	}
	fail := c.usage
	var scenarios []string
	switch {
	case all && scenario != "":
		return fail(errors.New("--all and --scenario: give one"))
	case all || (shipped && scenario == ""):
		scenarios = sim.ScenarioNames()
	case scenario == "":
		return fail(fmt.Errorf("--scenario is required (or --all): want one of %s", strings.Join(sim.ScenarioNames(), ", ")))
	default:
		if _, err := sim.Lookup(scenario); err != nil {
			return fail(err)
		}
		scenarios = []string{scenario}
	}
	if shipped {
		if c.given("seeds") || c.given("bots") || c.given("workers") || write != "" {
			return fail(errors.New("--shipped prints what the binary holds: --seeds, --bots, --workers and --write do not apply"))
		}
		var sums []bots.Summary
		for _, sc := range scenarios {
			for _, b := range bots.Names() {
				if d, ok := bots.Shipped(sc, b); ok {
					sums = append(sums, d.Summarize())
				}
			}
		}
		if err := bots.WriteTable(stdout, sums); err != nil {
			fmt.Fprintf(stderr, "afloat sim bots: %v\n", err)
			return exitError
		}
		return exitOK
	}
	from, to, err := parseSeeds(seeds)
	if err != nil {
		return fail(err)
	}
	if to-from >= maxBotSeeds {
		return fail(fmt.Errorf("--seeds %q: at most %d seeds", seeds, maxBotSeeds))
	}
	if c.given("workers") && (workers < 1 || workers > 256) {
		return fail(fmt.Errorf("--workers %d: want 1 to 256", workers))
	}
	names := strings.Split(list, ",")
	for _, b := range names {
		if !slices.Contains(bots.Names(), b) {
			return fail(fmt.Errorf("--bots %q: unknown bot %q; want a list of %s", list, b, strings.Join(bots.Names(), ", ")))
		}
	}
	var (
		sums []bots.Summary
		ds   []bots.Distribution
	)
	for _, sc := range scenarios {
		for _, b := range names {
			d, err := bots.Sweep(context.Background(), sc, b, from, to, workers)
			if err != nil {
				fmt.Fprintf(stderr, "afloat sim bots: %v\n", err)
				return exitError
			}
			ds = append(ds, d)
			sums = append(sums, d.Summarize())
		}
	}
	if err := bots.WriteTable(stdout, sums); err != nil {
		fmt.Fprintf(stderr, "afloat sim bots: %v\n", err)
		return exitError
	}
	if write != "" {
		f, err := os.Create(write)
		if err == nil {
			err = bots.WriteShipped(f, ds)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
		}
		if err != nil {
			fmt.Fprintf(stderr, "afloat sim bots: --write: %v\n", err)
			return exitError
		}
	}
	return exitOK
}

// printBotNotes explains the table under the flags of 'sim bots'.
func printBotNotes(w io.Writer) {
	fmt.Fprint(w, `
Each bot plays every seed of the range, noise on, at the scenario's length,
and the table gives its points (what the incident cost: fewer is better;
docs/model.md, "The score"): mean, best, 10th percentile, median, 90th,
worst, and the runs that lost the month's budget. nothing never touches a
lever; runbook follows the scenario's runbook; expert searches the timing of
a few key actions with hindsight, and its points on a seed are par.
`)
}
