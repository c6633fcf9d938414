package main

import (
	"cmp"
	"fmt"
	"io"
	"strings"

	"github.com/afloat/afloat/internal/cli"
	"github.com/afloat/afloat/sim"
	"github.com/afloat/afloat/sim/bots"
)

func runSimBots(c *cli.Command, args []string) int {
	var (
		scenario, seeds, list, write string
		all, shipped                 bool
		workers                      int
	)
	c.StringVar(&scenario, "scenario", "", "`NAME` of the scenario: "+strings.Join(sim.ScenarioNames(), ", "))
	c.BoolVar(&all, "all", false, "every scenario (instead of --scenario)")
	c.StringVar(&seeds, "seeds", "1-1000", "seeds `A-B`, noise on, at the scenario's length")
	c.StringVar(&list, "bots", "nothing,runbook,expert", "comma-separated `LIST` of bots: nothing, runbook, expert (par: reacts to the dashboard), hindsight (searches knowing the seed: about 0.05 s a seed)")
	c.IntVar(&workers, "workers", 0, "goroutines, 1 to 256 (default: one per CPU)")
	c.StringVar(&write, "write", "", "also write the distributions to `FILE` in the form of sim/bots/distributions.json")
	c.BoolVar(&shipped, "shipped", false, "print the distributions shipped in the binary (seeds 1-1000, every bot) and run nothing")
	if status, ok := c.ParseFlags(args); !ok {
		return status
	}
	err := cmp.Or(c.NotWith("all", ": give one", "scenario"), c.NoZero("workers"),
		c.NotWith("shipped", ": it prints what the binary holds", "seeds", "bots", "workers", "write"))
	scenarios := []string{scenario}
	switch {
	case all || (shipped && scenario == ""):
		scenarios = sim.ScenarioNames()
	case scenario == "":
		err = cmp.Or(err, fmt.Errorf("--scenario is required (or --all): want one of %s", strings.Join(sim.ScenarioNames(), ", ")))
	}
	from, to, serr := cli.ParseRange("--seeds", seeds)
	if err = cmp.Or(err, serr); err != nil {
		return c.Refuse(err)
	}
	var ds []bots.Distribution
	if shipped {
		ds, err = bots.ShippedOf(scenarios)
	} else {
		ctx, stop := cli.Interruptible()
		defer stop()
		ds, err = bots.Sweeps(ctx, scenarios, strings.Split(list, ","), from, to, workers)
	}
	if err != nil {
		return c.Fail(err, sim.ErrInvalidConfig)
	}
	if err := bots.WriteTable(c.Stdout, bots.Summaries(ds)); err != nil || write == "" {
		return c.Fail(err)
	}
	if err := cli.WriteFile(write, func(w io.Writer) error { return bots.WriteShipped(w, ds) }); err != nil {
		return c.Failed(fmt.Errorf("--write: %w", err))
	}
	return cli.ExitOK
}
