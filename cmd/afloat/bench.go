package main

import (
	"cmp"
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/afloat/afloat/internal/cli"
	"github.com/afloat/afloat/overload/live"
)

// benchFlags are the flags of bench bulkhead.
type benchFlags struct {
	cfg             live.Config
	modes, soakMode string
	short, asJSON   bool
	soak, soakEvery time.Duration
	soakLoad        float64
}

// The flags of the comparison, and those of the soak: each set is refused
// with the other, where it would be ignored.
var (
	comparisonFlags = []string{"work", "deadline", "modes", "short", "json", "attempts"}
	soakFlags       = []string{"soak-mode", "soak-load", "soak-every"}
)

func (f *benchFlags) register(c *cli.Command) {
	c.DurationVar(&f.cfg.Work, "work", 10*time.Millisecond, "CPU time of one request on an idle core, 100µs to 1s")
	c.DurationVar(&f.cfg.Deadline, "deadline", 100*time.Millisecond, "clients give up after this long, from --work to 1m")
	c.StringVar(&f.modes, "modes", strings.Join(live.Modes, ","), "protections to compare, comma-separated: "+strings.Join(live.Modes, ", "))
	c.BoolVar(&f.short, "short", false, "shorter phases (about 14 s a protection instead of 25 s)")
	c.IntVar(&f.cfg.Attempts, "attempts", 3, fmt.Sprintf("runs of a protection before its result is given up as unreliable, 1 to %d", live.MaxAttempts))
	c.BoolVar(&f.asJSON, "json", false, "print the report as JSON")
	c.DurationVar(&f.soak, "soak", 0, "instead of the comparison, a soak this long at --soak-load × capacity, printing the server's heap and goroutines: 4 × --soak-every (40s) to 24h")
	c.StringVar(&f.soakMode, "soak-mode", "afloat-adaptive", "the protection of the soak: "+strings.Join(live.Modes, ", "))
	c.Float64Var(&f.soakLoad, "soak-load", 10, "the load of the soak, × capacity, above 0 and at most 100")
	c.DurationVar(&f.soakEvery, "soak-every", 10*time.Second, "how often the soak samples the server, 1s to 1h")
}

func runBenchBulkhead(c *cli.Command, args []string) int {
	var f benchFlags
	f.register(c)
	if status, ok := c.ParseFlags(args); !ok {
		return status
	}
	if err := cmp.Or(c.NotWith("soak", ": a soak runs --soak-mode at 5ms of work", comparisonFlags...),
		c.OnlyWith("soak", soakFlags...), c.NoZero("work", "deadline", "attempts")); err != nil {
		return c.Refuse(err)
	}
	ctx, stop := cli.Interruptible()
	defer stop()
	if c.Given("soak") {
		return f.runSoak(ctx, c)
	}
	cfg := f.cfg
	cfg.Modes = strings.Split(f.modes, ",")
	if f.short {
		cfg.Phases = live.ShortPhases
	}
	cfg.Progress = func(s string) { fmt.Fprintln(c.Stderr, s) }
	rep, err := live.Run(ctx, cfg)
	if err != nil {
		return c.Fail(err, live.ErrConfig)
	}
	if f.asJSON {
		err = cli.WriteJSON(c.Stdout, rep)
	} else {
		err = live.WriteReport(c.Stdout, rep)
	}
	if err != nil {
		return c.Failed(err)
	}
	if !rep.Reliable {
		fmt.Fprintln(c.Stderr, "afloat bench bulkhead: unreliable: the machine was too busy to give a meaningful answer; run it again on an idle machine")
		return cli.ExitError
	}
	return cli.ExitOK
}

func (f *benchFlags) runSoak(ctx context.Context, c *cli.Command) int {
	if err := live.CheckSoak(f.soakMode, f.soakLoad, f.soak, f.soakEvery); err != nil {
		return c.Refuse(err)
	}
	fmt.Fprintf(c.Stderr, "soak: %s at %v × capacity for %v\n", f.soakMode, f.soakLoad, f.soak)
	samples, err := live.Soak(ctx, "", f.soakMode, f.soakLoad, f.soak, f.soakEvery, func(s live.SoakSample) { live.WriteSoakSample(c.Stdout, s) })
	if err != nil {
		return c.Fail(err, live.ErrConfig)
	}
	if err := live.Flat(samples, 8<<20); err != nil {
		fmt.Fprintf(c.Stdout, "NOT FLAT: %v\n", err)
		return cli.ExitError
	}
	fmt.Fprintln(c.Stdout, "flat: the heap stayed within 8 MB of its median and the goroutines came back")
	return cli.ExitOK
}
