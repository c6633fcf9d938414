package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/afloat/afloat/overload"
)

func runLabOverload(fs *command, args []string) int {
	cfg := overload.Config{}
	var format, game string
	var compare bool
	var retries, periods int
	fs.StringVar(&cfg.Profile, "profile", "worldcup", "`NAME` of the load and server: "+strings.Join(overload.ProfileNames(), ", "))
	fs.IntVar(&cfg.Inside, "inside", 0, "the bulkhead's limit, `N` requests inside (0: no bulkhead); the initial limit with --adaptive; with --compare, the limit compared (0: the profile's)")
	fs.IntVar(&cfg.Outside, "outside", 0, "the bulkhead's queue, `N` requests waiting outside; with --compare, the shortest queue compared (0: the profile's)")
	fs.BoolVar(&cfg.Adaptive, "adaptive", false, "let the limit adapt, and give the bulkhead each client's deadline")
	fs.IntVar(&cfg.Threads, "threads", 0, fmt.Sprintf("instead of a bulkhead, a thread pool of `N` (1 to %d) with an unbounded queue", overload.MaxThreads))
	fs.Float64Var(&cfg.Alpha, "alpha", 0, fmt.Sprintf("slowdown above the knee, `A`: 0 for the seed's linear server, up to %d for one that also loses capacity", overload.MaxAlpha))
	fs.IntVar(&retries, "retries", 0, fmt.Sprintf("how many times a client that gave up tries again, `N` from 0 to %d (default: the profile's)", overload.MaxRetries))
	fs.Float64Var(&cfg.Timeout, "timeout", 0, "clients give up after `S` seconds (default: the profile's); alone, all alike, with --max-patience the least patient")
	fs.Float64Var(&cfg.MaxPatience, "max-patience", 0, "the most patient client gives up after `S` seconds, the others spread log-uniformly down to the timeout (default: the profile's)")
	fs.Float64Var(&cfg.Duration, "duration", 0, "simulate `S` seconds (default: the profile's)")
	var seed seedFlag = 1
	fs.Var(&seed, "seed", "seed of the arrivals, `N` from 0 to 4294967295")
	fs.StringVar(&format, "format", "table", "output: table, csv or jsonl")
	fs.BoolVar(&compare, "compare", false, "run the profile's comparison (no limit, inside/outside, queues 5 and 10 times as long, adaptive; for database: no limit, its thread pool, inside/outside) and print their summaries")
	fs.StringVar(&game, "game", "", "instead of a run, play one of the seed's games in whole periods, `NAME`: "+strings.Join(overload.GameNames, ", "))
	fs.IntVar(&periods, "periods", 12, fmt.Sprintf("the game's length, `N` periods from 1 to %d", overload.MaxPeriods))
	if status, ok := fs.parse(args); !ok {
		return status
	}
	cfg.Seed = uint32(seed)
	fail := fs.usage
	stdout, stderr := fs.stdout, fs.stderr
	if fs.given("retries") {
		if retries < 0 || retries > overload.MaxRetries {
			return fail(fmt.Errorf("--retries %d: want 0 to %d", retries, overload.MaxRetries))
		}
		cfg.Retries = retries
		if retries == 0 {
			cfg.Retries = overload.NoRetries
		}
	}
	if fs.given("timeout") && !(cfg.Timeout > 0) {
		return fail(fmt.Errorf("--timeout %v: want more than 0 seconds; leave it out for the profile's", cfg.Timeout))
	}
	if fs.given("max-patience") && !(cfg.MaxPatience > 0) {
		return fail(fmt.Errorf("--max-patience %v: want more than 0 seconds; leave it out for the profile's", cfg.MaxPatience))
	}
	if fs.given("duration") && !(cfg.Duration > 0) {
		return fail(fmt.Errorf("--duration %v: want more than 0 seconds; leave it out for the profile's", cfg.Duration))
	}
	if fs.given("game") {
		for _, name := range []string{"profile", "inside", "outside", "adaptive", "threads", "alpha", "retries", "timeout", "max-patience", "duration", "seed", "compare", "format"} {
			if fs.given(name) {
				return fail(fmt.Errorf("--%s does not go with --game: a game has its own rules", name))
			}
		}
		g, err := overload.PlayGame(game, periods)
		if err != nil {
			return fail(err)
		}
		if err := overload.WriteGame(stdout, g); err != nil {
			fmt.Fprintf(stderr, "afloat lab overload: %v\n", err)
			return exitError
		}
		return exitOK
	}
	if fs.given("periods") {
		return fail(fmt.Errorf("--periods only with --game"))
	}
	if format != overload.FormatTable && format != overload.FormatCSV && format != overload.FormatJSONL {
		return fail(fmt.Errorf("--format %q: want table, csv or jsonl", format))
	}
	if compare {
		if fs.given("format") {
			return fail(fmt.Errorf("--format does not go with --compare, which prints a table of summaries"))
		}
		runs, err := overload.Compare(cfg)
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
	fmt.Fprint(w, `
Games (--game): game1, the seed's server with no limit; game2, the bouncer
(the real bulkhead, 2 inside and 2 waiting). Two CPUs, 3 units of work a
request, one request a period; a request leaves at the end of the period in
which its work is done.

The table and jsonl outputs end with the run's summary; with csv it goes to stderr.
`)
}
