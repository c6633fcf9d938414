package bots

import (
	"context"
	"math"

	"github.com/afloat/afloat/sim"
)

// Expert plays the run as the expert that sets par: the Reactive policy,
// which sees only what a player sees (View: the briefing, the realistic
// dashboards, the page, the deploy markers) and reacts to it. It never
// reads the seed's hidden schedule — when the surge comes or how big it
// is — by construction: it is played through the same runner as every
// bot, and the runner refuses, as the expert, a policy whose input could
// carry hidden state or that could have captured the seed (ErrHiddenState).
// Its score on a seed is par; a player who reads the dashboard as well
// earns it too. Hindsight is the search that knows the seed.
//
// cfg.Actions must be empty. It is safe for concurrent use and stops with
// ctx's error when ctx is done.
func Expert(ctx context.Context, cfg sim.Config) (Run, error) {
	return playExpert(ctx, cfg, Reactive, true)
}

// playExpert plays a policy as the expert, once checkPolicy has found it
// to see nothing a player does not, keeping the run's frames if keep.
func playExpert(ctx context.Context, cfg sim.Config, p any, keep bool) (Run, error) {
	if err := checkPolicy(p); err != nil {
		return Run{}, err
	}
	policy, ok := p.(func(View) []sim.Action)
	if !ok {
		pol, isPolicy := p.(Policy)
		if !isPolicy {
			return Run{}, ErrHiddenState
		}
		policy = pol
	}
	return play(ctx, cfg, policy, keep)
}

// What the expert knows of the model, all of it on the model page: an
// instance has 16 workers; a request takes 50 ms of CPU, 20 more with
// recommendations, and 2 database queries, 1 more with recommendations,
// each 5 ms/(1 − database utilization) when it misses the cache; the daily
// curve swings ±25 % around its noon peak.
const (
	workers      = 16
	dailySwing   = 0.25
	minQueryTime = 0.005
	maxQueryTime = 0.250
)

// serviceTime estimates a request's time from the dashboard: its CPU
// time and the database queries that miss the cache, at the query time the
// database's utilization gives.
func serviceTime(f Shown, heavy bool) float64 {
	app, q := 0.050, 2.0
	if heavy {
		app, q = 0.070, 3
	}
	qt := maxQueryTime
	if f.DBUtilization < 0.98 {
		qt = math.Min(maxQueryTime, minQueryTime/(1-f.DBUtilization))
	}
	return app + (1-f.CacheHit)*q*qt
}

// curve is the daily curve at a time of day in minutes, 1 ± 0.25 with
// its peak at 12:00.
func curve(minuteOfDay float64) float64 {
	return 1 + dailySwing*math.Sin(2*math.Pi*(minuteOfDay/60-6)/24)
}

// expected is the request rate the daily curve alone would give at minute
// m, from the opening minute's.
func expected(v View, m int) float64 {
	start := float64(v.Scenario.Start)
	return v.Frames[0].RequestsPerS * curve(start+float64(m)) / curve(start)
}

// surgeAbove is how far above the daily curve requests must be to show a
// surge: the count's noise is about 2 % a minute, so 15 % is never noise.
const surgeAbove = 1.15

// surging reports whether the minute's requests show a surge.
func surging(v View, f Shown) bool {
	return f.RequestsPerS > surgeAbove*expected(v, f.Minute)
}

// surgeSeen reports whether any minute so far showed a surge, and the
// most requests seen since the first that did.
func surgeSeen(v View) (bool, float64) {
	m := v.marked()
	return m.firstSurge >= 0, m.surgePeak
}

// Reactive is the expert that sets par: it reads the briefing and the
// dashboards, as a player does, and reacts the minute after what it sees.
// It is a pure function of the view. docs/model.md ("The bots, par and the
// grade") gives its rules:
//
//   - a deploy marker and, since it, errors above the SLO's 0.1 %: roll
//     back, once;
//   - a surge expected (the briefing) with 8-minute boots: a standing
//     floor of twice the opening fleet from the start;
//   - requests 15 % above the daily curve (the surge): raise the floor so
//     that the fleet would run under 85 % of its workers at the requests
//     shown; once they are under 80 % of the surge's peak, let the floor
//     follow them down to the opening fleet's;
//   - the cache flush the briefing announces for noon: at 12:00 turn
//     recommendations off and shed what the database cannot take; start
//     the warm-up once the database has room; put recommendations back when
//     the cache is warm again, then stop shedding;
//   - on a quiet day: a floor of two and a target of 75 %, which keeps a
//     spare instance (N+1) and no more;
//   - on call with nothing announced (mystery): each sign as it shows —
//     errors since a deploy marker (roll back), the cache's hit rate under
//     half the opening minute's (the flush steps from the next minute),
//     requests above the daily curve (the surge's capacity steps).
func Reactive(v View) []sim.Action {
	if len(v.Frames) == 0 {
		return nil
	}
	m := v.Minute()
	var out []sim.Action
	if a, ok := rollbackIfBad(v); ok {
		out = append(out, a)
	}
	if v.Scenario.Name == "cache-flush" {
		return append(out, flushExpert(v, noonOf(v))...)
	}
	if v.Scenario.Name == "mystery" {
		out = append(out, flushExpert(v, flushShown(v)+1)...)
		return append(out, capacityExpert(v, v.Scenario.BootDelay+2)...)
	}
	if m == 1 && v.Scenario.Name == "steady" {
		return append(out, sim.Set(m, sim.ControlFleetFloor, quietFloor), sim.Set(m, sim.ControlTargetUtilization, quietTarget))
	}
	if m == 1 && v.Scenario.Name == "surge" {
		// The briefing: a surge is expected and instances take 8 minutes
		// to boot, too long to start sizing the fleet when it shows.
		return append(out, sim.Set(m, sim.ControlFleetFloor, float64(prepared(v))))
	}
	return append(out, capacityExpert(v, 0)...)
}

// prepareFactor is the expert's standing fleet while a surge is expected,
// times the opening fleet.
const prepareFactor = 2.0

// prepared is the floor the expert keeps until the surge has come and
// gone: the opening floor, times prepareFactor in the surge scenario.
func prepared(v View) int {
	open := v.Scenario.Controls.FleetFloor
	if v.Scenario.Name != "surge" {
		return open
	}
	return int(math.Ceil(prepareFactor * float64(open)))
}

// quietTarget is the expert's target utilization on a quiet day: the
// leanest fleet that can still lose an instance at the noon peak.
const quietTarget = 0.75

// rollbackIfBad rolls back once the dashboard shows errors above the SLO
// since the last deploy marker, if no rollback has been pressed since.
func rollbackIfBad(v View) (sim.Action, bool) {
	if len(v.Deploys) == 0 {
		return sim.Action{}, false
	}
	d := v.Deploys[len(v.Deploys)-1]
	if m := v.marked(); m.lastRollback >= d || m.lastErrors < d {
		return sim.Action{}, false
	}
	return sim.Press(v.Minute(), sim.ControlRollback), true
}

// sloErrors is the SLO's error rate, 0.1 %.
const sloErrors = 0.001

// The expert's capacity planning during a surge.
const (
	surgeTarget = 0.85 // the floor keeps the fleet under 85 % of its workers
	saturated   = 5    // relieve the serving fleet above this share of its workers
	ebbed       = 0.8  // the surge has passed its peak: requests under 80 % of it
)

// capacityExpert sizes the fleet for a surge as the dashboard shows it:
// for the requests shown, or, with lead minutes, for where the last three
// minutes' rise would take them by then — on call with no warning, where
// no standing fleet is ready, the floor must be raised before the
// requests arrive, as instances take minutes to boot.
func capacityExpert(v View, lead int) []sim.Action {
	last := v.Last()
	m := v.Minute()
	seen, peak := surgeSeen(v)
	if !seen {
		return nil
	}
	want := last.RequestsPerS
	if n := len(v.Frames); lead > 0 && n > 3 {
		// The steeper of the last minute's rise and the last three's
		// mean: a ramp that has just begun shows in the last minute first.
		rise := max(last.RequestsPerS-v.Frames[n-2].RequestsPerS, (last.RequestsPerS-v.Frames[n-4].RequestsPerS)/3)
		want += max(0, rise) * float64(lead)
	}
	// Until the surge has peaked and ebbed, keep the standing fleet; then
	// the opening one is enough.
	open := prepared(v)
	if last.RequestsPerS < ebbed*peak {
		open = v.Scenario.Controls.FleetFloor
	}
	var out []sim.Action
	heavyS := serviceTime(last, true)
	need := int(math.Min(sim.MaxFleet, math.Ceil(want*heavyS/(surgeTarget*workers))))
	switch {
	case need > last.FleetFloor:
		out = append(out, sim.Set(m, sim.ControlFleetFloor, float64(need)))
	case last.RequestsPerS < ebbed*peak && max(need, open) < last.FleetFloor:
		// Ebbing: the floor follows the requests down; the autoscaler
		// scales in after its quiet minutes.
		out = append(out, sim.Set(m, sim.ControlFleetFloor, float64(max(need, open))))
	}

	return out
}

// noonOf is the minute of the run at 12:00, or −1.
func noonOf(v View) int {
	m := 12*60 - v.Scenario.Start
	if m < 0 || m >= v.Scenario.Minutes {
		return -1
	}
	return m
}

// flushShown is the minute the dashboard first showed a flush — the
// cache's hit rate under half the opening minute's — or −2 when none has.
func flushShown(v View) int {
	if m := v.marked().firstFlush; m >= 0 {
		return v.Frames[m].Minute
	}
	return -2
}

// flushExpert: from the minute start — noon, when the briefing says the
// cache is flushed then; the minute after it showed, on call —
// recommendations are off and low-priority traffic is shed so that the
// database can take the misses, the warm-up runs once the database has
// room for it, and the service is put back as the cache warms. A start
// under 0 is no flush.
func flushExpert(v View, start int) []sim.Action {
	last := v.Last()
	m := v.Minute()
	if start < 0 || m < start {
		return nil
	}
	if m == start {
		return []sim.Action{sim.Switch(m, sim.ControlHeavyFeature, false)}
	}
	warmed := v.marked().lastWarmup >= 0
	switch {
	case last.DBUtilization >= 0.99 && last.ShedLowPriority < 1:
		return []sim.Action{sim.Set(m, sim.ControlShedLowPriority, 1)}
	case !warmed && last.DBUtilization < flushWarmDB:
		return []sim.Action{sim.Press(m, sim.ControlWarmup)}
	case !last.HeavyFeature && last.CacheHit > flushRecommendHit:
		return []sim.Action{sim.Switch(m, sim.ControlHeavyFeature, true)}
	case last.HeavyFeature && last.ShedLowPriority > 0 && last.DBUtilization < flushUnshedDB:
		return []sim.Action{sim.Set(m, sim.ControlShedLowPriority, 0)}
	}
	return nil
}

// The flush expert's thresholds.
const (
	flushWarmDB       = 0.75 // the warm-up's 600 queries/s fit
	flushRecommendHit = 0.6
	flushUnshedDB     = 0.8
)

// Watch is the simple policy the docs give a player who reads the
// dashboard (docs/model.md, "A simple policy"): one rule per sign, the same
// in every scenario, no search, and of the briefing only what it says to
// prepare for.
//
//   - A surge expected, with 8-minute boots: twice the opening fleet from
//     the start, as the runbook says.
//   - A deploy marker and errors above 0.1 % since: roll back, once.
//   - Requests 30 % above the opening minute's: from then on the floor
//     follows requests ÷ 130, never under where it stood at 08:01.
//   - The cache hit rate under half the opening minute's with the database
//     saturated: recommendations off and all low-priority traffic shed;
//     the warm-up once the database is under 75 %; recommendations back
//     over a 70 % hit rate, then shedding off.
func Watch(v View) []sim.Action {
	if len(v.Frames) == 0 {
		return nil
	}
	last := v.Last()
	m := v.Minute()
	var out []sim.Action
	if m == 1 && v.Scenario.Name == "surge" {
		out = append(out, sim.Set(m, sim.ControlFleetFloor, float64(2*v.Scenario.Controls.FleetFloor)))
	}
	if a, ok := rollbackIfBad(v); ok {
		out = append(out, a)
	}
	seen := v.marked()
	if seen.firstAbove130 >= 0 {
		base := v.Frames[min(1, len(v.Frames)-1)].FleetFloor // where it stood before the surge
		if len(out) > 0 && out[0].Control == sim.ControlFleetFloor {
			base = int(out[0].Value)
		}
		need := int(math.Min(sim.MaxFleet, math.Ceil(last.RequestsPerS/perInstance)))
		if need = max(need, base); need != last.FleetFloor {
			out = append(out, sim.Set(m, sim.ControlFleetFloor, float64(need)))
		}
	}
	if seen.firstFlushSaturated >= 0 {
		out = append(out, flushSteps(v, last, m)...)
	}
	return out
}

// flushSteps are the runbook's flush steps, from the first sign.
func flushSteps(v View, last Shown, m int) []sim.Action {
	warmed := v.marked().lastWarmup >= 0
	degraded := !last.HeavyFeature || last.ShedLowPriority > 0
	switch {
	case last.DBUtilization >= 0.99 && last.HeavyFeature && last.CacheHit < 0.7:
		return []sim.Action{sim.Switch(m, sim.ControlHeavyFeature, false), sim.Set(m, sim.ControlShedLowPriority, 1)}
	case degraded && !warmed && last.DBUtilization < 0.75 && last.CacheHit < 0.7:
		return []sim.Action{sim.Press(m, sim.ControlWarmup)}
	case !last.HeavyFeature && last.CacheHit > 0.7:
		return []sim.Action{sim.Switch(m, sim.ControlHeavyFeature, true)}
	case last.HeavyFeature && last.ShedLowPriority > 0 && last.CacheHit > 0.7 && last.DBUtilization < 0.75:
		return []sim.Action{sim.Set(m, sim.ControlShedLowPriority, 0)}
	}
	return nil
}
