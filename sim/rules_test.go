package sim

import (
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/afloat/afloat/internal/queueing"
)

// mustRun runs a configuration that must be valid.
func mustRun(t *testing.T, c Config) []Frame {
	t.Helper()
	frames, err := Run(c)
	if err != nil {
		t.Fatalf("Run(%+v): %v", c, err)
	}
	return frames
}

func mustNew(t testing.TB, sc Scenario, seed uint32, noise bool) *Sim {
	t.Helper()
	s, err := New(sc, seed, noise)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func near(got, want, tol float64) bool { return math.Abs(got-want) <= tol }

// TestOpeningMinute is the specification's first acceptance test: the
// steady scenario at 12:00, noise off.
func TestOpeningMinute(t *testing.T) {
	f := mustRun(t, Config{Scenario: "steady", Seed: 1, Minutes: 1})[0]
	checks := []struct {
		name      string
		got, want float64
		tol       float64
	}{
		{"requests_per_s", f.RequestsPerS, 1125, 0},
		{"serving", float64(f.Serving), 10, 0},
		{"booting", float64(f.Booting), 0, 0},
		{"cache_hit", f.CacheHit, 3.375 / 4.375, 1e-15},
		{"db_utilization", f.DBUtilization, 1125 * 3 * (1 - 3.375/4.375) / 4000, 1e-15},
		{"shed_share", f.ShedShare, 0, 0},
		{"fleet_cost_per_h", f.FleetCostPerH, 4, 1e-12},
		{"cost_so_far", f.CostSoFar, 0, 0},
		{"mean_age_s", f.MeanAgeS, 30, 0},
		{"bad_build_share", f.BadBuildShare, 0, 0},
		{"recommendations_available", f.RecommendationsAvailable, 1, 0},
		{"burn", f.Burn, 0, 0},
		{"burn_1h", f.Burn1h, 0, 0},
		{"budget_remaining", f.BudgetRemaining, 1, 0},
	}
	for i, c := range checks {
		if !near(c.got, c.want, c.tol) {
			t.Errorf("step %d: %s = %v, want %v", i, c.name, c.got, c.want)
		}
	}
	if f.Clock != "12:00" || f.Paged {
		t.Errorf("clock %q, paged %v; want 12:00, false", f.Clock, f.Paged)
	}
	// The dashboard rounds these: 77 % and 19 %.
	if math.Round(100*f.CacheHit) != 77 || math.Round(100*f.DBUtilization) != 19 {
		t.Errorf("dashboard shows hit %.0f%%, DB %.0f%%; want 77%%, 19%%", 100*f.CacheHit, 100*f.DBUtilization)
	}
}

// TestFramesFollowTheFormulas recomputes every frame of every scenario, with
// noise and with the golden action files, from the figures the frame itself
// reports — an independent restatement of the model's formulas.
func TestFramesFollowTheFormulas(t *testing.T) {
	for _, c := range goldenCases(t) {
		sc, _ := Lookup(c.cfg.Scenario)
		// The build's errors and the surge are the run's: a mystery's seed
		// draws them.
		run := mustNew(t, sc, c.cfg.Seed, c.cfg.Noise)
		buildErrs := 0.0
		for _, ev := range run.Events() {
			if ev.Kind == EventDeploy {
				buildErrs = ev.Errors
			}
		}
		_, surged := run.Surge()
		for _, f := range mustRun(t, c.cfg) {
			checkFrame(t, c.name, sc, buildErrs, surged, f)
		}
	}
}

func checkFrame(t *testing.T, name string, sc Scenario, buildErrs float64, surged bool, f Frame) {
	t.Helper()
	fail := func(what string, got, want float64) {
		t.Helper()
		t.Fatalf("%s minute %d: %s = %v, want %v", name, f.Minute, what, got, want)
	}
	const tol = 1e-9
	if !near(f.ShedShare, 0.3*f.ShedLowPriority, tol) {
		fail("shed_share", f.ShedShare, 0.3*f.ShedLowPriority)
	}
	if !near(f.AdmittedPerS, f.RequestsPerS*(1-f.ShedShare), tol) {
		fail("admitted_per_s", f.AdmittedPerS, f.RequestsPerS*(1-f.ShedShare))
	}
	rT := f.AdmittedPerS / 20000 * f.CacheTTL
	if want := f.CacheWarm * rT / (1 + rT); !near(f.CacheHit, want, tol) {
		fail("cache_hit", f.CacheHit, want)
	}
	if !near(f.MeanAgeS, f.CacheTTL/2, 0) {
		fail("mean_age_s", f.MeanAgeS, f.CacheTTL/2)
	}
	q, app := 2.0, 0.050
	if f.HeavyFeature {
		q, app = 3, 0.070
	}
	db := f.AdmittedPerS * q * (1 - f.CacheHit)
	if f.WarmupLeft > 0 {
		db += 600
	}
	if !near(f.DBQueriesPerS, db, 1e-6) {
		fail("db_queries_per_s", f.DBQueriesPerS, db)
	}
	rho := db / 4000
	if !near(f.DBUtilization, math.Min(1, rho), tol) {
		fail("db_utilization", f.DBUtilization, math.Min(1, rho))
	}
	qt := 250.0
	if rho < 1 {
		qt = math.Min(250, 5/(1-rho))
	}
	if !near(f.QueryTimeMs, qt, 1e-6) {
		fail("query_time_ms", f.QueryTimeMs, qt)
	}
	s := 1000*app*(1+0.25*f.BadBuildShare) + (1-f.CacheHit)*q*qt
	if !near(f.ServiceTimeMs, s, 1e-6) {
		fail("service_time_ms", f.ServiceTimeMs, s)
	}
	n := f.Serving * 16
	a := f.AdmittedPerS * s / 1000
	if !near(f.OfferedLoad, a, 1e-9*math.Max(1, a)) {
		fail("offered_load", f.OfferedLoad, a)
	}
	var util, timeouts, failed float64
	p99, wait := 2000.0, 1.0
	switch {
	case n == 0:
		util, failed = 1, 1
	case a >= float64(n):
		util, failed = 1, 1-float64(n)/a
	default:
		util = a / float64(n)
		c := erlangC(a, n)
		wait = c
		theta := float64(n)/(s/1000) - f.AdmittedPerS
		timeouts = c * math.Exp(-theta*2)
		p99 = math.Min(2000, s*math.Log(100)+1000*math.Max(0, math.Log(c/0.01))/theta)
	}
	if !near(f.Utilization, util, tol) || f.Utilization > 1 {
		fail("utilization", f.Utilization, util)
	}
	if !near(f.TimeoutShare, timeouts, 1e-9) {
		fail("timeout_share", f.TimeoutShare, timeouts)
	}
	if !near(f.FailedShare, failed, tol) {
		fail("failed_share", f.FailedShare, failed)
	}
	if !near(f.P99Ms, p99, 1e-6) {
		fail("p99_ms", f.P99Ms, p99)
	}
	if !near(f.WaitShare, wait, 1e-9) {
		fail("wait_probability", f.WaitShare, wait)
	}
	e := 1 - (1-timeouts)*(1-failed)*(1-buildErrs*f.BadBuildShare)
	if !near(f.ErrorRate, e, 1e-9) {
		fail("error_rate", f.ErrorRate, e)
	}
	if !near(f.Burn, f.ErrorRate/0.001, 1e-9) {
		fail("burn", f.Burn, f.ErrorRate/0.001)
	}
	mult := 1.0
	if f.RollbackLeft > 0 {
		mult = 2
	}
	if want := float64(f.Serving+f.Booting) * 0.40 * mult; !near(f.FleetCostPerH, want, 1e-12) {
		fail("fleet_cost_per_h", f.FleetCostPerH, want)
	}
	for _, v := range []float64{f.WaitShare, f.ShedShare, f.CacheHit, f.CacheWarm, f.DBUtilization, f.Utilization,
		f.TimeoutShare, f.FailedShare, f.ErrorRate, f.BadBuildShare, f.RecommendationsAvailable} {
		if !(v >= 0 && v <= 1) {
			t.Fatalf("%s minute %d: a share is %v, outside [0, 1]: %+v", name, f.Minute, v, f)
		}
	}
	if f.Serving+f.Booting > MaxFleet {
		t.Fatalf("%s minute %d: fleet of %d over the maximum", name, f.Minute, f.Serving+f.Booting)
	}
	hours := float64(sc.Start+f.Minute) / 60
	daily := sc.BaseRate * (1 + 0.25*math.Sin(2*math.Pi*(hours-6)/24))
	if !surged && !near(f.DemandPerS, daily, 1e-9) || f.DemandPerS < daily-1e-9 {
		fail("demand_per_s", f.DemandPerS, daily)
	}
	if want := Clock(sc.Start + f.Minute); f.Clock != want {
		t.Fatalf("%s minute %d: clock %s, want %s", name, f.Minute, f.Clock, want)
	}
}

// erlangC is Erlang C from the textbook recursion, independent of the fast
// form the model uses.
func erlangC(a float64, n int) float64 {
	b := queueing.ErlangBRecursion(a, n)
	return b / (1 - a/float64(n)*(1-b))
}

// TestWindowsBudgetAndCost checks the running figures across whole runs:
// the burn-rate windows (the hour pre-filled with the opening minute), the
// page rule, the budget and the cost so far.
func TestWindowsBudgetAndCost(t *testing.T) {
	for _, c := range goldenCases(t) {
		sc, _ := Lookup(c.cfg.Scenario)
		frames := mustRun(t, c.cfg)
		budget, cost := sc.Budget, 0.0
		for m, f := range frames {
			mean := func(width int) float64 {
				sum := 0.0
				for i := m - width + 1; i <= m; i++ {
					sum += frames[max(i, 0)].ErrorRate // before minute 0: the opening minute
				}
				return sum / float64(width)
			}
			if want := mean(60) / 0.001; !near(f.Burn1h, want, 1e-9*math.Max(1, want)) {
				t.Fatalf("%s minute %d: burn_1h = %v, want %v", c.name, m, f.Burn1h, want)
			}
			if want := mean(5) / 0.001; !near(f.Burn5m, want, 1e-9*math.Max(1, want)) {
				t.Fatalf("%s minute %d: burn_5m = %v, want %v", c.name, m, f.Burn5m, want)
			}
			if want := f.Burn1h >= 14.4 && f.Burn5m >= 14.4; f.Paged != want {
				t.Fatalf("%s minute %d: paged = %v with burn_1h %v, burn_5m %v", c.name, m, f.Paged, f.Burn1h, f.Burn5m)
			}
			budget -= f.Burn / 43200
			if !near(f.BudgetRemaining, budget, 1e-12) {
				t.Fatalf("%s minute %d: budget_remaining = %v, want %v", c.name, m, f.BudgetRemaining, budget)
			}
			if !near(f.CostSoFar, cost, 1e-9) {
				t.Fatalf("%s minute %d: cost_so_far = %v, want %v", c.name, m, f.CostSoFar, cost)
			}
			cost += f.FleetCostPerH / 60
		}
	}
}

func TestHourWindowIsPrefilledWithOpeningMinute(t *testing.T) {
	// No instance at minute 0: every request fails, burn 1000. A window
	// filled with zeros would show 1000/60 ≈ 16.7 for the hour.
	frames := mustRun(t, Config{Scenario: "steady", Minutes: 3, Actions: []Action{
		Switch(0, ControlAutoscaling, false),
		Set(0, ControlFleetFloor, 0),
	}})
	f := frames[0]
	if f.Serving != 0 || f.FailedShare != 1 || f.Burn != 1000 {
		t.Fatalf("minute 0: serving %d, failed %v, burn %v; want 0, 1, 1000", f.Serving, f.FailedShare, f.Burn)
	}
	if f.Burn1h != 1000 || f.Burn5m != 1000 || !f.Paged {
		t.Errorf("minute 0: burn_1h %v, burn_5m %v, paged %v; want 1000, 1000, true", f.Burn1h, f.Burn5m, f.Paged)
	}
	if want := 1 - 1000.0/43200; !near(f.BudgetRemaining, want, 1e-15) {
		t.Errorf("minute 0: budget_remaining %v, want 1 − 1000/43,200 = %v", f.BudgetRemaining, want)
	}
}

func TestPageFiresInBadDeploy(t *testing.T) {
	frames := mustRun(t, Config{Scenario: "bad-deploy", Seed: 1})
	first := -1
	for _, f := range frames {
		if f.Paged {
			first = f.Minute
			break
		}
	}
	// 25 % more traffic per minute on the bad build from 09:10, 5 % errors
	// on it: the hour's mean reaches 14.4× the budget rate 18 minutes later.
	if first != 28 {
		t.Fatalf("first page at minute %d, want 28 (09:28)", first)
	}
	for m, want := range map[int]float64{9: 0, 10: 0.25, 11: 0.5, 12: 0.75, 13: 1, 60: 1} {
		if got := frames[m].BadBuildShare; got != want {
			t.Errorf("minute %d: bad_build_share %v, want %v", m, got, want)
		}
	}
}

// fleetOf returns serving, booting per minute.
func fleetOf(frames []Frame) (serving, booting []int) {
	for _, f := range frames {
		serving = append(serving, f.Serving)
		booting = append(booting, f.Booting)
	}
	return serving, booting
}

func TestRaisingTheFloorLaunchesAtOnceAndBootDelay(t *testing.T) {
	for _, tc := range []struct {
		scenario string
		delay    int
	}{{"steady", 3}, {"surge", 8}} {
		frames := mustRun(t, Config{Scenario: tc.scenario, Minutes: 30, Actions: []Action{Set(5, ControlFleetFloor, 14)}})
		serving, booting := fleetOf(frames)
		for m := 0; m < 5; m++ {
			if serving[m] != 10 || booting[m] != 0 {
				t.Fatalf("%s minute %d: %d serving, %d booting; want 10, 0", tc.scenario, m, serving[m], booting[m])
			}
		}
		for m := 5; m < 5+tc.delay; m++ {
			if serving[m] != 10 || booting[m] != 4 {
				t.Fatalf("%s minute %d: %d serving, %d booting; want 10 serving and the 4 launched booting", tc.scenario, m, serving[m], booting[m])
			}
		}
		if m := 5 + tc.delay; serving[m] != 14 || booting[m] != 0 {
			t.Fatalf("%s minute %d: %d serving, %d booting; want 14, 0 after the %d-minute boot delay",
				tc.scenario, m, serving[m], booting[m], tc.delay)
		}
	}
}

func TestNoScaleOutWhileBooting(t *testing.T) {
	// The floor launches 2 at minute 0; the low target asks for far more,
	// but nothing more starts until those 2 serve.
	frames := mustRun(t, Config{Scenario: "steady", Minutes: 8, Actions: []Action{
		Set(0, ControlFleetFloor, 12),
		Set(0, ControlTargetUtilization, 0.2),
	}})
	serving, booting := fleetOf(frames)
	for m := 0; m <= 2; m++ {
		if serving[m] != 10 || booting[m] != 2 {
			t.Fatalf("minute %d: %d serving, %d booting; want 10 and 2 (no scale-out while booting)", m, serving[m], booting[m])
		}
	}
	// After the end of minute 2 the two serve and the autoscaler, seeing
	// minute 2's 10 instances at 52 %, asks for ⌈10 × 0.522/0.2⌉ = 27.
	want := int(math.Ceil(10 * frames[2].Utilization / 0.2))
	if serving[3] != 12 || serving[3]+booting[3] != want {
		t.Fatalf("minute 3: %d serving, %d booting; want 12 serving and a fleet of %d", serving[3], booting[3], want)
	}
}

func TestScaleInAfterTenQuietMinutes(t *testing.T) {
	// Floor lowered to 7 with a 95 % target: the autoscaler wants
	// ⌈10 × 0.522/0.95⌉ = 6, below the floor, so 7 is what it aims for.
	frames := mustRun(t, Config{Scenario: "steady", Minutes: 60, Noise: false, Actions: []Action{
		Set(0, ControlFleetFloor, 7),
		Set(0, ControlTargetUtilization, 0.95),
	}})
	serving, _ := fleetOf(frames)
	want := map[int]int{0: 10, 9: 10, 10: 8, 19: 8, 20: 7, 59: 7}
	for m, w := range want {
		if serving[m] != w {
			t.Errorf("minute %d: %d serving, want %d (serving by minute: %v)", m, serving[m], w, serving)
		}
	}
	last := 0
	for m := 1; m < len(serving); m++ {
		if serving[m] < serving[m-1] {
			if cut := serving[m-1] - serving[m]; cut > max(1, serving[m-1]/5) {
				t.Errorf("minute %d: scale-in of %d from %d, more than 20 %%", m, cut, serving[m-1])
			}
			if m-last < 10 {
				t.Errorf("minute %d: scale-in %d minutes after the last change", m, m-last)
			}
			last = m
		}
		if serving[m] < 7 {
			t.Errorf("minute %d: %d serving, below the floor of 7", m, serving[m])
		}
	}
}

func TestAutoscalingOffMeansExactlyTheFloor(t *testing.T) {
	// The surge with seed 1 peaks near minute 115; the autoscaler grows the
	// fleet. Turning it off at minute 125 cuts the fleet to the floor at
	// once and keeps it there whatever the load.
	frames := mustRun(t, Config{Scenario: "surge", Seed: 1, Actions: []Action{
		Switch(125, ControlAutoscaling, false),
		Set(150, ControlFleetFloor, 12),
		Set(200, ControlFleetFloor, 9),
	}})
	if f := frames[124]; f.Serving+f.Booting <= 10 {
		t.Fatalf("minute 124: fleet of %d; the test needs the autoscaler to have grown it", f.Serving+f.Booting)
	}
	for _, f := range frames[125:] {
		floor := 10
		switch {
		case f.Minute >= 200:
			floor = 9
		case f.Minute >= 150:
			floor = 12
		}
		if f.Serving+f.Booting != floor || f.FleetFloor != floor || f.Autoscaling {
			t.Fatalf("minute %d: fleet %d+%d, floor %d, autoscaling %v; want exactly %d", f.Minute, f.Serving, f.Booting, f.FleetFloor, f.Autoscaling, floor)
		}
	}
	// Turning it off while the load wants more: the fleet stays at the floor.
	frames = mustRun(t, Config{Scenario: "steady", Minutes: 30, Actions: []Action{
		Switch(0, ControlAutoscaling, false),
		Set(0, ControlTargetUtilization, 0.2),
	}})
	for _, f := range frames {
		if f.Serving != 10 || f.Booting != 0 {
			t.Fatalf("minute %d: %d serving, %d booting; want exactly the floor of 10", f.Minute, f.Serving, f.Booting)
		}
	}
}

// TestCacheFlushBriefingIsTheModels: the briefing's "normal hit rate of
// 85 %" — the seed's, which the database was sized for — is the hit rate
// the model gives every minute before the flush.
func TestCacheFlushBriefingIsTheModels(t *testing.T) {
	sc, err := Lookup("cache-flush")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(sc.Briefing, "normal hit rate of 85 %") {
		t.Errorf("briefing %q: want the seed's normal hit rate of 85 %%", sc.Briefing)
	}
	for _, f := range mustRun(t, Config{Scenario: "cache-flush", Seed: 1})[:15] {
		if math.Round(100*f.CacheHit) != 85 {
			t.Errorf("%s, before the flush: hit %.4f, want 85 %%", f.Clock, f.CacheHit)
		}
	}
}

func TestSaturatedFleetReportsFullUtilizationAndGrowsStepByStep(t *testing.T) {
	frames := mustRun(t, Config{Scenario: "cache-flush", Seed: 1})
	f := frames[15] // the flush
	if f.CacheWarm != 0 || f.CacheHit != 0 {
		t.Fatalf("minute 15: warm %v, hit %v; want the flush to empty the cache", f.CacheWarm, f.CacheHit)
	}
	if frames[14].CacheWarm != 1 {
		t.Fatalf("minute 14: warm %v, want 1 before the flush", frames[14].CacheWarm)
	}
	if f.Utilization != 1 || f.FailedShare <= 0 || f.DBUtilization != 1 || f.QueryTimeMs != 250 || f.P99Ms != 2000 {
		t.Fatalf("minute 15: utilization %v, failed %v, DB %v, query %v ms, p99 %v; want a saturated fleet and DB",
			f.Utilization, f.FailedShare, f.DBUtilization, f.QueryTimeMs, f.P99Ms)
	}
	// Capped at 100 %, utilization can only ask for ⌈13/0.6⌉ = 22.
	if g := frames[16]; g.Serving != 13 || g.Booting != 9 {
		t.Fatalf("minute 16: %d serving, %d booting; want 13 and 9 (⌈13 × 1.0/0.6⌉ = 22)", g.Serving, g.Booting)
	}
}

func TestRollback(t *testing.T) {
	base := mustRun(t, Config{Scenario: "bad-deploy", Seed: 3, Noise: true})
	frames := mustRun(t, Config{Scenario: "bad-deploy", Seed: 3, Noise: true, Actions: []Action{Press(20, ControlRollback)}})
	for m := 20; m < 25; m++ {
		f := frames[m]
		if f.BadBuildShare != 1 || f.RollbackLeft != 25-m {
			t.Fatalf("minute %d: bad build %v, rollback left %d; want 1 and %d", m, f.BadBuildShare, f.RollbackLeft, 25-m)
		}
		if want := 2 * float64(f.Serving+f.Booting) * 0.40; f.FleetCostPerH != want {
			t.Fatalf("minute %d: fleet cost %v $/h, want %v (billed twice)", m, f.FleetCostPerH, want)
		}
	}
	for _, f := range frames[25:] {
		if f.BadBuildShare != 0 || f.RollbackLeft != 0 {
			t.Fatalf("minute %d: bad build %v, rollback left %d after the switch", f.Minute, f.BadBuildShare, f.RollbackLeft)
		}
	}
	if !reflect.DeepEqual(frames[:20], base[:20]) {
		t.Fatal("the run differs before the rollback was pressed")
	}

	// A second press restarts the five minutes.
	frames = mustRun(t, Config{Scenario: "bad-deploy", Seed: 3, Actions: []Action{Press(20, ControlRollback), Press(23, ControlRollback)}})
	for m, want := range map[int]int{22: 3, 23: 5, 27: 1, 28: 0} {
		if got := frames[m].RollbackLeft; got != want {
			t.Errorf("minute %d: rollback left %d, want %d", m, got, want)
		}
	}
	if frames[27].BadBuildShare != 1 || frames[28].BadBuildShare != 0 {
		t.Errorf("bad build at minutes 27, 28: %v, %v; want 1, 0", frames[27].BadBuildShare, frames[28].BadBuildShare)
	}

	// Before the deploy, a rollback only costs money: the deploy at 09:10
	// still goes out.
	frames = mustRun(t, Config{Scenario: "bad-deploy", Seed: 3, Actions: []Action{Press(2, ControlRollback)}})
	plain := mustRun(t, Config{Scenario: "bad-deploy", Seed: 3})
	for m := range frames {
		f, p := frames[m], plain[m]
		if f.BadBuildShare != p.BadBuildShare || f.ErrorRate != p.ErrorRate || f.Serving != p.Serving {
			t.Fatalf("minute %d: an early rollback changed the service", m)
		}
		want := p.FleetCostPerH
		if m >= 2 && m < 7 {
			want *= 2 // pressed at minute 2: five minutes billed twice
		}
		if f.FleetCostPerH != want {
			t.Fatalf("minute %d: fleet cost %v, want %v", m, f.FleetCostPerH, want)
		}
	}
}

// TestRollbackUndoesOnlyALiveBuild: a rollback pressed at 09:06, four
// minutes before the deploy, finishes its preparation at the end of 09:10
// while the new build is rolling out; the build it prepared from is the
// one live at 09:06, so the 09:10 build keeps taking traffic, all of it
// from 09:13, as if nothing had been pressed. A second press once the
// build is live does roll it back.
func TestRollbackUndoesOnlyALiveBuild(t *testing.T) {
	plain := mustRun(t, Config{Scenario: "bad-deploy", Seed: 3, Noise: true})
	early := mustRun(t, Config{Scenario: "bad-deploy", Seed: 3, Noise: true, Actions: []Action{Press(6, ControlRollback)}})
	for m := range plain {
		if early[m].BadBuildShare != plain[m].BadBuildShare || early[m].ErrorRate != plain[m].ErrorRate {
			t.Fatalf("minute %d: bad build %v, error rate %v; want %v, %v as without the early rollback",
				m, early[m].BadBuildShare, early[m].ErrorRate, plain[m].BadBuildShare, plain[m].ErrorRate)
		}
	}
	if early[13].BadBuildShare != 1 || early[119].BadBuildShare != 1 {
		t.Fatalf("bad build at 09:13 and 10:59: %v, %v; want 1: the 09:10 build takes all the traffic", early[13].BadBuildShare, early[119].BadBuildShare)
	}
	// Pressed again at 09:12, once the build is live: it goes at 09:17.
	again := mustRun(t, Config{Scenario: "bad-deploy", Seed: 3, Noise: true, Actions: []Action{Press(6, ControlRollback), Press(12, ControlRollback)}})
	if again[16].BadBuildShare != 1 || again[17].BadBuildShare != 0 || again[119].BadBuildShare != 0 {
		t.Fatalf("bad build at 09:16, 09:17, 10:59: %v, %v, %v; want 1, 0, 0", again[16].BadBuildShare, again[17].BadBuildShare, again[119].BadBuildShare)
	}
	// Pressed at 09:08, its countdown still running at the deploy: the
	// same, nothing undone.
	mid := mustRun(t, Config{Scenario: "bad-deploy", Seed: 3, Noise: true, Actions: []Action{Press(8, ControlRollback)}})
	if mid[14].BadBuildShare != 1 {
		t.Fatalf("rollback at 09:08: bad build at 09:14 %v, want 1", mid[14].BadBuildShare)
	}
}

func TestWarmup(t *testing.T) {
	frames := mustRun(t, Config{Scenario: "cache-flush", Seed: 1, Actions: []Action{
		Press(16, ControlWarmup),
		Press(18, ControlWarmup), // pressing it while it runs does nothing
	}})
	plain := mustRun(t, Config{Scenario: "cache-flush", Seed: 1})
	for m := 16; m < 24; m++ {
		f := frames[m]
		running := m < 22
		if (f.WarmupLeft > 0) != running {
			t.Fatalf("minute %d: warm-up left %d, want running %v (6 minutes from 16)", m, f.WarmupLeft, running)
		}
		q := 3.0
		db := f.AdmittedPerS * q * (1 - f.CacheHit)
		if running {
			db += 600
		}
		if !near(f.DBQueriesPerS, db, 1e-6) {
			t.Fatalf("minute %d: DB %v q/s, want %v", m, f.DBQueriesPerS, db)
		}
		// warm' = min(1, warm + (1 − warm)(1 − e^(−1/30))·min(1, 1/ρ) + 0.12)
		next := frames[m+1].CacheWarm
		rho := f.DBQueriesPerS / 4000
		want := f.CacheWarm + (1-f.CacheWarm)*(1-math.Exp(-1.0/30))*math.Min(1, 1/rho)
		if running {
			want += 0.12
		}
		if !near(next, math.Min(1, want), 1e-12) {
			t.Fatalf("minute %d: warm %v → %v, want %v", m, f.CacheWarm, next, want)
		}
	}
	if frames[22].CacheWarm <= plain[22].CacheWarm+0.6 {
		t.Errorf("warm-up added %v to the cache, want at least 6 × 12 %%", frames[22].CacheWarm-plain[22].CacheWarm)
	}
}

func TestRefillSlowsWhileDatabaseSaturated(t *testing.T) {
	frames := mustRun(t, Config{Scenario: "cache-flush", Seed: 1})
	f := frames[15]
	rho := f.DBQueriesPerS / 4000
	if rho <= 1 {
		t.Fatalf("minute 15: ρ_db = %v, the test needs a saturated DB", rho)
	}
	want := (1 - math.Exp(-1.0/30)) / rho
	if !near(frames[16].CacheWarm, want, 1e-15) {
		t.Errorf("minute 16: warm %v, want (1 − e^(−1/30))/ρ = %v", frames[16].CacheWarm, want)
	}
}

func TestSheddingAndHeavyFeature(t *testing.T) {
	f := mustRun(t, Config{Scenario: "steady", Minutes: 1, Actions: []Action{
		Set(0, ControlShedLowPriority, 0.5),
		Switch(0, ControlHeavyFeature, false),
	}})[0]
	if f.ShedShare != 0.15 || !near(f.AdmittedPerS, 1125*0.85, 1e-9) {
		t.Errorf("shed %v, admitted %v; want 0.15, %v", f.ShedShare, f.AdmittedPerS, 1125*0.85)
	}
	if f.ErrorRate != 0 {
		t.Errorf("shed traffic counted as errors: error rate %v", f.ErrorRate)
	}
	if f.RecommendationsAvailable != 0 || f.HeavyFeature {
		t.Errorf("recommendations %v with the feature off, want 0", f.RecommendationsAvailable)
	}
}

func TestNoiseOffGivesExactRate(t *testing.T) {
	frames := mustRun(t, Config{Scenario: "bad-deploy", Seed: 99})
	for _, f := range frames {
		hours := 9 + float64(f.Minute)/60
		want := 900 * (1 + 0.25*math.Sin(2*math.Pi*(hours-6)/24))
		if !near(f.RequestsPerS, want, 1e-9) {
			t.Fatalf("minute %d: %v req/s, want 60λ/60 = %v", f.Minute, f.RequestsPerS, want)
		}
	}
}

func TestNoiseIsAroundTheRate(t *testing.T) {
	frames := mustRun(t, Config{Scenario: "steady", Seed: 5, Noise: true, Minutes: 2000})
	var sum, sum2 float64
	for _, f := range frames {
		hours := 12 + float64(f.Minute)/60
		lambda := 900 * (1 + 0.25*math.Sin(2*math.Pi*(hours-6)/24))
		if n := f.RequestsPerS * 60; !near(n, math.Round(n), 1e-6) {
			t.Fatalf("minute %d: count %v is not whole", f.Minute, n)
		}
		z := f.RequestsPerS/lambda - 1
		sum += z
		sum2 += z * z
	}
	mean, sd := sum/2000, math.Sqrt(sum2/2000)
	// Relative noise: √(60λ)/(60λ) ≈ 0.004 from the count and 0.02 on top.
	if math.Abs(mean) > 0.003 || sd < 0.015 || sd > 0.025 {
		t.Errorf("relative noise mean %v, sd %v; want about 0 and 0.02", mean, sd)
	}
}

func TestSameInputsSameRun(t *testing.T) {
	for _, c := range goldenCases(t) {
		a, b := mustRun(t, c.cfg), mustRun(t, c.cfg)
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("%s: two runs differ", c.name)
		}
	}
	a := mustRun(t, Config{Scenario: "surge", Seed: 1, Noise: true})
	b := mustRun(t, Config{Scenario: "surge", Seed: 2, Noise: true})
	if reflect.DeepEqual(a, b) {
		t.Fatal("seeds 1 and 2 gave the same surge run")
	}
}

func TestSurgeIsDrawnWithinItsRange(t *testing.T) {
	sc, _ := Lookup("surge")
	for seed := uint32(0); seed < 2000; seed++ {
		s, ok := mustNew(t, sc, seed, false).Surge()
		if !ok {
			t.Fatal("surge scenario has no surge")
		}
		if s.Start < 20 || s.Start >= 160 || s.Peak < 2 || s.Peak >= 4 || s.Ramp < 0 ||
			s.Plateau < 20 || s.Plateau >= 40 || s.Decay != 45 {
			t.Fatalf("seed %d: surge %+v outside the scenario's range", seed, s)
		}
		if got := s.Multiplier(s.Start + s.Ramp + s.Plateau/2); got != s.Peak {
			t.Fatalf("seed %d: multiplier on the plateau %v, want %v", seed, got, s.Peak)
		}
		if got := s.Multiplier(s.Start - 1); got != 1 {
			t.Fatalf("seed %d: multiplier before the start %v, want 1", seed, got)
		}
		end := s.Start + s.Ramp + s.Plateau
		if got, want := s.Multiplier(end+45), 1+(s.Peak-1)/math.E; !near(got, want, 1e-12) {
			t.Fatalf("seed %d: one time constant after the plateau %v, want %v", seed, got, want)
		}
	}
	if _, ok := mustNew(t, Scenarios()[0], 1, false).Surge(); ok {
		t.Error("steady has a surge")
	}
}

func TestStepRefusesBadActionsWithoutApplyingAny(t *testing.T) {
	sc, _ := Lookup("steady")
	s := mustNew(t, sc, 1, true)
	_, err := s.Step([]Action{Set(0, ControlFleetFloor, 20), Set(0, ControlCacheTTL, 0)})
	if !errors.Is(err, ErrInvalidAction) {
		t.Fatalf("Step with a TTL of 0: error %v, want ErrInvalidAction", err)
	}
	_, err = s.Step([]Action{Set(1, ControlFleetFloor, 20)})
	if !errors.Is(err, ErrInvalidAction) {
		t.Fatalf("Step with an action for minute 1 at minute 0: error %v, want ErrInvalidAction", err)
	}
	got, err := s.Step(nil)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := mustNew(t, sc, 1, true).Step(nil)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("refused actions changed the run:\n got %+v\nwant %+v", got, want)
	}
}

func TestZeroServingFailsEverything(t *testing.T) {
	frames := mustRun(t, Config{Scenario: "steady", Minutes: 10, Actions: []Action{
		Switch(0, ControlAutoscaling, false), Set(0, ControlFleetFloor, 0),
		Switch(2, ControlAutoscaling, true),
	}})
	for m := 0; m < 3; m++ {
		if f := frames[m]; f.ErrorRate != 1 || f.Utilization != 1 || f.P99Ms != 2000 {
			t.Fatalf("minute %d with no instance: error %v, util %v, p99 %v", m, f.ErrorRate, f.Utilization, f.P99Ms)
		}
		// No instance, so no query and no recommendation served.
		if f := frames[m]; f.DBQueriesPerS != 0 || f.DBUtilization != 0 || f.RecommendationsAvailable != 0 {
			t.Fatalf("minute %d with no instance: %v DB queries/s (utilization %v), recommendations %v, want 0",
				m, f.DBQueriesPerS, f.DBUtilization, f.RecommendationsAvailable)
		}
	}
	// Back on, the autoscaler asks for one instance, then grows from it.
	if f := frames[3]; f.Booting != 1 {
		t.Fatalf("minute 3: %d booting, want 1 after autoscaling came back on with no instance", f.Booting)
	}
	if f := frames[6]; f.Serving != 1 {
		t.Fatalf("minute 6: %d serving, want 1", f.Serving)
	}
}

func TestClock(t *testing.T) {
	for i, tc := range []struct {
		in   int
		want string
	}{{0, "00:00"}, {9*60 + 5, "09:05"}, {12 * 60, "12:00"}, {23*60 + 59, "23:59"}, {1440 + 61, "01:01"}, {-1, "23:59"}} {
		if got := Clock(tc.in); got != tc.want {
			t.Errorf("step %d: Clock(%d) = %q, want %q", i, tc.in, got, tc.want)
		}
	}
}

func TestScenarioValidate(t *testing.T) {
	for _, sc := range Scenarios() {
		if err := sc.Validate(); err != nil {
			t.Errorf("built-in %s: %v", sc.Name, err)
		}
	}
	for i, mutate := range []func(*Scenario){
		func(sc *Scenario) { sc.Start = 1440 },
		func(sc *Scenario) { sc.Minutes = 0 },
		func(sc *Scenario) { sc.BaseRate = math.NaN() },
		func(sc *Scenario) { sc.Serving = 41 },
		func(sc *Scenario) { sc.Budget = math.Inf(-1) },
		func(sc *Scenario) { sc.BootDelay = 0 },
		func(sc *Scenario) { sc.Controls.TargetUtilization = 0 },
		func(sc *Scenario) { sc.Controls.CacheTTL = -1 },
		func(sc *Scenario) { sc.Events = []Event{{Minute: 3, Kind: "meteor"}} },
		func(sc *Scenario) { sc.Surge.Decay = 0 },
		func(sc *Scenario) { sc.Surge.PeakMin, sc.Surge.PeakMax = 5, 2 },
	} {
		sc, _ := Lookup("surge")
		mutate(&sc)
		if _, err := New(sc, 1, true); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("step %d: New accepted an invalid scenario: %v", i, err)
		}
	}
}

func TestPlayIsAPrefixOfRun(t *testing.T) {
	c := Config{Scenario: "bad-deploy", Seed: 7, Noise: true, Actions: []Action{Press(28, ControlRollback), Press(90, ControlWarmup)}}
	full := mustRun(t, c)
	for _, upTo := range []int{0, 1, 29, 120} {
		part, err := Play(c, upTo)
		if err != nil || !reflect.DeepEqual(part, full[:upTo]) {
			t.Fatalf("Play(%d): %d frames, %v; want the first %d of Run", upTo, len(part), err, upTo)
		}
	}
	for _, upTo := range []int{-1, 121} {
		if _, err := Play(c, upTo); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("Play(%d): %v, want ErrInvalidConfig", upTo, err)
		}
	}
	// An action past upTo but within the run is valid: it has not happened yet.
	if _, err := Play(c, 10); err != nil {
		t.Errorf("Play(10) with actions at 28 and 90: %v", err)
	}
}

// TestRolloutFollowsDeployAndRollback: the live rollout starts with the
// deploy and ends when a rollback of it completes, five minutes after the
// press.
func TestRolloutFollowsDeployAndRollback(t *testing.T) {
	sc, _ := Lookup("bad-deploy")
	s, err := New(sc, 1, false)
	if err != nil {
		t.Fatal(err)
	}
	for m := 0; m < 30; m++ {
		var acts []Action
		if m == 20 {
			acts = []Action{Press(m, ControlRollback)}
		}
		if _, err := s.Step(acts); err != nil {
			t.Fatal(err)
		}
		start, live := s.Rollout()
		wantLive := m >= 10 && m < 24 // the rollback pressed at 20 completes at the end of minute 24
		if live != wantLive || (live && start != 10) {
			t.Errorf("step %d: after minute %d: Rollout() = %d, %v; want 10, %v", m, m, start, live, wantLive)
		}
	}
}
