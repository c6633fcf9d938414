package main

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/afloat/afloat/sim"
)

func runSimRun(fs *command, args []string) int {
	var (
		cfg     sim.Config
		seed    seedFlag = 1
		actions string
		format  string
	)
	fs.StringVar(&cfg.Scenario, "scenario", "", "`NAME` of the scenario: "+strings.Join(sim.ScenarioNames(), ", ")+" (required)")
	fs.Var(&seed, "seed", "seed of the run, `N` from 0 to 4294967295; the same seed and actions give the same run")
	fs.IntVar(&cfg.Minutes, "minutes", 0, fmt.Sprintf("`M` minutes to simulate, 1 to %d (default: the scenario's length)", sim.MaxMinutes))
	fs.BoolVar(&cfg.Noise, "noise", true, "random variation of the request count; false gives exactly 60λ per minute")
	fs.StringVar(&actions, "actions", "", "JSON-lines `FILE` of the player's actions, or - for standard input")
	fs.StringVar(&format, "format", "table", "output format: table, csv or jsonl")
	if status, ok := fs.parse(args); !ok {
		return status
	}
	cfg.Seed = uint32(seed)

	fail := fs.usage
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
		if cfg.Actions, err = readActions(actions, minutes, fs.stdin); err != nil {
			return fail(err)
		}
	}
	frames, err := sim.Run(cfg)
	if err != nil {
		return fail(err)
	}
	if err := sim.WriteFrames(fs.stdout, frames, out); err != nil {
		return fs.failed(fmt.Errorf("writing frames: %w", err))
	}
	return exitOK
}

func readActions(name string, minutes int, stdin io.Reader) ([]sim.Action, error) {
	if name == "-" {
		return sim.ParseActions(stdin, minutes)
	}
	f, err := os.Open(name)
	if err != nil {
		return nil, fmt.Errorf("--actions: %w", err)
	}
	defer f.Close()
	return sim.ParseActions(f, minutes)
}

// printControls explains action files under the flags of 'sim run'.
func printControls(w io.Writer) {
	note("sim-run")(w)
	sim.WriteControls(w)
}

func runSimScenarios(c *command, args []string) int {
	var format string
	c.StringVar(&format, "format", "table", "output format: table or jsonl")
	if status, ok := c.parse(args); !ok {
		return status
	}
	return c.fail(sim.WriteScenarios(c.stdout, sim.Format(format)), sim.ErrInvalidConfig)
}
