package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/afloat/afloat/internal/cli"
	"github.com/afloat/afloat/sim"
)

func runSimRun(c *cli.Command, args []string) int {
	cfg := sim.Config{Seed: 1}
	var actions, format string
	c.StringVar(&cfg.Scenario, "scenario", "", "`NAME` of the scenario: "+strings.Join(sim.ScenarioNames(), ", ")+" (required)")
	c.Var((*cli.Uint32)(&cfg.Seed), "seed", "seed of the run, `N` from 0 to 4294967295; the same seed and actions give the same run")
	c.IntVar(&cfg.Minutes, "minutes", 0, fmt.Sprintf("`M` minutes to simulate, 1 to %d (default: the scenario's length)", sim.MaxMinutes))
	c.BoolVar(&cfg.Noise, "noise", true, "random variation of the request count; false gives exactly 60λ per minute")
	c.StringVar(&actions, "actions", "", "JSON-lines `FILE` of the player's actions, or - for standard input")
	c.StringVar(&format, "format", "table", "output format: table, csv or jsonl")
	if status, ok := c.ParseFlags(args); !ok {
		return status
	}
	fail := c.Refuse
	if cfg.Scenario == "" {
		return fail(fmt.Errorf("--scenario is required: want one of %s", strings.Join(sim.ScenarioNames(), ", ")))
	}
	out, err := sim.ParseFormat(format)
	if err != nil {
		return fail(err)
	}
	minutes, err := cfg.Length()
	if err != nil {
		return fail(err)
	}
	if actions != "" {
		if cfg.Actions, err = readActions(c, actions, minutes); err != nil {
			return fail(err)
		}
	}
	frames, err := sim.Run(cfg)
	if err != nil {
		return fail(err)
	}
	if err := sim.WriteFrames(c.Stdout, frames, out); err != nil {
		return c.Failed(fmt.Errorf("writing frames: %w", err))
	}
	return cli.ExitOK
}

func readActions(c *cli.Command, name string, minutes int) ([]sim.Action, error) {
	in, _, err := c.Open(name)
	if err != nil {
		return nil, fmt.Errorf("--actions: %w", err)
	}
	defer in.Close()
	return sim.ParseActions(in, minutes)
}

// printControls explains action files under the flags of 'sim run'.
func printControls(w io.Writer) {
	note("sim-run")(w)
	sim.WriteControls(w)
}

func runSimScenarios(c *cli.Command, args []string) int {
	var format string
	c.StringVar(&format, "format", "table", "output format: table or jsonl")
	if status, ok := c.ParseFlags(args); !ok {
		return status
	}
	return c.Fail(sim.WriteScenarios(c.Stdout, sim.Format(format)), sim.ErrInvalidConfig)
}
