package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/afloat/afloat/sim"
)

const simUsage = `Usage:
  afloat sim run --scenario NAME [--seed N] [--minutes M] [--noise=false]
                 [--actions FILE] [--format table|csv|jsonl]
  afloat sim scenarios [--format table|jsonl]
  afloat sim bots --scenario NAME [--seeds A-B] [--bots LIST] | --all | --shipped

Subcommands:
  run         play a scenario and print one frame per simulated minute
  scenarios   list the scenarios and their briefings
  bots        the bots' points over many seeds: do nothing, runbook, expert

Run 'afloat sim <subcommand> --help' for its flags.
`

func runSim(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprintf(stderr, "afloat sim: missing subcommand\n\n%s", simUsage)
		return exitUsage
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		fmt.Fprint(stdout, simUsage)
		return exitOK
	case "run":
		return runSimRun(args[1:], stdin, stdout, stderr)
	case "scenarios":
		return runSimScenarios(args[1:], stdout, stderr)
	case "bots":
		return runSimBots(args[1:], stdout, stderr)
	default:
		fmt.Fprintf(stderr, "afloat sim: unknown subcommand %q\n\n%s", args[0], simUsage)
		return exitUsage
	}
}

// command is a subcommand's flag set with its help text.
type command struct {
	*flag.FlagSet
	synopsis string
	extra    func(io.Writer) // more help after the flags, or nil
}

func newCommand(name, synopsis string, extra func(io.Writer)) *command {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.Usage = func() {} // help is printed by parse, to stdout, only when asked for
	return &command{FlagSet: fs, synopsis: synopsis, extra: extra}
}

// parse parses args. It returns false when the command should stop, with
// the status to exit with: 0 after printing help to stdout, 2 after
// printing a usage error to stderr.
func (c *command) parse(args []string, stdout, stderr io.Writer) (int, bool) {
	var discard bytes.Buffer
	c.SetOutput(&discard) // the error is printed below, once
	err := c.Parse(args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		fmt.Fprintf(stdout, "Usage:\n  %s\n\nFlags:\n", c.synopsis)
		c.SetOutput(stdout)
		c.PrintDefaults()
		if c.extra != nil {
			c.extra(stdout)
		}
		return exitOK, false
	case err != nil:
		return usageError(stderr, c.Name(), err), false
	case c.NArg() > 0:
		return usageError(stderr, c.Name(), fmt.Errorf("unexpected argument %q", c.Arg(0))), false
	}
	return exitOK, true
}

// given reports whether the command line set the flag, to tell a flag
// given its zero value from one left out.
func (c *command) given(name string) bool {
	found := false
	c.Visit(func(f *flag.Flag) { found = found || f.Name == name })
	return found
}

// usageError prints a refused command line and returns exitUsage.
func usageError(stderr io.Writer, name string, err error) int {
	fmt.Fprintf(stderr, "afloat %s: %v\nRun 'afloat %s --help' for usage.\n", name, err, name)
	return exitUsage
}

// seedFlag is a uint32 flag whose error names the allowed range.
type seedFlag uint32

func (s *seedFlag) String() string { return strconv.FormatUint(uint64(*s), 10) }

func (s *seedFlag) Set(v string) error {
	n, err := strconv.ParseUint(v, 10, 32)
	if err != nil {
		return fmt.Errorf("want an integer from 0 to %d", uint32(math.MaxUint32))
	}
	*s = seedFlag(n)
	return nil
}

func runSimRun(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	var (
		cfg     sim.Config
		seed    seedFlag = 1
		actions string
		format  string
	)
	fs := newCommand("sim run", "afloat sim run --scenario NAME [flags]", printControls)
	fs.StringVar(&cfg.Scenario, "scenario", "", "`NAME` of the scenario: "+strings.Join(sim.ScenarioNames(), ", ")+" (required)")
	fs.Var(&seed, "seed", "seed of the run, `N` from 0 to 4294967295; the same seed and actions give the same run")
	fs.IntVar(&cfg.Minutes, "minutes", 0, fmt.Sprintf("`M` minutes to simulate, 1 to %d (default: the scenario's length)", sim.MaxMinutes))
	fs.BoolVar(&cfg.Noise, "noise", true, "random variation of the request count; false gives exactly 60λ per minute")
	fs.StringVar(&actions, "actions", "", "JSON-lines `FILE` of the player's actions, or - for standard input")
	fs.StringVar(&format, "format", "table", "output format: table, csv or jsonl")
	if status, ok := fs.parse(args, stdout, stderr); !ok {
		return status
	}
	cfg.Seed = uint32(seed)

	fail := func(err error) int { return usageError(stderr, "sim run", err) }
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
		if cfg.Actions, err = readActions(actions, minutes, stdin); err != nil {
			return fail(err)
		}
	}
	frames, err := sim.Run(cfg)
	if err != nil {
		return fail(err)
	}
	if err := sim.WriteFrames(stdout, frames, out); err != nil {
		fmt.Fprintf(stderr, "afloat sim run: writing frames: %v\n", err)
		return exitError
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
	fmt.Fprint(w, `
Action file: one JSON object per line, applied at the start of its minute,
  {"minute": 12, "control": "heavy_feature", "value": false}
  {"minute": 15, "control": "rollback"}
Controls:
`)
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	for _, c := range sim.ControlSpecs() {
		var value string
		switch c.Kind {
		case sim.KindInteger, sim.KindNumber:
			value = fmt.Sprintf("%s %g–%g", c.Kind, c.Min, c.Max)
		case sim.KindBool:
			value = "true or false"
		default:
			value = "press: no value"
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\n", c.Control, value, c.Label)
	}
	tw.Flush()
}

func runSimScenarios(args []string, stdout, stderr io.Writer) int {
	var format string
	fs := newCommand("sim scenarios", "afloat sim scenarios [--format table|jsonl]", nil)
	fs.StringVar(&format, "format", "table", "output format: table or jsonl")
	if status, ok := fs.parse(args, stdout, stderr); !ok {
		return status
	}
	switch format {
	case "table":
		tw := tabwriter.NewWriter(stdout, 2, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "NAME\tSTART\tMINUTES\tBOOT\tBUDGET\tBRIEFING")
		for _, sc := range sim.Scenarios() {
			fmt.Fprintf(tw, "%s\t%s\t%d\t%d min\t%.0f%%\t%s\n",
				sc.Name, sim.Clock(sc.Start), sc.Minutes, sc.BootDelay, 100*sc.Budget, sc.Briefing)
		}
		tw.Flush()
	case "jsonl":
		enc := json.NewEncoder(stdout)
		for _, sc := range sim.Scenarios() {
			enc.Encode(map[string]any{
				"name": sc.Name, "title": sc.Title, "briefing": sc.Briefing,
				"start": sim.Clock(sc.Start), "minutes": sc.Minutes,
				"boot_delay_minutes": sc.BootDelay, "budget_remaining": sc.Budget,
			})
		}
	default:
		return usageError(stderr, "sim scenarios", fmt.Errorf("--format %q: want table or jsonl", format))
	}
	return exitOK
}
