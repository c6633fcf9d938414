package bots

import "github.com/afloat/afloat/sim"

// View is what a player sees before a minute: the scenario's briefing, the
// dashboards of every minute so far and the deploy markers on them. It is
// the realistic view (docs/model.md, "Difficulty"): the share of traffic
// on the bad build, the cache's warm fraction and the model's inner
// figures (demand before noise, service and query times, Erlang C, the
// fleet's utilization, the one-minute burn) are not in it. Bots read
// nothing else.
type View struct {
	Scenario Briefing
	Frames   []sim.Frame // minutes 0 … Minute()−1, masked
	Deploys  []int       // minutes at which a deploy went out, seen so far
}

// Briefing is what a player is told about a scenario before it starts.
type Briefing struct {
	Name      string
	Start     int // minutes after midnight
	Minutes   int // the run's length
	BootDelay int // minutes before a launched instance serves
	Budget    float64
	Controls  sim.Controls // the levers at minute 0
}

func briefing(sc sim.Scenario, minutes int) Briefing {
	return Briefing{Name: sc.Name, Start: sc.Start, Minutes: minutes, BootDelay: sc.BootDelay, Budget: sc.Budget, Controls: sc.Controls}
}

// Minute is the minute the player's next actions apply to.
func (v View) Minute() int { return len(v.Frames) }

// Last is the minute on the dashboard.
func (v View) Last() sim.Frame { return v.Frames[len(v.Frames)-1] }

// Mask returns a frame as a player sees it on the realistic dashboards.
func Mask(f sim.Frame) sim.Frame {
	return sim.Frame{
		Minute: f.Minute, Clock: f.Clock,
		RequestsPerS: f.RequestsPerS, AdmittedPerS: f.AdmittedPerS, ShedShare: f.ShedShare,
		Serving: f.Serving, Booting: f.Booting,
		CacheHit: f.CacheHit, MeanAgeS: f.MeanAgeS, DBUtilization: f.DBUtilization,
		P99Ms: f.P99Ms, ErrorRate: f.ErrorRate,
		Burn5m: f.Burn5m, Burn1h: f.Burn1h, BudgetRemaining: f.BudgetRemaining, Paged: f.Paged,
		FleetCostPerH: f.FleetCostPerH, CostSoFar: f.CostSoFar,
		RecommendationsAvailable: f.RecommendationsAvailable,
		WarmupLeft:               f.WarmupLeft, RollbackLeft: f.RollbackLeft,
		Controls: f.Controls,
	}
}

// ViewOf is what a player of the scenario, in a run of the given length,
// has seen after the given frames (minutes 0 … len(frames)−1).
func ViewOf(sc sim.Scenario, minutes int, frames []sim.Frame) View {
	v := View{Scenario: briefing(sc, minutes), Frames: make([]sim.Frame, len(frames))}
	for i, f := range frames {
		v.Frames[i] = Mask(f)
	}
	for _, ev := range sc.Events {
		if ev.Kind == sim.EventDeploy && ev.Minute < len(frames) {
			v.Deploys = append(v.Deploys, ev.Minute)
		}
	}
	return v
}

// Upto is the view after the first n minutes only.
func (v View) Upto(n int) View {
	out := View{Scenario: v.Scenario, Frames: v.Frames[:n]}
	for _, d := range v.Deploys {
		if d < n {
			out.Deploys = append(out.Deploys, d)
		}
	}
	return out
}
