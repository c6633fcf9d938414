package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/afloat/afloat/overload"
)

const benchUsage = `Usage:
  afloat bench bulkhead [flags]   a real HTTP comparison of overload protections on loopback

Run 'afloat bench bulkhead --help' for its flags.
`

func runBench(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprintf(stderr, "afloat bench: missing benchmark\n\n%s", benchUsage)
		return exitUsage
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		fmt.Fprint(stdout, benchUsage)
		return exitOK
	case "bulkhead":
		return runBenchBulkhead(args[1:], stdout, stderr)
	}
	fmt.Fprintf(stderr, "afloat bench: unknown benchmark %q\n\n%s", args[0], benchUsage)
	return exitUsage
}

func runBenchBulkhead(args []string, stdout, stderr io.Writer) int {
	var (
		cfg       overload.LiveConfig
		modes     string
		short     bool
		asJSON    bool
		soak      time.Duration
		soakMode  string
		soakLoad  float64
		soakEvery time.Duration
	)
	fs := newCommand("bench bulkhead", "afloat bench bulkhead [--short] [--modes LIST] [--work 10ms] [--deadline 100ms] [--json] | --soak 10m", printBenchNotes)
	fs.DurationVar(&cfg.Work, "work", 10*time.Millisecond, "CPU time of one request on an idle core, 100µs to 1s")
	fs.DurationVar(&cfg.Deadline, "deadline", 100*time.Millisecond, "clients give up after this long, from --work to 1m")
	fs.StringVar(&modes, "modes", strings.Join(overload.LiveModes, ","), "protections to compare, comma-separated: "+strings.Join(overload.LiveModes, ", "))
	fs.BoolVar(&short, "short", false, "shorter phases (about 14 s a protection instead of 25 s)")
	fs.BoolVar(&asJSON, "json", false, "print the report as JSON")
	fs.DurationVar(&soak, "soak", 0, "instead, run a soak this long at --soak-load × capacity and print the server's heap and goroutines")
	fs.StringVar(&soakMode, "soak-mode", "afloat-adaptive", "the protection of the soak")
	fs.Float64Var(&soakLoad, "soak-load", 10, "the load of the soak, × capacity")
	fs.DurationVar(&soakEvery, "soak-every", 10*time.Second, "how often the soak samples the server")
	if status, ok := fs.parse(args, stdout, stderr); !ok {
		return status
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	if soak > 0 {
		fmt.Fprintf(stderr, "soak: %s at %v × capacity for %v\n", soakMode, soakLoad, soak)
		samples, err := overload.Soak(ctx, "", soakMode, soakLoad, soak, soakEvery, func(s overload.SoakSample) {
			fmt.Fprintf(stdout, "%8.1f s  heap %7.2f MB  %5d goroutines  %8d answered  %8d refused\n",
				s.At.Seconds(), float64(s.HeapInuse)/1e6, s.Goroutines, s.Good, s.Rejected)
		})
		if err != nil {
			if errors.Is(err, overload.ErrConfig) {
				return usageError(stderr, "bench bulkhead", err)
			}
			fmt.Fprintf(stderr, "afloat bench bulkhead: %v\n", err)
			return exitError
		}
		if err := overload.Flat(samples, 8<<20); err != nil {
			fmt.Fprintf(stdout, "NOT FLAT: %v\n", err)
			return exitError
		}
		fmt.Fprintln(stdout, "flat: the heap stayed within 8 MB of its median and the goroutines came back")
		return exitOK
	}

	cfg.Modes = strings.Split(modes, ",")
	if short {
		cfg.Phases = overload.ShortPhases
	}
	cfg.Progress = func(s string) { fmt.Fprintln(stderr, s) }
	rep, err := overload.RunLive(ctx, cfg)
	if err != nil {
		if errors.Is(err, overload.ErrConfig) {
			return usageError(stderr, "bench bulkhead", err)
		}
		fmt.Fprintf(stderr, "afloat bench bulkhead: %v\n", err)
		return exitError
	}
	if asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", " ")
		if err := enc.Encode(rep); err != nil {
			return exitError
		}
		return exitOK
	}
	if err := overload.WriteLive(stdout, rep); err != nil {
		return exitError
	}
	return exitOK
}

func printBenchNotes(w io.Writer) {
	fmt.Fprint(w, `
The server is this binary again, in a child process on one core (taskset -c 0
where available); the open-loop load comes from this process on the other
cores. Each protection sees the same phases: 0.5x, 1x, 3x, 0.5x, 10x, 0.5x
the measured capacity. Goodput is answers within the deadline per second
divided by capacity; recovery is the time after an overload until a second
passes with every answer within twice the no-load p99 and no give-up.
`)
}
