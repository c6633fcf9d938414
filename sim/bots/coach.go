package bots

import (
	"context"
	"fmt"
	"slices"

	"github.com/afloat/afloat/sim"
)

// WhatIf is one replay of the player's run with one change: an action
// moved to another minute, an action removed, or one of the expert's moves
// added. It is an exact replay, by the same engine: its frames are the
// player's up to the first minute it changes.
type WhatIf struct {
	Kind   string     `json:"kind"`            // "moved", "removed" or "added"
	Action sim.Action `json:"action"`          // the player's action (moved, removed) or the one added
	To     int        `json:"to"`              // the minute it is moved to or added at; -1 when removed
	Why    string     `json:"why"`             // the moment chosen, below
	Clock  string     `json:"clock,omitempty"` // time of day of To
	// Sign is what the dashboard showed that called for the move, at a
	// minute before To (none for a removal).
	Sign *Sign `json:"sign,omitempty"`

	Points     float64 `json:"points"`      // the what-if's score
	Gain       float64 `json:"gain"`        // the player's points less the what-if's: what it would have saved
	BudgetGain float64 `json:"budget_gain"` // fraction of the month's budget it would have kept

	Actions []sim.Action `json:"actions"` // the what-if's whole action list, for a share link
}

// The moments a what-if moves or adds an action to, as Why names them.
// Each is the minute after something a player could see on the
// dashboards of their own run, so that the advice can be followed.
const (
	WhyDeploy   = "deploy"   // the minute after a deploy marker
	WhyErrors   = "errors"   // after the error rate first rose above the SLO's 0.1 %
	WhyPage     = "page"     // after the burn-rate page first fired
	WhyDatabase = "database" // after the database first saturated
	WhyRequests = "requests" // after requests first rose 30 % above the opening minute's
	WhyEarlier  = "earlier"  // the same action, a few minutes earlier
	WhyLater    = "later"    // the same action, a few minutes later
	WhyUnneeded = "unneeded" // removed: the run does better without it
	WhyExpert   = "expert"   // added at the minute the expert made it
)

// Sign is something the player's dashboard showed: what, when and how
// much. Kind is one of the Sign… constants.
type Sign struct {
	Kind   string  `json:"kind"`
	Minute int     `json:"minute"`
	Clock  string  `json:"clock"`
	Value  float64 `json:"value"` // requests per second, a hit rate, an error rate: what Kind names
}

// The signs a what-if can answer.
const (
	SignBriefing = "briefing" // nothing scheduled: the briefing's quiet day, from the start
	SignDeploy   = "deploy"   // a deploy marker
	SignFlush    = "flush"    // the cache hit rate fell under half the opening minute's (Value)
	SignRequests = "requests" // requests passed 15 % above the daily curve (Value, req/s)
	SignErrors   = "errors"   // the error rate passed the SLO's 0.1 % (Value)
	SignPage     = "page"     // the burn-rate page fired
	SignDatabase = "database" // the database reached 99 % of its capacity (Value)
	SignCalm     = "calm"     // the first minute back to normal after trouble (no errors over the SLO, no page, the database under 99 %): what a move that relaxes a lever answers
)

const (
	maxCoached   = 40   // the player's actions the coach looks at, the first ones
	minGain      = 0.05 // points: less is no advice
	coachResults = 3    // what-ifs returned, the best first
)

// Coach replays the player's run with each of its actions moved to the
// moments above or removed, and with each of the expert's moves on a lever
// the player never touched added, and returns the three what-ifs that
// would have saved the most points (fewer if fewer save anything). expert
// is the expert's action list on the same seed (Expert(…).Config.Actions),
// or nil. At most the first 40 of the player's actions are looked at, so
// that a coach costs at most a few hundred replays. It is safe for
// concurrent use and stops with ctx's error when ctx is done.
//
// The coach proposes only moves a player could have made from what was on
// their screen: never before the minute after the incident first showed
// on the dashboard (the deploy's marker, the cache's hit rate falling, the
// requests of a surge; from minute 1 on a day with nothing scheduled), and
// each what-if names the sign that called for it (Sign).
func Coach(ctx context.Context, cfg sim.Config, expert []sim.Action) ([]WhatIf, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	minutes, _ := cfg.Length()
	sc, _ := sim.Lookup(cfg.Scenario)
	player := append([]sim.Action(nil), cfg.Actions...)
	slices.SortStableFunc(player, func(a, b sim.Action) int { return a.Minute - b.Minute })
	base, err := newReplay(ctx, sc, cfg.Seed, cfg.Noise, minutes, player)
	if err != nil {
		return nil, err
	}
	own := base.score.Points
	incident := incidentOf(base, sc)
	earliest := incident.Minute + 1
	if incident.Kind == SignBriefing {
		earliest = 1
	}
	moments := momentsOf(base, sc, incident)
	signs := signsOf(base, sc, moments)
	open := base.before[0].Controls()

	var out []WhatIf
	seen := map[string]bool{}
	// The context is looked at before every replay (a few milliseconds
	// each at 10,080 minutes), not only between the player's actions.
	var stopped error
	try := func(w WhatIf, acts []sim.Action) {
		if stopped == nil {
			stopped = ctx.Err()
		}
		if stopped != nil {
			return
		}
		key := fmt.Sprint(acts)
		if seen[key] {
			return
		}
		seen[key] = true
		s, err := base.replay(acts)
		if err != nil {
			return // a change the run refuses (an action past its end)
		}
		w.Points = s.Points
		w.Gain = own - s.Points
		w.BudgetGain = base.score.BudgetSpent - s.BudgetSpent
		if w.To >= 0 {
			w.Clock = sim.Clock(sc.Start + w.To)
		}
		w.Actions = acts
		if w.Kind != "removed" {
			sign, ok := signFor(w, acts, open, incident, signs, base.frames)
			if !ok {
				return // nothing on the screen called for this move then
			}
			w.Sign = sign
		}
		if w.Gain >= minGain {
			out = append(out, w)
		}
	}
	for i, a := range player {
		if i == maxCoached {
			break
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		without := slices.Delete(slices.Clone(player), i, i+1)
		try(WhatIf{Kind: "removed", Action: a, To: -1, Why: WhyUnneeded}, without)
		targets := append([]moment(nil), moments...)
		for _, d := range []int{-10, -5, -2, -1} {
			targets = append(targets, moment{minute: a.Minute + d, why: WhyEarlier})
		}
		for _, d := range []int{1, 2, 5} {
			targets = append(targets, moment{minute: a.Minute + d, why: WhyLater})
		}
		for _, t := range targets {
			if t.minute < earliest || t.minute >= minutes || t.minute == a.Minute {
				continue
			}
			moved := a
			moved.Minute = t.minute
			acts := sortedInsert(slices.Clone(without), moved)
			try(WhatIf{Kind: "moved", Action: a, To: t.minute, Why: t.why, Sign: t.sign}, acts)
		}
	}
	used := map[sim.Control]bool{}
	for _, a := range player {
		used[a.Control] = true
	}
	for _, a := range expert {
		if used[a.Control] || a.Minute < 1 || a.Minute >= minutes {
			continue
		}
		// The expert's first move on a lever the player never touched,
		// with the moves that put it back (a window), at its minute and at
		// the player's moments.
		group := []sim.Action{}
		for _, b := range expert {
			if b.Control == a.Control {
				group = append(group, b)
			}
		}
		used[a.Control] = true
		starts := []moment{{minute: a.Minute, why: WhyExpert}}
		starts = append(starts, moments...)
		for _, t := range starts {
			shift := t.minute - a.Minute
			acts := slices.Clone(player)
			ok := true
			for _, b := range group {
				b.Minute += shift
				if b.Minute < earliest || b.Minute >= minutes {
					ok = false
					break
				}
				acts = sortedInsert(acts, b)
			}
			if ok {
				moved := a
				moved.Minute = t.minute
				try(WhatIf{Kind: "added", Action: moved, To: t.minute, Why: t.why, Sign: t.sign}, acts)
			}
		}
	}
	if stopped != nil {
		return nil, stopped
	}
	slices.SortStableFunc(out, func(a, b WhatIf) int {
		switch {
		case a.Gain > b.Gain:
			return -1
		case a.Gain < b.Gain:
			return 1
		}
		return 0
	})
	// One what-if per action — the best move of each — and one per move
	// and per saving: two of the player's actions moved to the same
	// minute are one tip, and two changes that save exactly as much
	// (removing a change and removing the change that reverted it, say)
	// are one idea worded twice.
	var best []WhatIf
	kept := map[string]bool{}
	savings := map[float64]bool{}
	for _, w := range out {
		key := fmt.Sprint(w.Kind == "added", w.Action.Control, w.Action.Minute)
		if w.Kind != "added" {
			key = fmt.Sprint("player", w.Action)
		}
		if kept[key] || kept[w.move()] || savings[w.Points] {
			continue
		}
		kept[key], kept[w.move()], savings[w.Points] = true, true, true
		best = append(best, w)
		if len(best) == coachResults {
			break
		}
	}
	return best, nil
}

// move is what the what-if does, as a key: the action it removes, or the
// lever, value and minute of the action it moves or adds.
func (w WhatIf) move() string {
	if w.Kind == "removed" {
		return fmt.Sprint("removed ", w.Action)
	}
	return fmt.Sprint(w.Action.Control, " ", w.Action.Value, " at ", w.To)
}

// signsOf is every sign of the player's run a move may answer, by minute:
// each incident's first sign (a bad deploy's marker, the cache's fall,
// the surge's requests) and the moments' (errors, the page, the
// database, requests).
func signsOf(r *replay, sc sim.Scenario, moments []moment) []Sign {
	var out []Sign
	for _, f := range findings(r.before[0], sc, r.minutes, r.frames, true) {
		out = append(out, f.Shown)
	}
	for _, m := range moments {
		if m.sign != nil {
			out = append(out, *m.sign)
		}
	}
	slices.SortStableFunc(out, func(a, b Sign) int { return a.Minute - b.Minute })
	return out
}

// signFor is the sign a what-if names: what was on the player's screen
// before the move, that the move answers — false when nothing was, and
// the move is no advice a player could have followed. A move to a
// moment (the minute after a sign) names that sign, and is no advice
// when the move does not answer it (a target utilization moved to the
// minute after a deploy's marker); any other names the latest sign before
// it that it answers. A move that relaxes a lever (fewer instances, less
// shedding, the heavy feature back on) answers no sign of trouble, but
// the dashboards back to normal (relaxSign). A bad deploy's marker stops
// calling for anything once the run has rolled back after it. On a day
// with nothing scheduled, the sign is the briefing.
func signFor(w WhatIf, acts []sim.Action, open sim.Controls, incident Sign, signs []Sign, frames []sim.Frame) (*Sign, bool) {
	if incident.Kind == SignBriefing {
		return &incident, true
	}
	before := open
	for _, a := range acts {
		if a.Minute < w.To {
			before = before.With(a)
		}
	}
	a := w.Action
	if before.With(a) == before && a.Control != sim.ControlRollback && a.Control != sim.ControlWarmup {
		return nil, false // the lever is there already: not a move
	}
	protects := protective(a, before)
	rolledBack := func(after int) bool {
		for _, b := range acts {
			if b.Control == sim.ControlRollback && b.Minute > after && b.Minute < w.To {
				return true
			}
		}
		return false
	}
	deployBefore := func(m int) bool {
		for _, s := range signs {
			if s.Kind == SignDeploy && s.Minute <= m && !rolledBack(s.Minute) {
				return true
			}
		}
		return false
	}
	answers := func(s Sign) bool {
		if s.Minute >= w.To || !protects {
			return false
		}
		switch a.Control {
		case sim.ControlRollback:
			return (s.Kind == SignDeploy && !rolledBack(s.Minute)) ||
				((s.Kind == SignErrors || s.Kind == SignPage) && deployBefore(s.Minute))
		case sim.ControlFleetFloor, sim.ControlAutoscaling, sim.ControlTargetUtilization:
			return s.Kind == SignRequests || s.Kind == SignErrors || s.Kind == SignPage
		case sim.ControlShedLowPriority, sim.ControlHeavyFeature:
			return s.Kind != SignDeploy
		case sim.ControlCacheTTL, sim.ControlWarmup:
			return s.Kind == SignFlush || s.Kind == SignDatabase
		}
		return false
	}
	if w.Sign != nil { // a moment's
		if !answers(*w.Sign) {
			return nil, false
		}
		return w.Sign, true
	}
	if !protects {
		return relaxSign(frames, w.To)
	}
	for i := len(signs) - 1; i >= 0; i-- {
		if answers(signs[i]) {
			s := signs[i]
			return &s, true
		}
	}
	return nil, false
}

// relaxSign is the sign a move that relaxes a lever at minute to answers:
// the dashboards back to normal (SignCalm) at the first minute after the
// last trouble before it — or the briefing when there was none (nothing
// called for the protection it takes back). False while the trouble
// lasts up to the move: relaxing then is no advice.
func relaxSign(frames []sim.Frame, to int) (*Sign, bool) {
	trouble := func(f sim.Frame) bool { return f.ErrorRate > sloErrors || f.Paged || f.DBUtilization >= 0.99 }
	last := -1
	for m := 0; m < to && m < len(frames); m++ {
		if trouble(frames[m]) {
			last = m
		}
	}
	switch {
	case last < 0:
		return &Sign{Kind: SignBriefing, Clock: frames[0].Clock}, true
	case last+1 < to:
		f := frames[last+1]
		return &Sign{Kind: SignCalm, Minute: f.Minute, Clock: f.Clock}, true
	}
	return nil, false
}

// protective says whether a, from the positions before it, adds capacity
// or protection — a rollback, a warm-up, more instances, a lower target,
// a longer TTL, more shedding, the heavy feature off — rather than
// relaxing it.
func protective(a sim.Action, before sim.Controls) bool {
	switch a.Control {
	case sim.ControlFleetFloor:
		return int(a.Value) > before.FleetFloor
	case sim.ControlAutoscaling:
		return a.Bool()
	case sim.ControlTargetUtilization:
		return a.Value < before.TargetUtilization
	case sim.ControlCacheTTL:
		return a.Value > before.CacheTTL
	case sim.ControlShedLowPriority:
		return a.Value > before.ShedLowPriority
	case sim.ControlHeavyFeature:
		return !a.Bool()
	}
	return true // a button: rollback, warm-up
}

// sortedInsert puts an action after those of its minute and before later
// ones, as a player queueing it would.
func sortedInsert(acts []sim.Action, a sim.Action) []sim.Action {
	i := 0
	for i < len(acts) && acts[i].Minute <= a.Minute {
		i++
	}
	return slices.Insert(acts, i, a)
}

type moment struct {
	minute int
	why    string
	sign   *Sign // what showed at minute−1; nil: the incident's sign
}

// incidentOf finds when the incident first showed on the player's
// dashboard: the deploy's marker, the cache's hit rate under half the
// opening minute's, requests 15 % above the daily curve (the expert's
// sign of a surge); on a mystery morning with two incidents, the first of
// them to show. On a day with nothing scheduled it is the briefing, at
// minute 0. An incident that never shows (a surge too small to see) is
// placed at the run's last minute: no move answers it.
func incidentOf(r *replay, sc sim.Scenario) Sign {
	found := findings(r.before[0], sc, r.minutes, r.frames, true)
	if len(found) == 0 {
		return Sign{Kind: SignBriefing, Clock: r.frames[0].Clock}
	}
	return found[0].Shown
}

// Finding is an incident of a run and the sign that first showed it on
// the player's dashboard.
type Finding struct {
	Incident sim.Incident `json:"incident"`
	Shown    Sign         `json:"shown"`
}

// Diagnose names the incidents of a run — what the seed drew on a mystery
// morning, or the scenario's own — each with the sign that first showed
// it on the dashboard, in the order they showed: a bad deploy by the error
// rate passing the SLO's 0.1 % after its marker, a flush by the cache's
// hit rate falling under half the opening minute's, a surge by requests
// 15 % above the daily curve. A good build's deploy is no incident. An
// incident that had not shown by the last frame is placed there. frames
// are the run's, from minute 0; a debrief tells this once the run is over.
// It is safe for concurrent use.
func Diagnose(cfg sim.Config, frames []sim.Frame) ([]Finding, error) {
	minutes, err := cfg.Length()
	if err != nil {
		return nil, err
	}
	sc, _ := sim.Lookup(cfg.Scenario)
	s, err := sim.New(sc, cfg.Seed, cfg.Noise)
	if err != nil {
		return nil, err
	}
	if len(frames) == 0 {
		return []Finding{}, nil
	}
	return findings(s, sc, minutes, frames, false), nil
}

// findings are the run's incidents and their signs, the first to show
// first. marker takes a bad deploy's marker as its sign (the coach: a
// player may roll back a fresh deploy on the marker alone) rather than
// the errors that showed it was bad.
func findings(run *sim.Sim, sc sim.Scenario, minutes int, frames []sim.Frame, marker bool) []Finding {
	sign := func(kind string, f sim.Frame, value float64) Sign {
		return Sign{Kind: kind, Minute: f.Minute, Clock: f.Clock, Value: value}
	}
	last := frames[len(frames)-1]
	out := []Finding{}
	for _, ev := range run.Events() {
		if ev.Minute >= len(frames) {
			switch {
			case ev.Kind == sim.EventFlush:
				out = append(out, Finding{sim.IncidentFlush, sign(SignFlush, last, last.CacheHit)})
			case ev.Errors > 0:
				out = append(out, Finding{sim.IncidentBadDeploy, sign(SignDeploy, last, 0)})
			}
			continue
		}
		switch {
		case ev.Kind == sim.EventDeploy && ev.Errors > 0:
			s := sign(SignDeploy, frames[ev.Minute], 0)
			if !marker {
				for _, f := range frames[ev.Minute:] {
					if f.ErrorRate > sloErrors {
						s = sign(SignErrors, f, f.ErrorRate)
						break
					}
				}
			}
			out = append(out, Finding{sim.IncidentBadDeploy, s})
		case ev.Kind == sim.EventFlush:
			open := frames[0].CacheHit
			s := sign(SignFlush, last, last.CacheHit)
			for _, f := range frames[ev.Minute:] {
				if f.CacheHit < open/2 {
					s = sign(SignFlush, f, f.CacheHit)
					break
				}
			}
			out = append(out, Finding{sim.IncidentFlush, s})
		}
	}
	if _, ok := run.Surge(); ok {
		v := ViewOf(sc, minutes, frames)
		s := sign(SignRequests, last, last.RequestsPerS)
		for _, f := range v.Frames {
			if surging(v, f) {
				s = sign(SignRequests, frames[f.Minute], f.RequestsPerS)
				break
			}
		}
		out = append(out, Finding{sim.IncidentSurge, s})
	}
	slices.SortStableFunc(out, func(a, b Finding) int { return a.Shown.Minute - b.Shown.Minute })
	return out
}

// momentsOf finds the moments of the player's run a what-if can move an
// action to: each the minute after the sign, while the run lasts.
func momentsOf(r *replay, sc sim.Scenario, incident Sign) []moment {
	var out []moment
	add := func(f *sim.Frame, why, kind string, value float64) {
		if f == nil || f.Minute+1 >= r.minutes {
			return
		}
		out = append(out, moment{minute: f.Minute + 1, why: why, sign: &Sign{Kind: kind, Minute: f.Minute, Clock: f.Clock, Value: value}})
	}
	if incident.Kind == SignDeploy {
		add(&r.frames[min(incident.Minute, len(r.frames)-1)], WhyDeploy, SignDeploy, 0)
	}
	first := func(ok func(sim.Frame) bool) *sim.Frame {
		for i := range r.frames {
			if ok(r.frames[i]) {
				return &r.frames[i]
			}
		}
		return nil
	}
	open := r.frames[0].RequestsPerS
	if f := first(func(f sim.Frame) bool { return f.ErrorRate > 0.001 }); f != nil {
		add(f, WhyErrors, SignErrors, f.ErrorRate)
	}
	add(first(func(f sim.Frame) bool { return f.Paged }), WhyPage, SignPage, 0)
	if f := first(func(f sim.Frame) bool { return f.DBUtilization >= 0.99 }); f != nil {
		add(f, WhyDatabase, SignDatabase, f.DBUtilization)
	}
	if f := first(func(f sim.Frame) bool { return f.RequestsPerS > 1.3*open }); f != nil {
		add(f, WhyRequests, SignRequests, f.RequestsPerS)
	}
	return out
}

// replay is a run kept minute by minute — the state before each minute
// and the score of the minutes before it — so that a change at minute m
// replays only from m.
type replay struct {
	sc      sim.Scenario
	minutes int
	actions []sim.Action // by minute
	before  []*sim.Sim   // before[m]: the run at the start of minute m
	tallies []sim.Tally  // tallies[m]: the score of minutes 0 … m−1
	frames  []sim.Frame
	score   sim.Score
}

func newReplay(ctx context.Context, sc sim.Scenario, seed uint32, noise bool, minutes int, actions []sim.Action) (*replay, error) {
	s, err := sim.New(sc, seed, noise)
	if err != nil {
		return nil, err
	}
	r := &replay{sc: sc, minutes: minutes, actions: actions}
	t := sim.NewTally(sc)
	rest := actions
	for m := 0; m <= minutes; m++ {
		if m%1024 == 0 && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		r.before = append(r.before, s.Clone())
		r.tallies = append(r.tallies, t)
		if m == minutes {
			break
		}
		n := 0
		for n < len(rest) && rest[n].Minute == m {
			n++
		}
		f, err := s.Step(rest[:n])
		if err != nil {
			return nil, err
		}
		rest = rest[n:]
		t.Add(f)
		r.frames = append(r.frames, f)
	}
	r.score = t.Score()
	return r, nil
}

// replay scores another action list (sorted by minute) from the first
// minute at which it differs from the run's.
func (r *replay) replay(acts []sim.Action) (sim.Score, error) {
	start := r.minutes
	for i := 0; i < len(acts) || i < len(r.actions); i++ {
		if i >= len(acts) || i >= len(r.actions) || acts[i] != r.actions[i] {
			m := r.minutes
			if i < len(acts) {
				m = acts[i].Minute
			}
			if i < len(r.actions) {
				m = min(m, r.actions[i].Minute)
			}
			start = m
			break
		}
	}
	if start >= r.minutes {
		return r.score, nil
	}
	s := r.before[start].Clone()
	t := r.tallies[start]
	i := 0
	for i < len(acts) && acts[i].Minute < start {
		i++
	}
	acts = acts[i:]
	for m := start; m < r.minutes; m++ {
		n := 0
		for n < len(acts) && acts[n].Minute == m {
			n++
		}
		f, err := s.Step(acts[:n])
		if err != nil {
			return sim.Score{}, err
		}
		acts = acts[n:]
		t.Add(f)
	}
	return t.Score(), nil
}

// Frames replays a what-if whole and returns its frames, for the debrief
// to draw or a test to compare.
func (w WhatIf) Frames(cfg sim.Config) ([]sim.Frame, error) {
	cfg.Actions = w.Actions
	return sim.Run(cfg)
}
