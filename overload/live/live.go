package live

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"
)

// ErrConfig is returned for a comparison or a soak that cannot be made.
var ErrConfig = errors.New("live: invalid configuration")

// Phase is a stretch of constant load, as a multiple of capacity.
type Phase struct {
	Name     string
	Load     float64
	Duration time.Duration
}

// Config configures a live comparison. The zero value takes the defaults
// on each field.
type Config struct {
	Work     time.Duration // CPU time of one request on an idle core; default 10 ms
	Deadline time.Duration // clients give up after this; default 100 ms
	Phases   []Phase       // default DefaultPhases
	Modes    []string      // default Modes
	// Attempts is how many times a protection is run before its result is
	// given up as unreliable: a run whose checks fail (the calibration
	// drifted, the server did not get its core while loaded, impossible
	// numbers) is run again from a fresh calibration. A calibration that
	// fails its checks is not tried again: the machine is too busy to
	// measure, and the comparison ends there (Report.StoppedEarly).
	// Default 3, at most MaxAttempts.
	Attempts int
	// Executable is the binary to start as the server; default this one.
	// It must call ServeIfChild first thing (cmd/afloat does, and so do
	// this package's tests).
	Executable string
	// Progress, if set, is told what runs, in English.
	Progress func(string)
	// Step, if set, is told the same as data, for a caller that words it
	// itself (the console, in its user's language).
	Step func(Step)
}

// Step is what a live comparison is doing: calibrating the server before a
// protection, or running the phases through it.
type Step struct {
	What     string `json:"what"` // StepCalibrating or StepRunning
	Mode     string `json:"mode"`
	Attempt  int    `json:"attempt"`  // from 1
	Attempts int    `json:"attempts"` // Config.Attempts
}

// Step.What's values.
const (
	StepCalibrating = "calibrating"
	StepRunning     = "running"
)

func (s Step) String() string {
	if s.What == StepRunning {
		return "running " + s.Mode
	}
	return fmt.Sprintf("calibrating for %s (attempt %d of %d)", s.Mode, s.Attempt, s.Attempts)
}

// Bounds of a live comparison and of a soak, for callers that check their
// input before they start one.
const (
	MinWork     = 100 * time.Microsecond // Config.Work
	MaxWork     = time.Second
	MaxDeadline = time.Minute // Config.Deadline, from Work
	MaxLoad     = 100         // × capacity, a phase's or a soak's
	MaxAttempts = 10
	// A soak samples the server every interval, from MinSoakEvery to
	// MaxSoakEvery, and lasts from SoakIntervals intervals to MaxSoak. Flat
	// compares the last sample under load with the median of those under
	// load: that takes three, taken at one, two and three intervals, so a
	// soak lasts at least four.
	MinSoakEvery  = time.Second
	MaxSoakEvery  = time.Hour
	SoakIntervals = 4
	MaxSoak       = 24 * time.Hour
)

// Modes are the protections compared.
var Modes = []string{"none", "afloat-fixed", "afloat-adaptive", "failsafe-go"}

// modeNames are the protections' names, as a report writes them.
var modeNames = map[string]string{
	"none":            "no protection",
	"afloat-fixed":    "afloat's bulkhead, fixed limit",
	"afloat-adaptive": "afloat's bulkhead, adaptive limit",
	"failsafe-go":     "failsafe-go's bulkhead",
}

// ModeName is a protection's name in plain English, for a mode of Modes
// ("afloat-fixed" is "afloat's bulkhead, fixed limit"); the mode itself
// for any other.
func ModeName(mode string) string {
	if n, ok := modeNames[mode]; ok {
		return n
	}
	return mode
}

// DefaultPhases is the load of a comparison: half of capacity, all of it,
// three times it, half, ten times it, half. Recovery is measured in the
// calm phases after the overloads.
var DefaultPhases = []Phase{
	{"0.5x", 0.5, 3 * time.Second},
	{"1x", 1, 4 * time.Second},
	{"3x", 3, 5 * time.Second},
	{"after 3x", 0.5, 4 * time.Second},
	{"10x", 10, 5 * time.Second},
	{"after 10x", 0.5, 4 * time.Second},
}

// ShortPhases is a quicker comparison, for the console.
var ShortPhases = []Phase{
	{"0.5x", 0.5, 2 * time.Second},
	{"1x", 1, 2 * time.Second},
	{"3x", 3, 3 * time.Second},
	{"after 3x", 0.5, 2 * time.Second},
	{"10x", 10, 3 * time.Second},
	{"after 10x", 0.5, 2 * time.Second},
}

// PhaseReport is what one phase of one mode saw. Goodput is responses
// within the deadline per second ÷ capacity.
type PhaseReport struct {
	Name     string        `json:"name"`
	Load     float64       `json:"load"`
	Planned  int           `json:"planned"`  // requests the load called for
	Sent     int           `json:"sent"`     // requests the generator sent
	Good     int           `json:"good"`     // 200 within the deadline
	Rejected int           `json:"rejected"` // 503
	Timeouts int           `json:"timeouts"` // no answer within the deadline
	Goodput  float64       `json:"goodput"`
	P50      time.Duration `json:"p50_ns"` // of the requests admitted and answered
	P99      time.Duration `json:"p99_ns"`
	// CPUShare is the share of the phase's wall time the server process
	// spent on its core; −1 where it cannot be read.
	CPUShare float64 `json:"cpu_share"`
}

// Calibration is what was measured before a protection ran: the handler's
// CPU cost fitted to Work on the server's core, the share of that core the
// server got meanwhile, and the latency and throughput that follow.
type Calibration struct {
	Rounds    int           `json:"rounds"`    // SHA-256 rounds a request
	CPUShare  float64       `json:"cpu_share"` // −1: not measured here
	NoLoadP50 time.Duration `json:"no_load_p50_ns"`
	NoLoadP99 time.Duration `json:"no_load_p99_ns"`
	Capacity  float64       `json:"capacity"` // requests per second, measured
}

// Check is one test a run's numbers were put to.
type Check struct {
	// Name is one of cpu_share (the server's share of its core, during
	// calibration or an overload), p50_vs_work (the no-load latency against
	// the work), capacity_vs_work (the measured capacity against the one a
	// core can give), goodput (at most 100 % of capacity), calm (a calm
	// phase before any overload served in full), sent (the load generator
	// kept up) and drift (the no-load latency after the run against the
	// one before).
	Name  string  `json:"name"`
	Phase string  `json:"phase,omitempty"` // the phase it looked at, if one
	Value float64 `json:"value"`
	Min   float64 `json:"min"`
	Max   float64 `json:"max"`
	OK    bool    `json:"ok"`
}

func (c Check) String() string {
	where := ""
	if c.Phase != "" {
		where = " in phase " + c.Phase
	}
	return fmt.Sprintf("%s%s: %.3g, want %.3g to %.3g", c.Name, where, c.Value, c.Min, c.Max)
}

// Explain says what a check measured and what it expected in plain
// English, for a person rather than a log: String is the terse form.
func (c Check) Explain() string {
	pct := func(v float64) string { return fmt.Sprintf("%.0f %%", 100*v) }
	where := " while it was being measured"
	if c.Phase != "" {
		where = fmt.Sprintf(" in the phase %q", c.Phase)
	}
	switch c.Name {
	case "cpu_share":
		return fmt.Sprintf("the server had %s of its processor core%s; it needs at least %s, so another program was using that core", pct(c.Value), where, pct(c.Min))
	case "p50_vs_work":
		return fmt.Sprintf("sent one at a time, requests took %.2f times their work; expected %.2f to %.2f times", c.Value, c.Min, c.Max)
	case "capacity_vs_work":
		return fmt.Sprintf("the server's capacity came out at %s of what one core can do; expected %s to %s", pct(c.Value), pct(c.Min), pct(c.Max))
	case "goodput":
		return fmt.Sprintf("the server seemed to answer %s of its capacity in time%s, more than it can (at most %s): the measurement was disturbed", pct(c.Value), where, pct(c.Max))
	case "calm":
		return fmt.Sprintf("under a light load, before any overload%s, the server answered only %s of it in time; expected at least %s", where, pct(c.Value), pct(c.Min))
	case "sent":
		return fmt.Sprintf("the load generator sent only %s of the requests asked for%s; expected at least %s, so its own core was busy", pct(c.Value), where, pct(c.Min))
	case "drift":
		return fmt.Sprintf("sent one at a time, requests took %.2f times as long after the run as before; expected %.2f to %.2f, so the machine changed during the run", c.Value, c.Min, c.Max)
	}
	return c.String()
}

// Attempt is one run of a protection: its calibration, what it saw and
// the checks it passed or failed.
type Attempt struct {
	Calibration Calibration   `json:"calibration"`
	Phases      []PhaseReport `json:"phases,omitempty"`
	Checks      []Check       `json:"checks"`
	OK          bool          `json:"ok"`
}

// ModeReport is one protection's run of every phase: that of its last
// attempt, which is the first that passed its checks if one did.
type ModeReport struct {
	Mode   string        `json:"mode"`
	Phases []PhaseReport `json:"phases"`
	// Recovery is, for each overload phase, how long after it ended the
	// server was back to normal: a second in a row of answers within twice
	// the no-load p99 and no give-ups. −1 ns: not within the next phase.
	Recovery map[string]time.Duration `json:"recovery_ns"`
	// Calibration is the attempt's; the goodput and the p99 ratio are
	// against its capacity and no-load p99.
	Calibration Calibration `json:"calibration"`
	Attempts    []Attempt   `json:"attempts"`
	Reliable    bool        `json:"reliable"`
}

// Conclusion is the comparison's answer in a line: at the highest load,
// the protection that answered most in time, its goodput and p99 ratio,
// and the goodput without protection (−1 if that was not run).
type Conclusion struct {
	Load     float64 `json:"load"`
	Best     string  `json:"best"`
	Goodput  float64 `json:"goodput"`
	P99Ratio float64 `json:"p99_ratio"`
	None     float64 `json:"none_goodput"`
}

func (c Conclusion) String() string {
	none := ""
	if c.None >= 0 {
		none = fmt.Sprintf("; without protection %.0f %%", 100*c.None)
	}
	return fmt.Sprintf("at %g× capacity, %s answered %.0f %% of capacity in time with a p99 %.1f× the no-load p99%s",
		c.Load, c.Best, 100*c.Goodput, c.P99Ratio, none)
}

// Report is a whole comparison.
type Report struct {
	Cores    int           `json:"cores"`
	Work     time.Duration `json:"work_ns"`
	Deadline time.Duration `json:"deadline_ns"`
	// Capacity and the no-load latencies are those of the first
	// protection's calibration, for a summary line; each mode's goodput is
	// against its own.
	Capacity  float64       `json:"capacity"`
	NoLoadP50 time.Duration `json:"no_load_p50_ns"`
	NoLoadP99 time.Duration `json:"no_load_p99_ns"`
	Modes     []ModeReport  `json:"modes"`
	// Reliable says every protection passed its checks within its
	// attempts. When it is false the numbers mean nothing — the machine
	// was too busy — and Conclusion is nil.
	Reliable bool `json:"reliable"`
	// StoppedEarly says a calibration failed its checks and ended the
	// comparison there: the machine was too busy to measure the server at
	// all. The last mode reported is the one it was calibrating for; the
	// modes after it did not run.
	StoppedEarly bool        `json:"stopped_early"`
	Conclusion   *Conclusion `json:"conclusion,omitempty"`
}

// Problems lists the checks the last attempt of each unreliable mode
// failed.
func (r Report) Problems() []string {
	var out []string
	for _, m := range r.Modes {
		if m.Reliable || len(m.Attempts) == 0 {
			continue
		}
		for _, c := range m.Attempts[len(m.Attempts)-1].Checks {
			if !c.OK {
				out = append(out, m.Mode+": "+c.String())
			}
		}
	}
	return out
}

// retryPause is the wait before a protection's next attempt.
const retryPause = 2 * time.Second

func (cfg *Config) defaults() error {
	if cfg.Work == 0 {
		cfg.Work = 10 * time.Millisecond
	}
	if cfg.Deadline == 0 {
		cfg.Deadline = 100 * time.Millisecond
	}
	if cfg.Phases == nil {
		cfg.Phases = DefaultPhases
	}
	if cfg.Modes == nil {
		cfg.Modes = Modes
	}
	if cfg.Attempts == 0 {
		cfg.Attempts = 3
	}
	if cfg.Progress == nil {
		cfg.Progress = func(string) {}
	}
	if cfg.Step == nil {
		cfg.Step = func(Step) {}
	}
	switch {
	case cfg.Work < MinWork || cfg.Work > MaxWork:
		return fmt.Errorf("%w: work %v: want %v to %v", ErrConfig, cfg.Work, MinWork, MaxWork)
	case cfg.Deadline < cfg.Work || cfg.Deadline > MaxDeadline:
		return fmt.Errorf("%w: deadline %v: want the work (%v) to 1m", ErrConfig, cfg.Deadline, cfg.Work)
	case len(cfg.Phases) == 0:
		return fmt.Errorf("%w: no phases", ErrConfig)
	case cfg.Attempts < 1 || cfg.Attempts > MaxAttempts:
		return fmt.Errorf("%w: attempts %d: want 1 to %d", ErrConfig, cfg.Attempts, MaxAttempts)
	}
	for _, p := range cfg.Phases {
		if !(p.Load > 0 && p.Load <= MaxLoad) || p.Duration <= 0 || p.Duration > time.Hour {
			return fmt.Errorf("%w: phase %q: load %v × capacity for %v: want a load above 0 and at most 100, and up to an hour", ErrConfig, p.Name, p.Load, p.Duration)
		}
	}
	if len(cfg.Modes) == 0 {
		return fmt.Errorf("%w: no modes: want some of %s", ErrConfig, strings.Join(Modes, ", "))
	}
	for _, m := range cfg.Modes {
		if !slices.Contains(Modes, m) {
			return fmt.Errorf("%w: mode %q: want some of %s", ErrConfig, m, strings.Join(Modes, ", "))
		}
	}
	return nil
}

// Run runs a live comparison. It starts the server process on a free
// loopback port and stops it before it returns; it takes as long as the
// phases take, per mode and attempt, plus a few seconds a mode to
// calibrate.
//
// Before each protection runs, the server fits its handler to Work on its
// core and the no-load latency and the capacity are measured; the run is
// checked against them (Check) and run again, up to Attempts times, when
// the checks fail. A calibration that fails its own checks ends the
// comparison at once (StoppedEarly): a machine too busy to measure the
// server seldom frees itself in the moments a retry waits, and retrying
// every protection would take minutes to say the same. A report whose
// protections all pass is Reliable and carries a Conclusion; otherwise the
// machine was too busy to tell.
func Run(ctx context.Context, cfg Config) (Report, error) {
	if err := cfg.defaults(); err != nil {
		return Report{}, err
	}
	srv, err := startChild(ctx, cfg.Executable, cfg.Work)
	if err != nil {
		return Report{}, err
	}
	defer srv.stop()
	defer pinSelf()()
	client := newLoadClient()
	defer client.CloseIdleConnections()
	rep := Report{Cores: 1, Work: cfg.Work, Deadline: cfg.Deadline, Reliable: true}

	step := func(s Step) {
		cfg.Step(s)
		cfg.Progress(s.String())
	}
	for _, mode := range cfg.Modes {
		mr := ModeReport{Mode: mode}
		for attempt := 1; attempt <= cfg.Attempts; attempt++ {
			if attempt > 1 {
				// Whatever took the machine may be gone in a moment.
				select {
				case <-time.After(retryPause):
				case <-ctx.Done():
					return Report{}, ctx.Err()
				}
			}
			step(Step{What: StepCalibrating, Mode: mode, Attempt: attempt, Attempts: cfg.Attempts})
			a, phases, recovery, err := runAttempt(ctx, srv, client, mode, cfg, func() {
				step(Step{What: StepRunning, Mode: mode, Attempt: attempt, Attempts: cfg.Attempts})
			})
			if err != nil {
				return Report{}, err
			}
			mr.Attempts = append(mr.Attempts, a)
			mr.Calibration, mr.Phases, mr.Recovery = a.Calibration, phases, recovery
			if a.OK {
				mr.Reliable = true
				break
			}
			if a.Phases == nil { // the calibration failed: nothing ran
				rep.StoppedEarly = true
				break
			}
		}
		if len(rep.Modes) == 0 {
			rep.Capacity, rep.NoLoadP50, rep.NoLoadP99 = mr.Calibration.Capacity, mr.Calibration.NoLoadP50, mr.Calibration.NoLoadP99
		}
		rep.Reliable = rep.Reliable && mr.Reliable
		rep.Modes = append(rep.Modes, mr)
		if rep.StoppedEarly {
			break
		}
	}
	srv.setMode(ctx, client, "none", time.Millisecond) // drop the last backlog before stopping
	if rep.Reliable {
		rep.Conclusion = conclude(rep)
	}
	return rep, nil
}

// runAttempt calibrates, and unless the calibration fails its checks,
// runs the phases through one protection and checks what they saw.
// It returns no phases when the calibration failed.
func runAttempt(ctx context.Context, srv *child, client *http.Client, mode string, cfg Config, running func()) (Attempt, []PhaseReport, map[string]time.Duration, error) {
	var a Attempt
	cal, err := srv.calibrate(ctx, client, cfg.Work)
	if err != nil {
		return a, nil, nil, err
	}
	a.Calibration = cal
	a.Checks = calibrationChecks(cal, cfg.Work)
	if ctx.Err() != nil {
		return a, nil, nil, ctx.Err()
	}
	if !allOK(a.Checks) {
		return a, nil, nil, nil // no use loading a server that cannot be measured
	}
	running()
	if err := srv.setMode(ctx, client, mode, cal.NoLoadP50); err != nil {
		return a, nil, nil, err
	}
	outs := runPhases(ctx, client, srv.url+"/work", cal.Capacity, cfg)
	if ctx.Err() != nil {
		return a, nil, nil, ctx.Err()
	}
	samples, err := srv.cpuSamples(ctx, client)
	if err != nil {
		return a, nil, nil, err
	}
	phases, recovery := summarize(outs, cal, cfg, samples)
	// Drop the backlog this mode left, then measure again: a no-load p50
	// that moved says the machine changed under the run.
	if err := srv.setMode(ctx, client, "none", cal.NoLoadP50); err != nil {
		return a, nil, nil, err
	}
	after, _ := noLoad(ctx, client, srv.url+"/none", 50)
	a.Phases = phases
	a.Checks = append(a.Checks, runChecks(phases, cal, after)...)
	a.OK = allOK(a.Checks)
	return a, phases, recovery, ctx.Err()
}

func allOK(cs []Check) bool {
	for _, c := range cs {
		if !c.OK {
			return false
		}
	}
	return true
}
