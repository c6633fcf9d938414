package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/afloat/afloat/sim"
)

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

func runSimScenarios(fs *command, args []string) int {
	var format string
	fs.StringVar(&format, "format", "table", "output format: table or jsonl")
	if status, ok := fs.parse(args); !ok {
		return status
	}
	stdout := fs.stdout
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
		return fs.usage(fmt.Errorf("--format %q: want table or jsonl", format))
	}
	return exitOK
}
