package bots

import (
	"context"
	"fmt"
	"math"
	"slices"

	"github.com/afloat/afloat/sim"
)

// Hindsight plays the run with perfect foresight: it knows what the seed
// holds (when the surge comes and how big it is, when the deploy goes out,
// when the cache is flushed) and searches the timing and size of a few key
// actions for the lowest score. No player can know what it knows, so its
// score is not par (Expert's is): the debrief shows it as what perfect
// foresight would have scored on the seed. The search is bounded
// (a few thousand replays of the minutes after the first action, about
// 0.1 s on one core; docs/benchmarks.md) and plays through the same
// controls as everyone else: its plan is an action list that any share
// link replays.
//
// Where its search finds nothing better than the runbook or the expert, it
// plays their moves: hindsight is never worse than either on the same
// seed.
//
// It acts from minute 1, as a player can, and looks for a rollback only
// once the deploy has gone out (one pressed before does nothing).
//
// cfg.Actions must be empty. It is safe for concurrent use, and stops
// with ctx's error when ctx is done: it looks at ctx before each replay of
// its search (a few milliseconds each at the longest run, 10,080 minutes,
// where the whole search takes a minute or more) and every 1,024 minutes
// of its baseline, so that an abandoned or overdue search stops within a
// replay, not at the end of a round.
func Hindsight(ctx context.Context, cfg sim.Config) (Run, error) {
	if len(cfg.Actions) > 0 {
		return Run{}, fmt.Errorf("%w: hindsight plays a run without actions, got %d", sim.ErrInvalidConfig, len(cfg.Actions))
	}
	minutes, err := cfg.Length()
	if err != nil {
		return Run{}, err
	}
	sc, _ := sim.Lookup(cfg.Scenario)
	base, err := newBaseline(ctx, sc, cfg.Seed, cfg.Noise, minutes)
	if err != nil {
		return Run{}, err
	}
	p := plan{base: base, slots: slotsFor(sc, base)}
	if err := p.search(ctx); err != nil {
		return Run{}, err
	}
	cfg.Actions = p.actions()
	frames, err := sim.Run(cfg)
	if err != nil {
		return Run{}, err
	}
	best := Run{Config: cfg, Frames: frames, Score: sim.ScoreFrames(sc, frames)}
	// Hindsight knows the runbook and the expert too: where the search
	// found nothing better, it plays their moves.
	cfg.Actions = nil
	for _, p := range []Policy{Runbook, Reactive} {
		if r, err := PlayContext(ctx, cfg, p); err != nil {
			return Run{}, err
		} else if r.Score.Points < best.Score.Points {
			best = r
		}
	}
	return best, nil
}

// baseline is the run with no action, kept minute by minute (a replay),
// and what hindsight knows about the seed.
type baseline struct {
	*replay
	surge   sim.Surge
	hasSurg bool
	deploy  int // the first deploy's minute, -1 for none
	flush   int // the first flush's minute, -1 for none
}

func newBaseline(ctx context.Context, sc sim.Scenario, seed uint32, noise bool, minutes int) (*baseline, error) {
	r, err := newReplay(ctx, sc, seed, noise, minutes, nil)
	if err != nil {
		return nil, err
	}
	b := &baseline{replay: r, deploy: -1, flush: -1}
	b.surge, b.hasSurg = r.before[0].Surge()
	for _, ev := range r.before[0].Events() { // a mystery's morning included
		switch {
		case ev.Kind == sim.EventDeploy && ev.Errors > 0 && b.deploy < 0: // a good build needs no rollback
			b.deploy = ev.Minute
		case ev.Kind == sim.EventFlush && b.flush < 0:
			b.flush = ev.Minute
		}
	}
	return b, nil
}

// slot is one key action of a plan: a lever held at a value over a window
// of minutes [on, off) and put back to its opening position after, or a
// button pressed at on. on < 0 leaves it out.
type slot struct {
	control sim.Control
	press   bool
	back    float64   // the lever's opening position, set at off
	values  []float64 // candidate values (none for a button)
	times   []int     // candidate minutes for on
	spans   []int     // candidate lengths of the window; minutes ≥ the run's length keep it to the end
	first   int       // the earliest minute allowed

	on, span int
	v        float64
}

type plan struct {
	ctx   context.Context // the search stops, with err, once it is done
	base  *baseline
	slots []slot
	evals int   // replays made
	err   error // ctx's error, once seen: no more replays
}

// actions expands the plan into an action list, by minute.
func (p *plan) actions() []sim.Action {
	var out []sim.Action
	for _, s := range p.slots {
		if s.on < 0 {
			continue
		}
		if s.press {
			out = append(out, sim.Press(s.on, s.control))
			continue
		}
		out = append(out, setAction(s.on, s.control, s.v))
		if off := s.on + s.span; off < p.base.minutes {
			out = append(out, setAction(off, s.control, s.back))
		}
	}
	slices.SortStableFunc(out, func(a, b sim.Action) int { return a.Minute - b.Minute })
	return out
}

func setAction(m int, c sim.Control, v float64) sim.Action {
	if spec, _ := sim.LookupControl(c); spec.Kind == sim.KindBool {
		return sim.Switch(m, c, v != 0)
	}
	return sim.Set(m, c, v)
}

// score replays the plan from its first action and returns its points,
// or +Inf without a replay once the search's context is done. The context
// is looked at before every replay: a look costs tens of nanoseconds, a
// replay from tens of microseconds to a few milliseconds, and a search of
// a long run makes thousands of them per round.
func (p *plan) score() float64 {
	if p.err == nil {
		p.err = p.ctx.Err()
	}
	if p.err != nil {
		return math.Inf(1)
	}
	p.evals++
	s, err := p.base.replay.replay(p.actions())
	if err != nil {
		return math.Inf(1) // an action out of range: never chosen
	}
	return s.Points
}

// search improves the plan one slot at a time — when, how long, how much,
// then the timing again a minute either way — until a round finds nothing
// better, at most four rounds. It returns ctx's error if that ends first.
func (p *plan) search(ctx context.Context) error {
	p.ctx = ctx
	best := p.score()
	try := func(s *slot, on, span int, v float64) {
		if p.err != nil || (on >= 0 && (on < s.first || on >= p.base.minutes)) {
			return
		}
		old := *s
		s.on, s.span, s.v = on, span, v
		if sc := p.score(); sc < best-1e-9 {
			best = sc
			return
		}
		*s = old
	}
	for round := 0; round < 4 && p.err == nil; round++ {
		before := best
		for i := range p.slots {
			s := &p.slots[i]
			if s.on < 0 { // a default size and length to place it with
				if !s.press {
					s.v = s.values[len(s.values)-1]
					s.span = s.spans[len(s.spans)/2]
				}
			}
			for _, on := range s.times {
				try(s, on, s.span, s.v)
			}
			if s.on < 0 {
				continue
			}
			if !s.press {
				for _, span := range s.spans {
					try(s, s.on, span, s.v)
				}
				for _, v := range s.values {
					try(s, s.on, s.span, v)
				}
			}
			for d := -3; d <= 3; d++ {
				try(s, s.on+d, s.span, s.v)
				if !s.press {
					try(s, s.on, s.span+d, s.v)
				}
			}
			try(s, -1, s.span, s.v) // leaving it out
		}
		if best >= before-1e-9 {
			break
		}
	}
	return p.err
}

// grid lists from, from+step, … below to.
func grid(from, to, step int) []int {
	var out []int
	for m := from; m < to; m += step {
		out = append(out, m)
	}
	return out
}

// around lists the minutes within r of each anchor, and a coarse grid.
func around(minutes int, anchors []int, r int) []int {
	seen := map[int]bool{}
	var out []int
	add := func(m int) {
		if m >= 1 && m < minutes && !seen[m] {
			seen[m] = true
			out = append(out, m)
		}
	}
	for _, a := range anchors {
		for m := a - r; m <= a+r; m++ {
			add(m)
		}
	}
	for _, m := range grid(1, minutes, 10) {
		add(m)
	}
	slices.Sort(out)
	return out
}

// slotsFor chooses the key actions to search for the scenario, placed
// around what hindsight knows.
func slotsFor(sc sim.Scenario, b *baseline) []slot {
	T := b.minutes
	c := sc.Controls
	lever := func(ctl sim.Control, back float64, values []float64, times, spans []int) slot {
		return slot{control: ctl, back: back, values: values, times: times, spans: spans, first: 1, on: -1}
	}
	whole := []int{5, 10, 15, 20, 30, 45, 60, 90, 120, T}
	switch {
	case b.deploy >= 0:
		s := slot{control: sim.ControlRollback, press: true, times: grid(b.deploy+1, T, 1), first: b.deploy + 1, on: -1}
		return []slot{s}
	case b.hasSurg:
		start := int(math.Floor(b.surge.Start))
		top := int(math.Ceil(b.surge.Start + b.surge.Ramp + b.surge.Plateau))
		anchors := []int{start - sc.BootDelay, start, top}
		times := around(T, anchors, 6)
		floors := []float64{}
		for f := c.FleetFloor + 2; f <= sim.MaxFleet; f += 2 {
			floors = append(floors, float64(f))
		}
		return []slot{
			lever(sim.ControlFleetFloor, float64(c.FleetFloor), floors, times, whole),
			lever(sim.ControlShedLowPriority, 0, []float64{0.25, 0.5, 1}, times, []int{2, 4, 6, 8, 10, 15, 20}),
			lever(sim.ControlHeavyFeature, 1, []float64{0}, times, []int{2, 4, 6, 8, 10, 15, 20}),
			lever(sim.ControlTargetUtilization, c.TargetUtilization, []float64{0.3, 0.4, 0.5, 0.7, 0.8, 0.9}, times, whole),
		}
	case b.flush >= 0:
		f := b.flush
		times := around(T, []int{f, f + 15}, 6)
		return []slot{
			lever(sim.ControlHeavyFeature, 1, []float64{0}, times, []int{5, 10, 15, 20, 25, 30, 40, 50, 60, T}),
			lever(sim.ControlShedLowPriority, 0, []float64{0.25, 0.5, 0.75, 1}, times, []int{5, 10, 15, 20, 25, 30, 40, 60, T}),
			lever(sim.ControlCacheTTL, c.CacheTTL, []float64{120, 300, 600, 1200}, times, []int{10, 20, 30, 45, 60, 90, T}),
			{control: sim.ControlWarmup, press: true, times: around(T, []int{f + 5, f + 15, f + 25}, 5), first: 1, on: -1},
			lever(sim.ControlFleetFloor, float64(c.FleetFloor), []float64{16, 20, 24, 28, 32, 40}, times, []int{10, 20, 30, 45, 60, T}),
		}
	default: // a quiet day: run leaner
		floors := []float64{}
		for f := 1; f < c.FleetFloor; f++ {
			floors = append(floors, float64(f))
		}
		return []slot{
			lever(sim.ControlTargetUtilization, c.TargetUtilization, []float64{0.65, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95}, []int{1, 2, 5, 10}, []int{T}),
			lever(sim.ControlFleetFloor, float64(c.FleetFloor), floors, []int{1, 2, 5, 10}, []int{T}),
		}
	}
}
