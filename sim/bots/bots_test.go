package bots

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/afloat/afloat/sim"
)

func cfgOf(scenario string, seed uint32) sim.Config {
	return sim.Config{Scenario: scenario, Seed: seed, Noise: true}
}

func mustPlay(t testing.TB, cfg sim.Config, bot string) Run {
	t.Helper()
	r, err := PlayBot(context.Background(), cfg, bot)
	if err != nil {
		t.Fatalf("%s on %s seed %d: %v", bot, cfg.Scenario, cfg.Seed, err)
	}
	return r
}

// TestBotScores pins each bot's points per scenario on seed 7, and the
// order a player measures up to: hindsight never worse than the expert
// (par), the expert never worse than the runbook, the runbook better than
// doing nothing where the incident is sure to come (the surge may be
// small, and the quiet day is quiet).
func TestBotScores(t *testing.T) {
	want := map[string][4]float64{ // nothing, runbook, expert, hindsight
		"steady":      {8.0, 7.3, 6.3, 6.3}, // hindsight finds nothing better than the expert's floor 2, target 75 %
		"bad-deploy":  {489.2, 106.9, 27.9, 27.9},
		"surge":       {20.4, 31.9, 24.4, 17.0}, // a small surge: the standing preparation is wasted on it
		"cache-flush": {816.6, 188.0, 30.6, 30.3},
		"mystery":     {20.8, 20.8, 20.8, 20.8}, // seed 7 draws a quiet morning: nothing to answer
	}
	for i, sc := range sim.ScenarioNames() {
		var got [4]float64
		for j, bot := range Names() {
			got[j] = math.Round(10*mustPlay(t, cfgOf(sc, 7), bot).Score.Points) / 10
		}
		if got != want[sc] {
			t.Errorf("step %d: %s seed 7: nothing, runbook, expert, hindsight scored %v, want %v", i, sc, got, want[sc])
		}
		if got[3] > got[2] || got[2] > got[1] || ((sc == "bad-deploy" || sc == "cache-flush") && got[1] >= got[0]) {
			t.Errorf("step %d: %s: points %v, want hindsight ≤ expert ≤ runbook, and runbook < nothing where the incident is sure", i, sc, got)
		}
	}
}

// blindPolicies sets one lever, or several, at minute 1 and never looks at
// the dashboards again.
func blindPolicies() map[string][]sim.Action {
	return map[string][]sim.Action{
		"fleet floor 0":        {sim.Set(1, sim.ControlFleetFloor, 0)},
		"fleet floor 20":       {sim.Set(1, sim.ControlFleetFloor, 20)},
		"fleet floor 40":       {sim.Set(1, sim.ControlFleetFloor, 40)},
		"autoscaling off":      {sim.Switch(1, sim.ControlAutoscaling, false)},
		"target 20 %":          {sim.Set(1, sim.ControlTargetUtilization, 0.2)},
		"target 40 %":          {sim.Set(1, sim.ControlTargetUtilization, 0.4)},
		"target 95 %":          {sim.Set(1, sim.ControlTargetUtilization, 0.95)},
		"TTL 1 s":              {sim.Set(1, sim.ControlCacheTTL, 1)},
		"TTL 300 s":            {sim.Set(1, sim.ControlCacheTTL, 300)},
		"TTL 3600 s":           {sim.Set(1, sim.ControlCacheTTL, 3600)},
		"warm-up":              {sim.Press(1, sim.ControlWarmup)},
		"shed 50 %":            {sim.Set(1, sim.ControlShedLowPriority, 0.5)},
		"shed 100 %":           {sim.Set(1, sim.ControlShedLowPriority, 1)},
		"recommendations off":  {sim.Switch(1, sim.ControlHeavyFeature, false)},
		"rollback":             {sim.Press(1, sim.ControlRollback)},
		"everything off":       everythingOff(),
		"everything off, more": {sim.Set(1, sim.ControlShedLowPriority, 1), sim.Switch(1, sim.ControlHeavyFeature, false), sim.Set(1, sim.ControlFleetFloor, 40), sim.Set(1, sim.ControlCacheTTL, 3600)},
	}
}

// everythingOff is the strategy that once won everything: shed all
// low-priority traffic and turn the heavy feature off at minute 1.
func everythingOff() []sim.Action {
	return []sim.Action{sim.Set(1, sim.ControlShedLowPriority, 1), sim.Switch(1, sim.ControlHeavyFeature, false)}
}

func points(t *testing.T, cfg sim.Config) sim.Score {
	t.Helper()
	frames, err := sim.Run(cfg)
	if err != nil {
		t.Fatal(err)
	}
	sc, _ := sim.Lookup(cfg.Scenario)
	return sim.ScoreFrames(sc, frames)
}

// TestEverythingOffScoresBelowTheRunbook: shedding all low-priority traffic
// and turning recommendations off from minute 1 costs more than the
// runbook's response, in every scenario, on every seed tried.
func TestEverythingOffScoresBelowTheRunbook(t *testing.T) {
	for _, sc := range sim.ScenarioNames() {
		for seed := uint32(1); seed <= 20; seed++ {
			cfg := cfgOf(sc, seed)
			rb := mustPlay(t, cfg, BotRunbook).Score.Points
			cfg.Actions = everythingOff()
			if off := points(t, cfg).Points; off <= rb {
				t.Errorf("%s seed %d: everything off scored %.1f, the runbook %.1f: want more", sc, seed, off, rb)
			}
		}
	}
}

// TestNoBlindLeverBeatsTheRunbook: no lever, nor the combinations above,
// set at minute 1 and left there, beats the runbook's sensible response —
// on average over seeds in every scenario, and on every seed where the
// incident does not depend on the seed (all but the surge and the
// mystery, whose incidents the seed draws: on a seed with a small surge, doing nothing costs
// less than the runbook's preparation, which is still the better bet).
func TestNoBlindLeverBeatsTheRunbook(t *testing.T) {
	const seeds = 12
	for _, sc := range sim.ScenarioNames() {
		rb := make([]float64, seeds)
		var rbMean float64
		for i := range rb {
			rb[i] = mustPlay(t, cfgOf(sc, uint32(i+1)), BotRunbook).Score.Points
			rbMean += rb[i] / seeds
		}
		for name, acts := range blindPolicies() {
			var mean float64
			for i := range rb {
				cfg := cfgOf(sc, uint32(i+1))
				cfg.Actions = acts
				p := points(t, cfg).Points
				mean += p / seeds
				if sc != "surge" && sc != "mystery" && p < rb[i] {
					t.Errorf("%s seed %d: %s scored %.1f, below the runbook's %.1f", sc, i+1, name, p, rb[i])
				}
			}
			if mean < rbMean {
				t.Errorf("%s: %s scored %.1f on average, below the runbook's %.1f", sc, name, mean, rbMean)
			}
		}
	}
}

// TestBotsSeeOnlyWhatAPlayerSees: a bot's actions do not change when
// what the realistic dashboards hide changes — here the bad build's
// share, which a run with the rollout hidden from the frames would show
// differently.
func TestBotsSeeOnlyWhatAPlayerSees(t *testing.T) {
	f := sim.Frame{BadBuildShare: 0.75, CacheWarm: 0.3, DemandPerS: 2000, ServiceTimeMs: 80, Utilization: 0.9, Burn: 50}
	if m := Mask(f); m != (Shown{}) {
		t.Errorf("Mask kept a hidden figure: %+v", m)
	}
	// The runbook on the bad deploy acts on the page, not on the rollout
	// it cannot see: the first action comes after the first paged minute.
	r := mustPlay(t, cfgOf("bad-deploy", 3), BotRunbook)
	page := -1
	for _, fr := range r.Frames {
		if fr.Paged {
			page = fr.Minute
			break
		}
	}
	if len(r.Config.Actions) != 1 || r.Config.Actions[0].Minute != page+1 {
		t.Errorf("runbook actions %v, want one rollback the minute after the page at %d", r.Config.Actions, page)
	}
}

// TestExpertRestraint: the expert does not roll back before the deploy's
// marker is on the dashboard, and its plan replays to its score through
// the public run.
func TestExpertRestraint(t *testing.T) {
	r := mustPlay(t, cfgOf("bad-deploy", 1), BotExpert)
	for _, a := range r.Config.Actions {
		if a.Control == sim.ControlRollback && a.Minute <= 10 {
			t.Errorf("expert rolled back at minute %d, before the deploy at 10 was on the dashboard", a.Minute)
		}
	}
	if got := points(t, r.Config); got.Points != r.Score.Points {
		t.Errorf("the expert's plan replays to %v points, it claimed %v", got.Points, r.Score.Points)
	}
}

// TestWhatIfsAreExactReplays: every what-if's score is the score of its
// whole replay, and its frames are byte for byte the player's up to the
// first minute it changes.
func TestWhatIfsAreExactReplays(t *testing.T) {
	for _, c := range []sim.Config{
		{Scenario: "bad-deploy", Seed: 7, Noise: true, Actions: []sim.Action{sim.Set(5, sim.ControlTargetUtilization, 0.5), sim.Press(28, sim.ControlRollback)}},
		{Scenario: "cache-flush", Seed: 2, Noise: true, Actions: []sim.Action{sim.Switch(17, sim.ControlHeavyFeature, false), sim.Press(30, sim.ControlWarmup), sim.Switch(50, sim.ControlHeavyFeature, true)}},
		{Scenario: "surge", Seed: 4, Noise: false, Actions: []sim.Action{sim.Set(1, sim.ControlFleetFloor, 30), sim.Set(2, sim.ControlShedLowPriority, 0.5)}},
	} {
		par := mustPlay(t, sim.Config{Scenario: c.Scenario, Seed: c.Seed, Noise: c.Noise}, BotExpert)
		whatIfs, err := Coach(context.Background(), c, par.Config.Actions)
		if err != nil {
			t.Fatal(err)
		}
		if len(whatIfs) == 0 {
			t.Fatalf("%s: no what-if", c.Scenario)
		}
		own, err := sim.Run(c)
		if err != nil {
			t.Fatal(err)
		}
		sc, _ := sim.Lookup(c.Scenario)
		for i, w := range whatIfs {
			frames, err := w.Frames(c)
			if err != nil {
				t.Fatal(err)
			}
			if s := sim.ScoreFrames(sc, frames); s.Points != w.Points {
				t.Errorf("%s what-if %d (%s): %v points claimed, the replay scores %v", c.Scenario, i, w.Kind, w.Points, s.Points)
			}
			first := len(own)
			for j := range max(len(w.Actions), len(c.Actions)) {
				if j >= len(w.Actions) || j >= len(c.Actions) || w.Actions[j] != c.Actions[j] {
					if j < len(w.Actions) {
						first = min(first, w.Actions[j].Minute)
					}
					if j < len(c.Actions) {
						first = min(first, c.Actions[j].Minute)
					}
					break
				}
			}
			a, _ := json.Marshal(own[:first])
			b, _ := json.Marshal(frames[:first])
			if !bytes.Equal(a, b) {
				t.Errorf("%s what-if %d: frames before minute %d differ from the player's", c.Scenario, i, first)
			}
			if first < len(own) {
				a, _ := json.Marshal(own[first:])
				b, _ := json.Marshal(frames[first:])
				if bytes.Equal(a, b) && w.Gain != 0 {
					t.Errorf("%s what-if %d: frames from minute %d equal the player's, but it claims a gain of %v", c.Scenario, i, first, w.Gain)
				}
			}
		}
	}
}

// TestCoachMovesTheRollback: the coach tells a player who rolled back at
// the page that rolling back at the deploy's marker would have kept more
// of the budget, and says how much.
func TestCoachMovesTheRollback(t *testing.T) {
	c := sim.Config{Scenario: "bad-deploy", Seed: 7, Noise: true, Actions: []sim.Action{sim.Press(29, sim.ControlRollback)}}
	whatIfs, err := Coach(context.Background(), c, nil)
	if err != nil {
		t.Fatal(err)
	}
	w := whatIfs[0]
	if w.Kind != "moved" || w.To != 11 || w.Why != WhyDeploy || w.Clock != "09:11" {
		t.Fatalf("best what-if %+v, want the rollback moved to 09:11, the deploy's marker", w)
	}
	if w.Sign == nil || w.Sign.Kind != SignDeploy || w.Sign.Clock != "09:10" {
		t.Errorf("what-if's sign %+v, want the deploy marker at 09:10", w.Sign)
	}
	if w.BudgetGain < 0.015 || w.Gain < 50 {
		t.Errorf("moving the rollback to 09:11 keeps %.2f of the budget and saves %.1f points: want more than 1.5 %% and 50", w.BudgetGain, w.Gain)
	}
}

// TestCoachAddsWhatThePlayerNeverDid: a player who never rolled back hears
// what the expert's rollback would have saved.
func TestCoachAddsWhatThePlayerNeverDid(t *testing.T) {
	c := cfgOf("bad-deploy", 7)
	par := mustPlay(t, c, BotExpert)
	whatIfs, err := Coach(context.Background(), c, par.Config.Actions)
	if err != nil {
		t.Fatal(err)
	}
	if len(whatIfs) == 0 || whatIfs[0].Kind != "added" || whatIfs[0].Action.Control != sim.ControlRollback {
		t.Fatalf("what-ifs %+v, want the expert's rollback added first", whatIfs)
	}
}

func TestGrade(t *testing.T) {
	for i, tc := range []struct {
		points       float64
		failed       bool
		par, runbook float64
		stars        int
	}{
		{28, false, 28, 107, 3},
		{33, false, 28, 107, 3}, // par + 5
		{33.1, false, 28, 107, 2},
		{114.35, false, 28, 107, 2}, // 1.05 × 107 + 2
		{114.4, false, 28, 107, 1},
		{20, true, 28, 107, 0},    // the budget ran out, whatever the points
		{110, false, 100, 101, 3}, // par + 10 %
		{5, false, 5.3, 7.4, 3},
	} {
		g := GradeScore(sim.Score{Points: tc.points, Failed: tc.failed}, tc.par, tc.runbook)
		if g.Stars != tc.stars {
			t.Errorf("step %d: %v points (failed %v) against par %v, runbook %v: %d stars, want %d", i, tc.points, tc.failed, tc.par, tc.runbook, g.Stars, tc.stars)
		}
	}
}

func TestPercentile(t *testing.T) {
	d := Distribution{Points: []float64{10, 20, 20, 30}}
	for i, tc := range []struct{ points, want float64 }{
		{5, 100}, {10, 87.5}, {15, 75}, {20, 50}, {30, 12.5}, {40, 0},
	} {
		if got := d.Percentile(tc.points); got != tc.want {
			t.Errorf("step %d: Percentile(%v) = %v, want %v", i, tc.points, got, tc.want)
		}
	}
	if s := d.Summarize(); s.Mean != 20 || s.Best != 10 || s.Worst != 30 || s.P50 != 20 {
		t.Errorf("summary %+v", s)
	}
}

// TestShippedDistributionsAreCurrent replays a sample of the shipped
// seeds: the embedded distributions are what the bots score today (after
// a change to the model, the score or a bot, regenerate them with the
// command in sweep.go).
func TestShippedDistributionsAreCurrent(t *testing.T) {
	for _, sc := range sim.ScenarioNames() {
		for _, bot := range Names() {
			d, ok := Shipped(sc, bot)
			if !ok || len(d.Points) != 1000 || d.First != 1 {
				t.Fatalf("%s/%s: no shipped distribution of seeds 1-1000", sc, bot)
			}
			for _, seed := range []uint32{1, 333, 1000} {
				got := math.Round(100*mustPlay(t, cfgOf(sc, seed), bot).Score.Points) / 100
				if want := d.Points[seed-1]; got != want {
					t.Errorf("%s/%s seed %d: %v points, shipped %v: regenerate distributions.json", sc, bot, seed, got, want)
				}
			}
		}
	}
}

func TestPlayRefuses(t *testing.T) {
	if _, err := PlayBot(context.Background(), cfgOf("steady", 1), "genius"); err == nil {
		t.Error("an unknown bot was played")
	}
	c := cfgOf("steady", 1)
	c.Actions = []sim.Action{sim.Press(3, sim.ControlWarmup)}
	if _, err := Play(c, Nothing); err == nil {
		t.Error("a bot played a run that had actions already")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Expert(ctx, cfgOf("surge", 1)); err == nil {
		t.Error("the expert ran on a cancelled context")
	}
}

// TestSweepsRefuse: a sweep out of bounds is refused before anything is
// played, naming the field and its range, even when only the last of the
// sweeps asked for is wrong; the sweeps that run come back in order.
func TestSweepsRefuse(t *testing.T) {
	ctx := context.Background()
	for i, tc := range []struct {
		scenarios, bots []string
		first, last     uint32
		workers         int
		want            string
	}{
		{[]string{"steady", "calm"}, []string{BotNothing}, 1, 2, 1, `scenario "calm"`},
		{[]string{"steady"}, []string{BotNothing, "genius"}, 1, 2, 1, `bot "genius": want one of nothing, runbook, expert`},
		{[]string{"steady"}, []string{BotNothing}, 5, 1, 1, "seeds 5-1: want first ≤ last, at most 100000 seeds"},
		{[]string{"steady"}, []string{BotNothing}, 0, MaxSweepSeeds, 1, "seeds 0-100000: want first ≤ last, at most 100000 seeds"},
		{[]string{"steady"}, []string{BotNothing}, 1, 2, MaxWorkers + 1, "workers 257: want 0 (one per CPU) to 256"},
	} {
		ds, err := Sweeps(ctx, tc.scenarios, tc.bots, tc.first, tc.last, tc.workers)
		if ds != nil || !errors.Is(err, sim.ErrInvalidConfig) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("step %d: Sweeps = %d distributions, %v; want none and %q", i, len(ds), err, tc.want)
		}
	}
	ds, err := Sweeps(ctx, []string{"steady", "surge"}, []string{BotRunbook, BotNothing}, 1, 2, 0)
	if err != nil || len(ds) != 4 || ds[0].Scenario != "steady" || ds[0].Bot != BotRunbook || ds[3].Scenario != "surge" || ds[3].Bot != BotNothing {
		t.Fatalf("Sweeps: %+v, %v", ds, err)
	}
	if sums := Summaries(ds); len(sums) != 4 || sums[1].Runs != 2 {
		t.Errorf("Summaries: %+v", sums)
	}
	if got, err := ShippedOf([]string{"surge"}); err != nil || len(got) != len(Names()) || got[0].Scenario != "surge" || got[0].Bot != Names()[0] {
		t.Errorf("ShippedOf(surge): %d distributions, %v", len(got), err)
	}
	if _, err := ShippedOf([]string{"calm"}); !errors.Is(err, sim.ErrInvalidConfig) {
		t.Errorf("ShippedOf(calm): %v; want the scenario refused", err)
	}
}

// cancelledAfter is a context that is cancelled once a plan has made n
// replays: a cancellation that arrives in the middle of a round, timed by
// the work done rather than by a clock.
type cancelledAfter struct {
	context.Context
	p *plan
	n int
}

func (c cancelledAfter) Err() error {
	if c.p.evals >= c.n {
		return context.Canceled
	}
	return nil
}

// TestExpertStopsWithinAReplay: a search whose context is cancelled in the
// middle of a round makes no replay after it sees that (before, it
// finished the round: thousands of replays, a minute at 10,080 minutes),
// and returns the context's error.
func TestExpertStopsWithinAReplay(t *testing.T) {
	const n = 10
	for i, name := range []string{"surge", "cache-flush", "bad-deploy"} {
		cfg := cfgOf(name, 7)
		minutes, _ := cfg.Length()
		sc, _ := sim.Lookup(name)
		base, err := newBaseline(context.Background(), sc, cfg.Seed, cfg.Noise, minutes)
		if err != nil {
			t.Fatal(err)
		}
		p := plan{base: base, slots: slotsFor(sc, base)}
		err = p.search(cancelledAfter{Context: context.Background(), p: &p, n: n})
		if err != context.Canceled || p.evals != n {
			t.Errorf("step %d: %s: search cancelled after %d replays made %d and returned %v; want %d and context.Canceled", i, name, n, p.evals, err, n)
		}
	}
	// The whole expert, cancelled: its error, whatever the length.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Expert(ctx, sim.Config{Scenario: "surge", Seed: 7, Noise: true, Minutes: sim.MaxMinutes}); err != context.Canceled {
		t.Errorf("Expert with a cancelled context: %v", err)
	}
}
