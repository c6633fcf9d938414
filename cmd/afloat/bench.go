package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/afloat/afloat/overload/live"
)

// benchFlags are the flags of bench bulkhead.
type benchFlags struct {
	cfg       live.Config
	modes     string
	short     bool
	asJSON    bool
	soak      time.Duration
	soakMode  string
	soakLoad  float64
	soakEvery time.Duration
}

// The flags of the comparison, and those of the soak: each set is refused
// with the other, where it would be ignored.
var (
	comparisonFlags = []string{"work", "deadline", "modes", "short", "json", "attempts"}
	soakFlags       = []string{"soak-mode", "soak-load", "soak-every"}
)

func runBenchBulkhead(fs *command, args []string) int {
	var f benchFlags
	fs.DurationVar(&f.cfg.Work, "work", 10*time.Millisecond, "CPU time of one request on an idle core, 100µs to 1s")
	fs.DurationVar(&f.cfg.Deadline, "deadline", 100*time.Millisecond, "clients give up after this long, from --work to 1m")
	fs.StringVar(&f.modes, "modes", strings.Join(live.Modes, ","), "protections to compare, comma-separated: "+strings.Join(live.Modes, ", "))
	fs.BoolVar(&f.short, "short", false, "shorter phases (about 14 s a protection instead of 25 s)")
	fs.IntVar(&f.cfg.Attempts, "attempts", 3, fmt.Sprintf("runs of a protection before its result is given up as unreliable, 1 to %d", live.MaxAttempts))
	fs.BoolVar(&f.asJSON, "json", false, "print the report as JSON")
	fs.DurationVar(&f.soak, "soak", 0, "instead of the comparison, a soak this long at --soak-load × capacity, printing the server's heap and goroutines: 4 × --soak-every (40s) to 24h")
	fs.StringVar(&f.soakMode, "soak-mode", "afloat-adaptive", "the protection of the soak: "+strings.Join(live.Modes, ", "))
	fs.Float64Var(&f.soakLoad, "soak-load", 10, "the load of the soak, × capacity, above 0 and at most 100")
	fs.DurationVar(&f.soakEvery, "soak-every", 10*time.Second, "how often the soak samples the server, 1s to 1h")
	if status, ok := fs.parse(args); !ok {
		return status
	}
	fail := fs.usage
	stdout, stderr := fs.stdout, fs.stderr
	if err := f.check(fs); err != nil {
		return fail(err)
	}
	ctx, stop := interruptible()
	defer stop()

	if fs.given("soak") {
		fmt.Fprintf(stderr, "soak: %s at %v × capacity for %v\n", f.soakMode, f.soakLoad, f.soak)
		samples, err := live.Soak(ctx, "", f.soakMode, f.soakLoad, f.soak, f.soakEvery, func(s live.SoakSample) {
			fmt.Fprintf(stdout, "%8.1f s  heap %7.2f MB  %5d goroutines  %8d answered  %8d refused\n",
				s.At.Seconds(), float64(s.HeapInuse)/1e6, s.Goroutines, s.Good, s.Rejected)
		})
		if err != nil {
			if errors.Is(err, live.ErrConfig) {
				return fail(err)
			}
			return fs.failed(err)
		}
		if err := live.Flat(samples, 8<<20); err != nil {
			fmt.Fprintf(stdout, "NOT FLAT: %v\n", err)
			return exitError
		}
		fmt.Fprintln(stdout, "flat: the heap stayed within 8 MB of its median and the goroutines came back")
		return exitOK
	}

	cfg := f.cfg
	cfg.Modes = strings.Split(f.modes, ",")
	if f.short {
		cfg.Phases = live.ShortPhases
	}
	cfg.Progress = func(s string) { fmt.Fprintln(stderr, s) }
	rep, err := live.Run(ctx, cfg)
	if err != nil {
		if errors.Is(err, live.ErrConfig) {
			return fail(err)
		}
		return fs.failed(err)
	}
	if f.asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", " ")
		if err := enc.Encode(rep); err != nil {
			return exitError
		}
	} else if err := live.WriteReport(stdout, rep); err != nil {
		return exitError
	}
	if !rep.Reliable {
		fmt.Fprintln(stderr, "afloat bench bulkhead: unreliable: the machine was too busy to give a meaningful answer; run it again on an idle machine")
		return exitError
	}
	return exitOK
}

// check refuses what the package would take another way: a zero work or
// deadline (its default), NaN (which no comparison refuses), and the
// flags of the mode not run, which would be ignored.
func (f *benchFlags) check(fs *command) error {
	soak := fs.given("soak")
	for _, name := range comparisonFlags {
		if soak && fs.given(name) {
			return fmt.Errorf("--%s is for the comparison, not with --soak: a soak runs --soak-mode at 5ms of work", name)
		}
	}
	for _, name := range soakFlags {
		if !soak && fs.given(name) {
			return fmt.Errorf("--%s only with --soak: without it the command runs the comparison", name)
		}
	}
	if soak {
		if f.soakEvery < live.MinSoakEvery || f.soakEvery > live.MaxSoakEvery {
			return fmt.Errorf("--soak-every %v: want %v to 1h", f.soakEvery, live.MinSoakEvery)
		}
		if least := live.SoakIntervals * f.soakEvery; f.soak < least || f.soak > live.MaxSoak {
			return fmt.Errorf("--soak %v: want %v (%d × --soak-every) to 24h, for three samples under load; leave --soak out to run the comparison",
				f.soak, least, live.SoakIntervals)
		}
		if !(f.soakLoad > 0 && f.soakLoad <= live.MaxLoad) {
			return fmt.Errorf("--soak-load %v: want a number above 0 and at most %d (× capacity)", f.soakLoad, live.MaxLoad)
		}
		if !slices.Contains(live.Modes, f.soakMode) {
			return fmt.Errorf("--soak-mode %q: want one of %s", f.soakMode, strings.Join(live.Modes, ", "))
		}
		return nil
	}
	if w := f.cfg.Work; w < live.MinWork || w > live.MaxWork {
		return fmt.Errorf("--work %v: want %v to %v", w, live.MinWork, live.MaxWork)
	}
	if a := f.cfg.Attempts; a < 1 || a > live.MaxAttempts {
		return fmt.Errorf("--attempts %d: want 1 to %d", a, live.MaxAttempts)
	}
	if d := f.cfg.Deadline; d < f.cfg.Work || d > live.MaxDeadline {
		return fmt.Errorf("--deadline %v: want the work (--work %v) to 1m", d, f.cfg.Work)
	}
	for _, m := range strings.Split(f.modes, ",") {
		if !slices.Contains(live.Modes, m) {
			return fmt.Errorf("--modes: mode %q: want some of %s", m, strings.Join(live.Modes, ", "))
		}
	}
	return nil
}

func printBenchNotes(w io.Writer) {
	fmt.Fprint(w, `
The server is this binary again, in a child process on one core (taskset -c 0
where available); the open-loop load comes from this process on the other
cores. Each protection sees the same phases: 0.5x, 1x, 3x, 0.5x, 10x, 0.5x
the measured capacity. Goodput is answers within the deadline per second
divided by capacity; recovery is the time after an overload until a second
passes with every answer within twice the no-load p99 and no give-up.

Before each protection runs, the server fits its handler to --work of CPU
time on its core, and the no-load latency and the capacity are measured.
The run is checked: the server had at least 85 % of its core while it
calibrated and while it was overloaded; the no-load p50 is 0.9 to 1.5 times
the work (plus 2 ms); capacity × work is 0.7 to 1.05 (one core); goodput
is at most 105 %; the first calm phase is served in full; the generator
sent at least 95 % of the load; the no-load p50 after the run is within
0.8 to 1.25 times the one before. A protection whose checks fail is run
again from a new calibration, up to --attempts times; if one never
passes, the machine was too busy: the command says so, prints the failed
checks instead of the figures, and exits 1.

With --soak, the command runs a soak instead: one protection (--soak-mode)
at --soak-load × capacity, 5 ms of work a request, the server sampled every
--soak-every and once more after the load. It is flat when the last sample
under load is within 8 MB of the median of those under load and the
goroutines come back; that takes three samples under load, so --soak is at
least 4 × --soak-every. Left out, there is no soak; --soak 0s is refused.
The flags of the comparison (--work, --deadline, --modes, --short, --json)
do not go with --soak, nor those of the soak without it. Exit status 2 for
a refused flag, 1 for a failed or unreliable run or a soak that is not flat.
`)
}
