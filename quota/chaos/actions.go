package chaos

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/afloat/afloat/quota"
	"github.com/afloat/afloat/quota/eventlog"
)

// A scripted run: instead of the faults a seed draws, a person chooses
// them — shift the traffic, cut a region off, crash or pause the
// coordinator, skew a clock — each at a moment of the run, and the same
// seed and actions replay the same run. Script turns the actions into a
// Schedule; the seed still draws the requests (arrivals and costs), so a
// run is a pure function of (config, seed, actions).

// ActionKind is what an action does.
type ActionKind uint8

// The kinds of actions.
const (
	// ActShift sets the traffic offered in each region from At on.
	ActShift ActionKind = iota + 1
	// ActPartition cuts Region off from every coordinator until a heal
	// (or the end of the run).
	ActPartition
	// ActHeal reconnects a region cut off by an earlier partition.
	ActHeal
	// ActCrash kills the running coordinator; a successor restarts from
	// the ledger, fencing it, Down later.
	ActCrash
	// ActPause freezes the running coordinator; a successor takes over
	// Down later and the regions turn to it at once; the old process wakes
	// Wake after At, still believing it leads, and handles what was sent
	// to it meanwhile — its writes are refused by the fenced ledger.
	ActPause
	// ActSkew makes a node's clock run at 1 + Drift from At on (the clock
	// stays continuous: a monotonic clock never jumps). Region names a
	// region, or is "" for the coordinator process running at At.
	ActSkew
)

var actionNames = []string{ActShift: "shift", ActPartition: "partition", ActHeal: "heal", ActCrash: "crash", ActPause: "pause", ActSkew: "skew"}

func (k ActionKind) String() string {
	if int(k) < len(actionNames) && actionNames[k] != "" {
		return actionNames[k]
	}
	return fmt.Sprintf("action(%d)", k)
}

// ParseActionKind reads an action's name: shift, partition, heal, crash,
// pause or skew.
func ParseActionKind(s string) (ActionKind, error) {
	for k, n := range actionNames {
		if n != "" && n == s {
			return ActionKind(k), nil
		}
	}
	return 0, fmt.Errorf("%w: action %q: want one of %s", quota.ErrConfig, s, strings.Join(actionNames[1:], ", "))
}

// Action is one change a person makes to a run at a chosen moment.
type Action struct {
	At   time.Duration
	Kind ActionKind
	// Region: the region cut off or healed; the region whose clock is
	// skewed ("" for the coordinator).
	Region string
	// Rates: for a shift, the offered load by region in tokens a second
	// (a region left out offers nothing).
	Rates map[string]float64
	// Down: for a crash or a pause, how long until a successor runs.
	Down time.Duration
	// Wake: for a pause, how long until the old process wakes.
	Wake time.Duration
	// Drift: for a skew, the clock's new rate error, within ±500 ppm (the
	// most NTP slews a clock, and what the regions derate for).
	Drift float64
}

// Limits of a scripted run.
const (
	MaxActions    = 100
	MaxOutageTime = 10 * time.Minute // Down and Wake
	MaxDrift      = maxDrift         // |Drift| of a skew
	MaxRate       = 1e7              // tokens a second offered in one region
)

// ActionError is an action out of range: its index, the field at fault
// (at, kind, region, rates, down, wake, drift) and why.
type ActionError struct {
	Index int
	Field string
	Err   error
}

func (e *ActionError) Error() string {
	return fmt.Sprintf("chaos: actions[%d].%s: %v", e.Index, e.Field, e.Err)
}

func (e *ActionError) Unwrap() error { return e.Err }

// ClockChange is a change of a node's clock during a run: from At on it
// runs at 1 + Drift, continuous with what it read before.
type ClockChange struct {
	At     time.Duration
	Region string // "" for the coordinator process running at At
	Drift  float64
}

// Script returns the schedule of a scripted run: the traffic start
// (tokens a second by region) from the beginning, then each action at its
// time, on a clean network (20 ms each way, nothing lost) with true
// clocks. Actions must come in order of time, within the run, and make
// sense where they fall: a region cut off only once, healed only when cut
// off, the coordinator crashed or paused only while one runs. The error
// is an *ActionError naming the action and the field, wrapping
// quota.ErrConfig.
func Script(cfg Config, start map[string]float64, actions []Action) (*Schedule, error) {
	cfg = cfg.withDefaults()
	t := cfg.Tenant
	if len(actions) > MaxActions {
		return nil, fmt.Errorf("%w: %d actions: want at most %d", quota.ErrConfig, len(actions), MaxActions)
	}
	if err := checkRates(t, start); err != nil {
		return nil, fmt.Errorf("%w: traffic: %v", quota.ErrConfig, err)
	}
	s := &Schedule{Traffic: []Segment{{At: 0, Rates: cloneRates(start)}}}
	cut := map[string]int{} // region → index of its open cut in s.Partitions
	var busyUntil time.Duration
	for i, a := range actions {
		bad := func(field, format string, args ...any) error {
			return &ActionError{Index: i, Field: field, Err: fmt.Errorf("%w: "+format, append([]any{quota.ErrConfig}, args...)...)}
		}
		switch {
		case a.At < 0 || a.At >= cfg.Duration:
			return nil, bad("at", "%v: want 0 to less than the run's length (%v)", a.At, cfg.Duration)
		case i > 0 && a.At < actions[i-1].At:
			return nil, bad("at", "%v: before actions[%d] at %v: want actions in order of time", a.At, i-1, actions[i-1].At)
		}
		switch a.Kind {
		case ActShift:
			if err := checkRates(t, a.Rates); err != nil {
				return nil, bad("rates", "%v", err)
			}
			s.Traffic = append(s.Traffic, Segment{At: a.At, Rates: cloneRates(a.Rates)})
		case ActPartition:
			if !t.HasRegion(a.Region) {
				return nil, bad("region", "%q: want one of %s", a.Region, strings.Join(t.Regions, ", "))
			}
			if k, ok := cut[a.Region]; ok {
				return nil, bad("region", "%s is already cut off (since %v): heal it first", a.Region, s.Partitions[k].From)
			}
			cut[a.Region] = len(s.Partitions)
			s.Partitions = append(s.Partitions, Cut{Region: a.Region, From: a.At, To: cfg.Duration})
		case ActHeal:
			k, ok := cut[a.Region]
			if !ok {
				return nil, bad("region", "%q is not cut off: want a region cut off by an earlier partition", a.Region)
			}
			s.Partitions[k].To = a.At
			delete(cut, a.Region)
		case ActCrash, ActPause:
			if a.At < busyUntil {
				return nil, bad("at", "%v: the coordinator is still down or paused until %v: want a moment when one runs", a.At, busyUntil)
			}
			if a.Down <= 0 || a.Down > MaxOutageTime {
				return nil, bad("down", "%v: want above 0 and at most %v", a.Down, MaxOutageTime)
			}
			o := Outage{At: a.At, Down: a.Down}
			if a.Kind == ActPause {
				if a.Wake <= 0 || a.Wake > MaxOutageTime {
					return nil, bad("wake", "%v: want above 0 and at most %v", a.Wake, MaxOutageTime)
				}
				o.Pause, o.Wake, o.Reconnect = true, a.Wake, map[string]time.Duration{}
			} else if a.Wake != 0 {
				return nil, bad("wake", "%v: a crashed coordinator never wakes: want 0", a.Wake)
			}
			s.Outages = append(s.Outages, o)
			busyUntil = a.At + max(o.Down, o.Wake)
		case ActSkew:
			if a.Region != "" && !t.HasRegion(a.Region) {
				return nil, bad("region", "%q: want one of %s, or \"\" for the coordinator", a.Region, strings.Join(t.Regions, ", "))
			}
			if !(math.Abs(a.Drift) <= maxDrift) {
				return nil, bad("drift", "%v: want −500e-6 to 500e-6 (±500 ppm, the most NTP slews a clock)", a.Drift)
			}
			s.ClockChanges = append(s.ClockChanges, ClockChange{At: a.At, Region: a.Region, Drift: a.Drift})
		default:
			return nil, bad("kind", "%v: want one of %s", a.Kind, strings.Join(actionNames[1:], ", "))
		}
	}
	return s, nil
}

func checkRates(t quota.Tenant, rates map[string]float64) error {
	for _, r := range slices.Sorted(func(yield func(string) bool) {
		for r := range rates {
			if !yield(r) {
				return
			}
		}
	}) {
		v := rates[r]
		if !t.HasRegion(r) {
			return fmt.Errorf("region %q: want one of %s", r, strings.Join(t.Regions, ", "))
		}
		if !(v >= 0 && v <= MaxRate) {
			return fmt.Errorf("%s: %v tokens a second: want 0 to %g", r, v, float64(MaxRate))
		}
	}
	return nil
}

func cloneRates(m map[string]float64) map[string]float64 {
	out := make(map[string]float64, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// validateSkews checks the schedule's clock changes.
func (s *Schedule) validateSkews(c Config) error {
	for i, k := range s.ClockChanges {
		if (k.Region != "" && !c.Tenant.HasRegion(k.Region)) || !(math.Abs(k.Drift) <= maxDrift) || k.At < 0 {
			return fmt.Errorf("%w: schedule: clock changes[%d]: region %q drift %v at %v: want a known region (or \"\" for the coordinator), a drift within ±500 ppm and a time ≥ 0",
				quota.ErrConfig, i, k.Region, k.Drift, k.At)
		}
	}
	return nil
}

// Event kinds of scripted runs, past sim.go's.
const (
	evSkew   evKind = 200
	evSample evKind = 201
)

// scheduleScripted puts the schedule's clock changes and the first sample
// on the queue.
func (s *sim) scheduleScripted() {
	for i, k := range s.sch.ClockChanges {
		s.at(int64(k.At), item{kind: evSkew, a: int32(i)})
	}
	if s.cfg.Sample > 0 {
		// A nanosecond before each multiple of Sample: the state at the end
		// of the step, before anything due at its boundary (an action, the
		// run's end) happens.
		s.at(int64(s.cfg.Sample)-1, item{kind: evSample})
	}
}

// handleScripted handles the event kinds of this file.
func (s *sim) handleScripted(it item) error {
	switch it.kind {
	case evSkew:
		k := s.sch.ClockChanges[it.a]
		if k.Region == "" {
			c := s.coords[s.cur]
			c.clock = c.clock.skewed(s.now, k.Drift)
			s.emit(eventlog.Event{Kind: eventlog.Skew, Epoch: c.core.Epoch(), Offset: int64(c.clock.Offset), Drift: c.clock.Drift})
			return nil
		}
		for _, r := range s.regions {
			if r.name == k.Region {
				r.clock = r.clock.skewed(s.now, k.Drift)
				s.emit(eventlog.Event{Kind: eventlog.Skew, Region: r.name, Offset: int64(r.clock.Offset), Drift: r.clock.Drift})
			}
		}
	case evSample:
		for _, r := range s.regions {
			st := r.lim.Status(r.clock.local(s.now), s.t.Name)
			e := eventlog.Event{Kind: eventlog.Sample, Tenant: s.t.Name, Region: r.name}
			if st.Valid {
				e.ID, e.Epoch, e.Rate, e.Burst, e.Balance = st.Lease.ID, st.Lease.Epoch, st.Lease.Rate, st.Lease.Burst, st.Balance
			}
			s.emit(e)
		}
		s.at(s.now+int64(s.cfg.Sample), item{kind: evSample})
	default:
		return errors.New("chaos: unknown event kind") // a bug in the harness, not an input
	}
	return nil
}

// skewed is the clock that reads what c reads at t and runs at 1 + drift
// from then on: its offset is chosen so that it does not jump — never
// back, by even a nanosecond, which a monotonic clock cannot do.
func (c Clock) skewed(t int64, drift float64) Clock {
	at := c.local(t)
	n := Clock{Offset: time.Duration(at - clockBase - int64(float64(t)*(1+drift))), Drift: drift}
	for n.local(t) < at {
		n.Offset++
	}
	return n
}
