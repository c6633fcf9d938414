package main

import (
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/afloat/afloat/overload"
)

const labUsage = `Usage:
  afloat lab overload [flags]   the overload lab: the seed's games and the World Cup day

Run 'afloat lab overload --help' for its flags.
`

func runLab(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprintf(stderr, "afloat lab: missing lab\n\n%s", labUsage)
		return exitUsage
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		fmt.Fprint(stdout, labUsage)
		return exitOK
	case "overload":
		return runLabOverload(args[1:], stdout, stderr)
	}
	fmt.Fprintf(stderr, "afloat lab: unknown lab %q\n\n%s", args[0], labUsage)
	return exitUsage
}

func runLabOverload(args []string, stdout, stderr io.Writer) int {
	cfg := overload.Config{}
	var format string
	var compare bool
	fs := newCommand("lab overload", "afloat lab overload --profile worldcup --inside 100 --outside 100 [--adaptive] [--format table|csv|jsonl]", printProfiles)
	fs.StringVar(&cfg.Profile, "profile", "worldcup", "`NAME` of the load and server: "+strings.Join(overload.ProfileNames(), ", "))
	fs.IntVar(&cfg.Inside, "inside", 0, "the bulkhead's limit, `N` requests inside (0: no bulkhead); the initial limit with --adaptive")
	fs.IntVar(&cfg.Outside, "outside", 0, "the bulkhead's queue, `N` requests waiting outside")
	fs.BoolVar(&cfg.Adaptive, "adaptive", false, "let the limit adapt, and give the bulkhead each client's deadline")
	fs.Float64Var(&cfg.Alpha, "alpha", math.NaN(), "non-linear slowdown above the knee, `A` from 0 (linear) to 100 (default: the profile's)")
	fs.Float64Var(&cfg.Timeout, "timeout", 0, "clients give up after `S` seconds (default: the profile's)")
	fs.Float64Var(&cfg.Duration, "duration", 0, "simulate `S` seconds (default: the profile's)")
	var seed seedFlag = 1
	fs.Var(&seed, "seed", "seed of the arrivals, `N` from 0 to 4294967295")
	fs.StringVar(&format, "format", "table", "output: table, csv or jsonl")
	fs.BoolVar(&compare, "compare", false, "run the seed's five configurations (no limit, 100/100, 100/500, 100/1000, adaptive) and print their summaries")
	if status, ok := fs.parse(args, stdout, stderr); !ok {
		return status
	}
	cfg.Seed = uint32(seed)
	fail := func(err error) int { return usageError(stderr, "lab overload", err) }
	if format != overload.FormatTable && format != overload.FormatCSV && format != overload.FormatJSONL {
		return fail(fmt.Errorf("--format %q: want table, csv or jsonl", format))
	}
	if compare {
		runs, err := overload.Compare(cfg.Profile, cfg.Seed)
		if err != nil {
			return fail(err)
		}
		if err := overload.WriteComparison(stdout, runs); err != nil {
			fmt.Fprintf(stderr, "afloat lab overload: %v\n", err)
			return exitError
		}
		return exitOK
	}
	r, err := overload.Run(cfg)
	if err != nil {
		return fail(err)
	}
	if err := overload.WriteRun(stdout, r, format); err != nil {
		fmt.Fprintf(stderr, "afloat lab overload: %v\n", err)
		return exitError
	}
	if format == overload.FormatCSV {
		fmt.Fprintln(stderr, overload.SummaryLine(r.Summary))
	}
	return exitOK
}

func printProfiles(w io.Writer) {
	fmt.Fprint(w, "\nProfiles:\n")
	for _, p := range overload.Profiles() {
		fmt.Fprintf(w, "  %-11s %s\n", p.Name, p.Description)
	}
	fmt.Fprint(w, "\nThe table and jsonl outputs end with the run's summary; with csv it goes to stderr.\n")
}
