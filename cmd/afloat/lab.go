package main

import (
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/afloat/afloat/overload"
)

func runLabOverload(fs *command, args []string) int {
	cfg := overload.Config{}
	var format string
	var compare bool
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
	if status, ok := fs.parse(args); !ok {
		return status
	}
	cfg.Seed = uint32(seed)
	fail := fs.usage
	stdout, stderr := fs.stdout, fs.stderr
	if format != overload.FormatTable && format != overload.FormatCSV && format != overload.FormatJSONL {
		return fail(fmt.Errorf("--format %q: want table, csv or jsonl", format))
	}
	if compare {
		runs, err := overload.Compare(cfg.Profile, cfg.Seed)
		if err != nil {
			return fail(err)
		}
		if err := overload.WriteComparison(stdout, runs); err != nil {
			return fs.failed(err)
		}
		return exitOK
	}
	r, err := overload.Run(cfg)
	if err != nil {
		return fail(err)
	}
	if err := overload.WriteRun(stdout, r, format); err != nil {
		return fs.failed(err)
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
