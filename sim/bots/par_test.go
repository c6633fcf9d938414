package bots

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/afloat/afloat/sim"
)

// seeds100 is the range the checks are made on.
const seeds100 = 100

// grader grades runs on one scenario's seeds against par (the expert) and
// the runbook, each played once per seed.
type grader struct {
	scenario string
	par, rb  []float64
}

func newGrader(t *testing.T, scenario string) grader {
	t.Helper()
	g := grader{scenario: scenario, par: make([]float64, seeds100+1), rb: make([]float64, seeds100+1)}
	for seed := 1; seed <= seeds100; seed++ {
		cfg := cfgOf(scenario, uint32(seed))
		g.par[seed] = mustPlay(t, cfg, BotExpert).Score.Points
		g.rb[seed] = mustPlay(t, cfg, BotRunbook).Score.Points
	}
	return g
}

// script grades a fixed action list on a seed.
func (g grader) script(t *testing.T, seed int, acts []sim.Action) Grade {
	t.Helper()
	cfg := cfgOf(g.scenario, uint32(seed))
	cfg.Actions = acts
	return GradeScore(points(t, cfg), g.par[seed], g.rb[seed])
}

// policy grades a policy's run on a seed.
func (g grader) policy(t *testing.T, seed int, p Policy) Grade {
	t.Helper()
	r, err := Play(cfgOf(g.scenario, uint32(seed)), p)
	if err != nil {
		t.Fatal(err)
	}
	return GradeScore(r.Score, g.par[seed], g.rb[seed])
}

// TestRollbackBeforeTheDeployNeverEarnsThreeStars: the script that once won
// the bad deploy on every seed — press Rollback before 09:10 — now only
// costs money, and the bad build takes the traffic: on seeds 1–100, at
// every minute from 09:01 to 09:09, never three stars.
func TestRollbackBeforeTheDeployNeverEarnsThreeStars(t *testing.T) {
	g := newGrader(t, "bad-deploy")
	for seed := 1; seed <= seeds100; seed++ {
		for m := 1; m < 10; m++ {
			if gr := g.script(t, seed, []sim.Action{sim.Press(m, sim.ControlRollback)}); gr.Stars == 3 {
				t.Errorf("seed %d: rollback at minute %d earned three stars (%.1f over par %.1f)", seed, m, gr.OverPar, gr.Par)
			}
		}
	}
}

// TestFragileSteadyFleetRarelyEarnsThreeStars: the steady scenario's
// cheapest fleet — floor 1, target 95 % — has no spare instance at the
// noon peak, and the score charges it (sim.PointsPerFragileMinute): three
// stars on at most 20 % of seeds 1–100.
func TestFragileSteadyFleetRarelyEarnsThreeStars(t *testing.T) {
	g := newGrader(t, "steady")
	fragile := []sim.Action{sim.Set(1, sim.ControlFleetFloor, 1), sim.Set(1, sim.ControlTargetUtilization, 0.95)}
	three := 0
	for seed := 1; seed <= seeds100; seed++ {
		if g.script(t, seed, fragile).Stars == 3 {
			three++
		}
	}
	if three > seeds100/5 {
		t.Errorf("floor 1 + target 95 %%: three stars on %d of %d seeds, want at most 20 %%", three, seeds100)
	}
}

// TestWatchEarnsTwoStars: the documented simple policy that reacts to the
// dashboard (Watch) earns at least two stars on at least 80 % of seeds
// 1–100 in every scenario: par is within a player's reach.
func TestWatchEarnsTwoStars(t *testing.T) {
	for _, sc := range sim.ScenarioNames() {
		g := newGrader(t, sc)
		two := 0
		for seed := 1; seed <= seeds100; seed++ {
			if g.policy(t, seed, Watch).Stars >= 2 {
				two++
			}
		}
		if two < seeds100*4/5 {
			t.Errorf("%s: Watch earned two stars or more on %d of %d seeds, want at least 80 %%", sc, two, seeds100)
		}
	}
}

// TestExpertNeedsNoHindsight: on every scenario par is the expert's
// score, which a player reading the dashboard can equal: replaying the
// expert's actions gives its score, and perfect foresight (Hindsight)
// never scores worse than it.
func TestExpertNeedsNoHindsight(t *testing.T) {
	for _, sc := range sim.ScenarioNames() {
		for _, seed := range []uint32{2, 7} {
			ex := mustPlay(t, cfgOf(sc, seed), BotExpert)
			if got := points(t, ex.Config).Points; got != ex.Score.Points {
				t.Errorf("%s seed %d: the expert's actions replay to %v points, it scored %v", sc, seed, got, ex.Score.Points)
			}
			if hs := mustPlay(t, cfgOf(sc, seed), BotHindsight); hs.Score.Points > ex.Score.Points {
				t.Errorf("%s seed %d: hindsight scored %.1f, worse than the expert's %.1f", sc, seed, hs.Score.Points, ex.Score.Points)
			}
		}
	}
}

// TestObservationCarriesNoHiddenState: the expert's only input, View, is
// built of fields the page shows, and the check that says so refuses each
// way hidden state could get in.
func TestObservationCarriesNoHiddenState(t *testing.T) {
	if err := checkObservation(reflect.TypeOf(View{})); err != nil {
		t.Fatalf("View: %v", err)
	}
	for i, c := range []struct {
		name string
		typ  any
	}{
		{"the surge beside the view", struct {
			View
			Surge sim.Surge
		}{}},
		{"whole frames (the bad build's share)", struct{ Frames []sim.Frame }{}},
		{"the scenario (its events)", struct{ Scenario sim.Scenario }{}},
		{"a run", struct{ Frames *sim.Sim }{}},
		{"the seed", struct{ Seed uint32 }{}},
		{"a hidden field under a shown name", struct {
			Frames []struct{ BadBuildShare float64 }
		}{}},
		{"anything behind an interface", struct{ Frames any }{}},
		{"a map", struct{ Frames map[string]float64 }{}},
	} {
		if err := checkObservation(reflect.TypeOf(c.typ)); !errors.Is(err, ErrHiddenState) {
			t.Errorf("step %d: %s: checkObservation = %v, want ErrHiddenState", i, c.name, err)
		}
	}
}

// peeker is a bot that knows the seed's surge: it would raise the floor
// the minute before the surge, as the old clairvoyant par did.
type peeker struct{ surge sim.Surge }

func (p peeker) act(v View) []sim.Action {
	if v.Minute() == int(p.surge.Start)-1 {
		return []sim.Action{sim.Set(v.Minute(), sim.ControlFleetFloor, 30)}
	}
	return nil
}

// TestExpertRefusesHiddenState: the runner that plays the expert refuses a
// bot that reads hidden state — one whose input carries it, one that
// captured the seed's surge in a closure or a bound method — and plays
// the observation-only policies.
func TestExpertRefusesHiddenState(t *testing.T) {
	cfg := cfgOf("surge", 7)
	s, err := sim.New(mustLookup(t, "surge"), 7, true)
	if err != nil {
		t.Fatal(err)
	}
	surge, _ := s.Surge()
	closure := func(v View) []sim.Action { return peeker{surge}.act(v) }
	for i, c := range []struct {
		name string
		p    any
	}{
		{"frames unmasked", func(fs []sim.Frame) []sim.Action { return nil }},
		{"the view and the surge", func(v View, s sim.Surge) []sim.Action { return nil }},
		{"a closure over the surge", closure},
		{"a method bound to the surge", peeker{surge}.act},
		{"a run", func(s *sim.Sim) []sim.Action { return nil }},
		{"not a function", surge},
	} {
		if _, err := playExpert(context.Background(), cfg, c.p, true); !errors.Is(err, ErrHiddenState) {
			t.Errorf("step %d: %s: playExpert = %v, want ErrHiddenState", i, c.name, err)
		}
	}
	// The peeker, had it been let in, would have used what it knew.
	r, err := Play(cfg, closure)
	if err != nil || len(r.Config.Actions) != 1 {
		t.Fatalf("the peeking bot played %v, %v: the test needs it to act", r.Config.Actions, err)
	}
	for i, p := range []any{Reactive, Watch, Runbook, Nothing} {
		if _, err := playExpert(context.Background(), cfg, p, true); err != nil {
			t.Errorf("step %d: an observation-only policy refused: %v", i, err)
		}
	}
}

func mustLookup(t *testing.T, name string) sim.Scenario {
	t.Helper()
	sc, err := sim.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

// TestCoachNeverEarly: over seeds 1–100 of every scenario, with the
// runbook's run and a blind script as the player's,
// the coach never proposes a move at or before the minute its incident
// happened (the deploy, the flush, the surge's start), nor before the
// minute after the sign it names.
func TestCoachNeverEarly(t *testing.T) {
	blind := map[string][]sim.Action{
		"steady":      {sim.Set(1, sim.ControlFleetFloor, 1), sim.Set(1, sim.ControlTargetUtilization, 0.95)},
		"bad-deploy":  {sim.Press(6, sim.ControlRollback)},
		"surge":       {sim.Set(1, sim.ControlFleetFloor, 16), sim.Set(30, sim.ControlShedLowPriority, 0.5)},
		"cache-flush": {sim.Switch(12, sim.ControlHeavyFeature, false), sim.Press(13, sim.ControlWarmup)},
		"mystery":     {sim.Set(1, sim.ControlFleetFloor, 20), sim.Press(6, sim.ControlRollback), sim.Switch(40, sim.ControlHeavyFeature, false)},
	}
	ctx := context.Background()
	for _, name := range sim.ScenarioNames() {
		sc := mustLookup(t, name)
		for seed := uint32(1); seed <= seeds100; seed++ {
			event, scheduled := firstIncident(t, sc, seed)
			par := mustPlay(t, cfgOf(name, seed), BotExpert)
			players := [][]sim.Action{blind[name], mustPlay(t, cfgOf(name, seed), BotRunbook).Config.Actions}
			for _, acts := range players {
				cfg := cfgOf(name, seed)
				cfg.Actions = acts
				whatIfs, err := Coach(ctx, cfg, par.Config.Actions)
				if err != nil {
					t.Fatal(err)
				}
				for _, w := range whatIfs {
					if w.Kind == "removed" {
						continue
					}
					if w.Sign == nil || w.To <= w.Sign.Minute {
						t.Errorf("%s seed %d: %s %v at %d with sign %+v: want a sign before the move", name, seed, w.Kind, w.Action.Control, w.To, w.Sign)
						continue
					}
					if scheduled {
						if float64(w.To) <= event {
							t.Errorf("%s seed %d: %s %v at minute %d, the event at %.1f: a move before its event", name, seed, w.Kind, w.Action.Control, w.To, event)
						}
					}
					for _, a := range w.Actions {
						if a.Minute >= 1 && float64(a.Minute) <= event && !containsAction(acts, a) {
							t.Errorf("%s seed %d: what-if adds %v at minute %d, before the event at %.1f", name, seed, a.Control, a.Minute, event)
						}
					}
				}
			}
		}
	}
}

// firstIncident is the minute of the run's first incident — the bad
// build's deploy, the flush, the surge's start, a mystery's drawn ones
// included — and false on a day with nothing scheduled.
func firstIncident(t *testing.T, sc sim.Scenario, seed uint32) (float64, bool) {
	t.Helper()
	s, err := sim.New(sc, seed, true)
	if err != nil {
		t.Fatal(err)
	}
	event, found := 0.0, false
	take := func(m float64) {
		if !found || m < event {
			event, found = m, true
		}
	}
	for _, ev := range s.Events() {
		if ev.Kind == sim.EventFlush || ev.Errors > 0 { // a good build is no incident
			take(float64(ev.Minute))
		}
	}
	if surge, ok := s.Surge(); ok {
		take(surge.Start)
	}
	return event, found
}

func containsAction(acts []sim.Action, a sim.Action) bool {
	for _, b := range acts {
		if b == a {
			return true
		}
	}
	return false
}

// TestScriptTable prints the three-star share of fixed scripts over seeds
// 1–100 (go test -run ScriptTable -v ./sim/bots), the table docs/model.md
// quotes, and checks the shares the issue bounds.
func TestScriptTable(t *testing.T) {
	scripts := []struct {
		scenario, name string
		acts           []sim.Action
		most           float64 // the highest three-star share allowed; 1 for any
	}{
		{"steady", "floor 1 + target 95 % at 12:01", []sim.Action{sim.Set(1, sim.ControlFleetFloor, 1), sim.Set(1, sim.ControlTargetUtilization, 0.95)}, 0.2},
		{"steady", "target 95 % at 12:01 (the floor stays 10)", []sim.Action{sim.Set(1, sim.ControlTargetUtilization, 0.95)}, 1},
		{"steady", "floor 2 + target 75 % at 12:01 (the expert's)", []sim.Action{sim.Set(1, sim.ControlFleetFloor, 2), sim.Set(1, sim.ControlTargetUtilization, 0.75)}, 1},
		{"bad-deploy", "rollback at 09:05", []sim.Action{sim.Press(5, sim.ControlRollback)}, 0},
		{"bad-deploy", "rollback at 09:09", []sim.Action{sim.Press(9, sim.ControlRollback)}, 0},
		{"bad-deploy", "rollback at 09:11", []sim.Action{sim.Press(11, sim.ControlRollback)}, 1},
		{"surge", "floor 20 at 08:01", []sim.Action{sim.Set(1, sim.ControlFleetFloor, 20)}, 1},
		{"surge", "floor 40 at 08:01", []sim.Action{sim.Set(1, sim.ControlFleetFloor, 40)}, 1},
		{"cache-flush", "recommendations off at 12:00, on at 12:08", []sim.Action{sim.Switch(15, sim.ControlHeavyFeature, false), sim.Switch(23, sim.ControlHeavyFeature, true)}, 1},
	}
	scripts = append(scripts, mysteryScripts()...)
	graders := map[string]grader{}
	worstRollback := 0.0 // of the mystery's sixty rollback scripts, only the new worst are logged
	for _, s := range scripts {
		g, ok := graders[s.scenario]
		if !ok {
			g = newGrader(t, s.scenario)
			graders[s.scenario] = g
		}
		var stars [4]int
		for seed := 1; seed <= seeds100; seed++ {
			stars[g.script(t, seed, s.acts).Stars]++
		}
		share := float64(stars[3]) / seeds100
		if s.scenario != "mystery" || !strings.HasPrefix(s.name, "rollback at 10:") || share > worstRollback {
			t.Logf("| %s | %s | %.0f %% | %d/%d/%d/%d |", s.scenario, s.name, 100*share, stars[3], stars[2], stars[1], stars[0])
		}
		if strings.HasPrefix(s.name, "rollback at 10:") {
			worstRollback = max(worstRollback, share)
		}
		if share > s.most+1e-9 {
			t.Errorf("%s: %s earned three stars on %.0f %% of seeds, want at most %.0f %%", s.scenario, s.name, 100*share, 100*s.most)
		}
	}
}

// mysteryScripts are fixed-time scripts for the mystery morning: a
// rollback at each minute from 10:01 to 11:00, fleet and target settings
// at 10:01, and the cache-flush scenario's moves at noon. None may earn
// three stars on more than 10 % of seeds: the seed draws the morning, so
// no time learnt once fits the next.
func mysteryScripts() []struct {
	scenario, name string
	acts           []sim.Action
	most           float64
} {
	type script = struct {
		scenario, name string
		acts           []sim.Action
		most           float64
	}
	const most = 0.1
	clock := func(m int) string { return sim.Clock(10*60 + m) }
	var out []script
	add := func(name string, acts ...sim.Action) { out = append(out, script{"mystery", name, acts, most}) }
	add("nothing")
	for m := 1; m <= 60; m++ {
		add("rollback at "+clock(m), sim.Press(m, sim.ControlRollback))
	}
	for _, f := range []float64{2, 16, 20, 25, 30, 40} {
		add(fmt.Sprintf("floor %.0f at 10:01", f), sim.Set(1, sim.ControlFleetFloor, f))
	}
	for _, u := range []float64{0.3, 0.4, 0.5, 0.75, 0.95} {
		add(fmt.Sprintf("target %.0f %% at 10:01", 100*u), sim.Set(1, sim.ControlTargetUtilization, u))
	}
	add("floor 2 + target 75 % at 10:01", sim.Set(1, sim.ControlFleetFloor, 2), sim.Set(1, sim.ControlTargetUtilization, 0.75))
	add("floor 20 + target 40 % at 10:01", sim.Set(1, sim.ControlFleetFloor, 20), sim.Set(1, sim.ControlTargetUtilization, 0.4))
	const noon = 120
	add("the cache-flush expert's moves at noon", sim.Switch(noon, sim.ControlHeavyFeature, false), sim.Set(noon+1, sim.ControlShedLowPriority, 1),
		sim.Press(noon+5, sim.ControlWarmup), sim.Switch(noon+15, sim.ControlHeavyFeature, true), sim.Set(noon+20, sim.ControlShedLowPriority, 0))
	add("the runbook's flush steps at noon", sim.Switch(noon, sim.ControlHeavyFeature, false), sim.Set(noon, sim.ControlShedLowPriority, 1),
		sim.Press(noon+8, sim.ControlWarmup), sim.Switch(noon+20, sim.ControlHeavyFeature, true), sim.Set(noon+25, sim.ControlShedLowPriority, 0))
	add("recommendations off at 12:00, on at 12:08", sim.Switch(noon, sim.ControlHeavyFeature, false), sim.Switch(noon+8, sim.ControlHeavyFeature, true))
	return out
}
