package sim

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
)

func TestExplainOpeningMinute(t *testing.T) {
	sc, _ := Lookup("steady")
	f := mustRun(t, Config{Scenario: "steady", Minutes: 1})[0]
	got := map[string]string{}
	for _, fo := range Explain(sc, f) {
		got[fo.ID] = fo.Values
		if len(fo.Sources) == 0 || fo.Formula == "" {
			t.Errorf("%s: no source or no formula: %+v", fo.ID, fo)
		}
	}
	for id, want := range map[string]string{
		"arrivals":       "λ = 900 × (1 + 0.25·sin(2π(0/60 + 12 − 6)/24)) × 1 = 1125 req/s",
		"cache_rate":     "r·T = 1125/20,000 × 60 = 3.375",
		"cache_hit":      "hit = 1.00 × 3.375/(1 + 3.375) = 0.7714",
		"mean_age":       "age ≈ 60/2 = 30 s",
		"db_load":        "DB = 1125 × 3 × (1 − 0.7714) = 771.4 queries/s",
		"db_utilization": "ρ_db = 771.4/4,000 = 0.1929",
		"offered_load":   "N = 10 × 16 = 160; a = 1125 × 0.07425 = 83.53 Erlangs",
		"fleet_cost":     "cost = (10 + 0) × 0.40 = 4.00 $/h",
		"autoscaler":     "desired = ⌈10 × 0.5221/0.6⌉ = 9 → 10 (floor 10)",
		"page":           "0 ≥ 14.4 and 0 ≥ 14.4: no page",
	} {
		if got[id] != want {
			t.Errorf("%s: %q, want %q", id, got[id], want)
		}
	}
}

// Every formula any minute of any golden run can show has an ID that
// FormulaIDs lists, so message catalogues can name them all.
func TestExplainIDsAreListed(t *testing.T) {
	ids := FormulaIDs()
	seen := map[string]bool{}
	for _, c := range goldenCases(t) {
		sc, _ := Lookup(c.cfg.Scenario)
		for _, f := range mustRun(t, c.cfg) {
			for _, fo := range Explain(sc, f) {
				if !slices.Contains(ids, fo.ID) {
					t.Fatalf("%s minute %d: formula %q not in FormulaIDs", c.name, f.Minute, fo.ID)
				}
				seen[fo.ID] = true
				if strings.Contains(fo.Values, "%!") || strings.Contains(fo.Values, "NaN") {
					t.Fatalf("%s minute %d: %s = %q", c.name, f.Minute, fo.ID, fo.Values)
				}
			}
		}
	}
	for _, id := range ids {
		if !seen[id] {
			t.Errorf("formula %q is never shown by the golden runs", id)
		}
	}
}

func TestSummarize(t *testing.T) {
	sc, _ := Lookup("bad-deploy")
	actions := []Action{Switch(31, ControlHeavyFeature, false), Press(30, ControlRollback), Press(100, ControlWarmup)}
	frames := mustRun(t, Config{Scenario: "bad-deploy", Seed: 7, Noise: true, Actions: actions})
	d := Summarize(sc, frames[:60], actions) // the first hour: the warm-up at 100 has not happened
	if d.Minutes != 60 || d.From != "09:00" || d.To != "09:59" || d.BudgetStart != 0.2 {
		t.Fatalf("header %+v", d)
	}
	frames = frames[:60]
	last := frames[59]
	if d.BudgetLeft != last.BudgetRemaining || d.TotalCost != last.CostSoFar+last.FleetCostPerH/60 {
		t.Errorf("budget left %v, cost %v; want %v, %v", d.BudgetLeft, d.TotalCost, last.BudgetRemaining, last.CostSoFar+last.FleetCostPerH/60)
	}
	var over, slow, noRecs, paged, bad int
	worst := 0.0
	for _, f := range frames {
		if f.ErrorRate > 0.001 {
			over++
		}
		if f.P99Ms > 1000 {
			slow++
		}
		if !f.HeavyFeature {
			noRecs++
		}
		if f.Paged {
			paged++
		}
		if f.BadBuildShare > 0 {
			bad++
		}
		worst = max(worst, f.Burn1h)
	}
	if d.MinutesOverSLO != over || d.MinutesP99Over1s != slow || d.MinutesWithoutRecommendations != noRecs ||
		d.PagedMinutes != paged || d.BadBuildMinutes != bad || d.WorstBurn1h != worst {
		t.Errorf("counts %+v; want over %d, slow %d, no recs %d, paged %d, bad %d, worst %v", d, over, slow, noRecs, paged, bad, worst)
	}
	if noRecs != 29 || bad != 25 {
		t.Errorf("minutes without recommendations %d, bad-build minutes %d; want 29 (31–59) and 25 (10–34)", noRecs, bad)
	}
	// The page fires at 28 and stops once the 5-minute window has cleared
	// after the rollback switches at the end of minute 34.
	if len(d.Pages) != 1 || d.Pages[0].From != 28 {
		t.Fatalf("pages %+v, want one from minute 28", d.Pages)
	}
	var kinds []string
	for _, m := range d.Timeline {
		kinds = append(kinds, m.Kind)
	}
	if strings.Join(kinds, " ") != "page action action page_end" {
		t.Errorf("timeline kinds %v", kinds)
	}
	if a := d.Timeline[1]; a.Minute != 30 || a.Action.Control != ControlRollback || a.BadBuildShare != 1 || !a.Paged {
		t.Errorf("rollback moment %+v", a)
	}
	if _, err := json.Marshal(d); err != nil {
		t.Fatal(err)
	}
	if e := Summarize(sc, nil, nil); e.Minutes != 0 || e.BudgetLeft != 0.2 {
		t.Errorf("empty run: %+v", e)
	}

	// With no instance serving from minute 1 every request fails and the
	// 20 % left is gone in minutes: the game is over at the first minute
	// with none left, and the debrief stops there, at 0 %, never below.
	lost := mustRun(t, Config{Scenario: "bad-deploy", Seed: 7, Noise: true,
		Actions: []Action{Switch(1, ControlAutoscaling, false), Set(1, ControlFleetFloor, 0)}})
	end := -1
	for _, f := range lost {
		if f.BudgetRemaining <= 0 {
			end = f.Minute
			break
		}
	}
	if end < 0 || lost[len(lost)-1].BudgetRemaining >= 0 {
		t.Fatalf("doing nothing kept the budget (first empty minute %d): the test needs a lost game", end)
	}
	d = Summarize(sc, lost, []Action{Press(end+5, ControlRollback)})
	if !d.Lost || d.Minutes != end+1 || d.BudgetLeft != 0 || len(d.Timeline) != 1 || d.Timeline[0].Kind != "page" {
		t.Errorf("lost game: lost %v, %d minutes, budget left %v, timeline %+v; want true, %d, 0, the page alone", d.Lost, d.Minutes, d.BudgetLeft, d.Timeline, end+1)
	}
	if s := ScoreFrames(sc, lost); s.Minutes != end+1 || s.BudgetSpent != 0.2 {
		t.Errorf("lost game scored over %d minutes, budget spent %v; want %d, 0.2", s.Minutes, s.BudgetSpent, end+1)
	}
}

// TestActionMomentsShowWhatThePlayerSaw: an action's moment in the
// timeline carries the dashboard the player moved on — the minute before
// the one the action applies to — so that a move that brings the page on
// at once is not told as made "while paged", and one made during a page
// is.
func TestActionMomentsShowWhatThePlayerSaw(t *testing.T) {
	sc, _ := Lookup("bad-deploy")
	acts := []Action{Switch(1, ControlAutoscaling, false), Set(1, ControlFleetFloor, 0), Set(3, ControlFleetFloor, 10)}
	frames := mustRun(t, Config{Scenario: "bad-deploy", Seed: 7, Noise: true, Actions: acts})
	if frames[0].Paged || !frames[1].Paged || !frames[2].Paged {
		t.Fatalf("paged at minutes 0-2: %v %v %v; the test needs the page to fire at minute 1, on the moves", frames[0].Paged, frames[1].Paged, frames[2].Paged)
	}
	d := Summarize(sc, frames, acts)
	var got []string
	for _, m := range d.Timeline {
		got = append(got, fmt.Sprintf("%d %s paged=%v", m.Minute, m.Kind, m.Paged))
	}
	want := []string{"1 action paged=false", "1 action paged=false", "1 page paged=true", "3 action paged=true"}
	if len(got) < len(want) || !slices.Equal(got[:len(want)], want) {
		t.Fatalf("timeline %q, want it to start %q", got, want)
	}
	for i, seen := range []Frame{frames[0], frames[0], frames[1], frames[2]} {
		if m := d.Timeline[i]; m.Burn1h != seen.Burn1h || m.BadBuildShare != seen.BadBuildShare {
			t.Errorf("step %d: moment %+v, want the burn and bad build of minute %d (%v, %v)", i, m, seen.Minute, seen.Burn1h, seen.BadBuildShare)
		}
	}
}
