package bots

import (
	"math"

	"github.com/afloat/afloat/sim"
)

// Nothing is the bot that never touches a lever: the autoscaler alone.
func Nothing(View) []sim.Action { return nil }

// Runbook is the bot that follows the scenario's runbook: it reacts to the
// burn-rate page and to what the dashboards show, the way an on-call
// engineer with the team's runbook would (Advise says which step of the
// runbook it follows). It is a sensible response, not the best one: it
// waits for the page, or for the dashboards to show trouble, and knows
// only what the briefing says.
func Runbook(v View) []sim.Action {
	_, acts := Advise(v)
	return acts
}

// Runbook steps, by catalogue key (web/static/i18n/*.json, "runbook.…"):
// the training mode's hints quote them, and docs/model.md gives them in
// full.
const (
	StepRollback  = "runbook.deploy.rollback" // the page within an hour of a deploy: roll it back
	StepPrepare   = "runbook.surge.prepare"   // a surge is expected: twice the fleet until it has passed
	StepQuiet     = "runbook.quiet.floor"     // a quiet day: let the autoscaler size the fleet
	StepRaise     = "runbook.capacity.raise"  // the page with more requests than the fleet is sized for
	StepRestore   = "runbook.capacity.restore"
	StepLower     = "runbook.capacity.lower"
	StepDegrade   = "runbook.flush.degrade" // the cache emptied, the database saturated
	StepWarmup    = "runbook.flush.warmup"
	StepRecommend = "runbook.flush.recommend"
	StepUnshed    = "runbook.flush.unshed"
)

// Advise returns what the scenario's runbook says to do at the start of
// the next minute, and the step that says it ("" and no action when the
// runbook says nothing). It is the runbook bot, and the training mode's
// hint. It is a pure function of the view.
func Advise(v View) (string, []sim.Action) {
	if len(v.Frames) == 0 {
		return "", nil
	}
	switch v.Scenario.Name {
	case "bad-deploy":
		return runbookDeploy(v)
	case "cache-flush":
		return runbookFlush(v)
	case "surge":
		return runbookSurge(v)
	case "mystery":
		return runbookMystery(v)
	default:
		return runbookQuiet(v)
	}
}

// runbookDeploy: "When the burn-rate page fires within an hour of a
// deploy, roll the deploy back. One rollback is enough: it takes five
// minutes."
func runbookDeploy(v View) (string, []sim.Action) {
	last := v.Last()
	if !last.Paged || len(v.Deploys) == 0 || last.Minute-v.Deploys[len(v.Deploys)-1] > 60 {
		return "", nil
	}
	if v.marked().lastRollback >= 0 {
		return "", nil
	}
	return StepRollback, []sim.Action{sim.Press(v.Minute(), sim.ControlRollback)}
}

// perInstance is the runbook's rule of thumb for capacity: an instance
// serves about 130 requests a second at the 60 % target (16 workers, about
// 74 ms a request).
const perInstance = 130

// runbookCapacity: "When the page fires and requests are above what the
// fleet is sized for, raise the fleet floor to the requests ÷ 130; until
// the new instances serve, shed low-priority traffic and turn off
// recommendations. Put both back once nothing boots and errors are under
// the SLO. Once the page has stopped and requests are back under what the
// opening fleet serves, lower the floor to where it was."
func runbookCapacity(v View, open int) (string, []sim.Action) {
	last := v.Last()
	m := v.Minute()
	need := int(math.Min(sim.MaxFleet, math.Ceil(last.RequestsPerS/perInstance)))
	switch {
	case last.Paged && need > last.FleetFloor:
		out := []sim.Action{sim.Set(m, sim.ControlFleetFloor, float64(need))}
		if last.ShedLowPriority < 1 {
			out = append(out, sim.Set(m, sim.ControlShedLowPriority, 1))
		}
		if last.HeavyFeature {
			out = append(out, sim.Switch(m, sim.ControlHeavyFeature, false))
		}
		return StepRaise, out
	case (last.ShedLowPriority > 0 || !last.HeavyFeature) && last.Booting == 0 && last.ErrorRate < 0.001:
		var out []sim.Action
		if last.ShedLowPriority > 0 {
			out = append(out, sim.Set(m, sim.ControlShedLowPriority, 0))
		}
		if !last.HeavyFeature {
			out = append(out, sim.Switch(m, sim.ControlHeavyFeature, true))
		}
		return StepRestore, out
	case last.FleetFloor > open && !last.Paged && float64(open*perInstance) > last.RequestsPerS &&
		v.marked().lastPaged >= 0:
		return StepLower, []sim.Action{sim.Set(m, sim.ControlFleetFloor, float64(open))}
	}
	return "", nil
}

// runbookSurge: "A surge is expected and instances take 8 minutes to
// boot: from the start, keep a floor of twice the opening fleet. When the
// page fires, … (the capacity steps)."
func runbookSurge(v View) (string, []sim.Action) {
	open := v.Scenario.Controls.FleetFloor
	if v.Minute() == 1 {
		return StepPrepare, []sim.Action{sim.Set(1, sim.ControlFleetFloor, float64(2*open))}
	}
	return runbookCapacity(v, 2*open)
}

// quietFloor is the fleet floor of a quiet day: two instances, so that one
// can fail.
const quietFloor = 2

// runbookQuiet: "On a quiet day let the autoscaler size the fleet: lower
// the floor to two instances. When the page fires, … (the capacity
// steps)."
func runbookQuiet(v View) (string, []sim.Action) {
	if v.Minute() == 1 && v.Scenario.Controls.FleetFloor > quietFloor {
		return StepQuiet, []sim.Action{sim.Set(1, sim.ControlFleetFloor, quietFloor)}
	}
	return runbookCapacity(v, v.Scenario.Controls.FleetFloor)
}

// runbookFlush: "When the database saturates with the cache emptied (or
// the page fires with the database saturated), turn off recommendations
// and shed low-priority traffic. Once the database is under 75 %, start
// the cache warm-up. When the cache hit rate is back over 70 %, turn
// recommendations back on; once the database is under 75 % with them,
// stop shedding."
func runbookFlush(v View) (string, []sim.Action) {
	last := v.Last()
	m := v.Minute()
	degraded := !last.HeavyFeature || last.ShedLowPriority > 0
	warmed := v.marked().lastWarmup >= 0
	switch {
	case (last.Paged || last.CacheHit < 0.5) && last.DBUtilization >= 0.99 && last.HeavyFeature:
		return StepDegrade, []sim.Action{sim.Switch(m, sim.ControlHeavyFeature, false), sim.Set(m, sim.ControlShedLowPriority, 1)}
	case degraded && !warmed && last.DBUtilization < 0.75 && last.CacheHit < 0.7:
		return StepWarmup, []sim.Action{sim.Press(m, sim.ControlWarmup)}
	case !last.HeavyFeature && last.CacheHit > 0.7:
		return StepRecommend, []sim.Action{sim.Switch(m, sim.ControlHeavyFeature, true)}
	case last.HeavyFeature && last.ShedLowPriority > 0 && last.CacheHit > 0.7 && last.DBUtilization < 0.75:
		return StepUnshed, []sim.Action{sim.Set(m, sim.ControlShedLowPriority, 0)}
	}
	return "", nil
}

// runbookMystery: on call with nothing announced, the runbook's pages in
// turn: the deploy's ("the page within an hour of a deploy: roll it
// back"), the flush's once the cache has emptied with the database
// saturated, else the capacity steps from the opening fleet.
func runbookMystery(v View) (string, []sim.Action) {
	if step, acts := runbookDeploy(v); step != "" {
		return step, acts
	}
	if v.marked().firstEmptySaturated >= 0 {
		return runbookFlush(v)
	}
	return runbookCapacity(v, v.Scenario.Controls.FleetFloor)
}

// RunbookSteps lists the steps of a scenario's runbook, in order, by
// catalogue key: the training mode shows the runbook whole.
func RunbookSteps(scenario string) []string {
	switch scenario {
	case "bad-deploy":
		return []string{StepRollback}
	case "cache-flush":
		return []string{StepDegrade, StepWarmup, StepRecommend, StepUnshed}
	case "surge":
		return []string{StepPrepare, StepRaise, StepRestore, StepLower}
	case "mystery":
		return []string{StepRollback, StepDegrade, StepWarmup, StepRecommend, StepUnshed, StepRaise, StepRestore, StepLower}
	default:
		return []string{StepQuiet, StepRaise, StepRestore, StepLower}
	}
}
