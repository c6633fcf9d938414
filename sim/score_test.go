package sim

import (
	"math"
	"testing"
)

// TestScoreFrames charges each harm at its rate, on two hand-made
// minutes whose figures are easy to add up.
func TestScoreFrames(t *testing.T) {
	sc, _ := Lookup("bad-deploy") // budget 20 %, TTL 60 s
	frames := []Frame{
		{Minute: 0, RequestsPerS: 1000, AdmittedPerS: 1000, Serving: 10, ServiceTimeMs: 70, ErrorRate: 0.05, CacheHit: 0.8, RecommendationsAvailable: 1,
			BudgetRemaining: 0.19, FleetCostPerH: 4, Controls: Controls{CacheTTL: 60}},
		{Minute: 1, RequestsPerS: 1000, AdmittedPerS: 700, Serving: 1, ServiceTimeMs: 70, ErrorRate: 0, CacheHit: 0.5, RecommendationsAvailable: 0,
			BudgetRemaining: 0.18, CostSoFar: 4.0 / 60, FleetCostPerH: 8, Controls: Controls{CacheTTL: 240}},
	}
	s := ScoreFrames(sc, frames)
	want := Score{
		Errors:      60000 * 0.05,       // minute 0: 5 % of 60,000
		Shed:        60 * 300,           // minute 1: 300 req/s refused
		Degraded:    42000,              // minute 1: every one of the 42,000 served
		Stale:       42000 * 0.5 * 0.75, // half from the cache, ¾ of those older than 60 s with a TTL of 240 s
		Cost:        4.0/60 + 8.0/60,    // both minutes' fleets
		BudgetSpent: 0.02,
		Fragile:     1, // minute 1: one instance serving, none to spare
	}
	near := func(a, b float64) bool { return math.Abs(a-b) < 1e-9*math.Max(1, math.Abs(b)) }
	for _, c := range []struct {
		name      string
		got, want float64
	}{
		{"errors", s.Errors, want.Errors},
		{"shed", s.Shed, want.Shed},
		{"degraded", s.Degraded, want.Degraded},
		{"stale", s.Stale, want.Stale},
		{"cost", s.Cost, want.Cost},
		{"budget spent", s.BudgetSpent, want.BudgetSpent},
		{"fragile", float64(s.Fragile), float64(want.Fragile)},
		{"points", s.Points, 2*PointsPerBudgetPercent + want.Errors/ErrorsPerPoint + want.Shed/ShedPerPoint +
			want.Degraded/DegradedPerPoint + want.Stale/StalePerPoint + want.Cost*PointsPerDollar + PointsPerFragileMinute},
	} {
		if !near(c.got, c.want) {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
	if s.Failed || s.FailedMinute != -1 {
		t.Errorf("a run with budget left failed: %+v", s)
	}

	// The budget gone at minute 1: failed there, the budget spent is all
	// of it and no more, and the minutes after are not graded.
	frames[1].BudgetRemaining = -0.3
	after := frames[1]
	after.Minute, after.ErrorRate, after.BudgetRemaining = 2, 0.5, -0.9
	s = ScoreFrames(sc, append(frames, after))
	if !s.Failed || s.FailedMinute != 1 || s.Minutes != 2 {
		t.Errorf("a run whose budget ran out at minute 1: failed %v at %d, %d minutes graded; want true, 1, 2", s.Failed, s.FailedMinute, s.Minutes)
	}
	if s.BudgetSpent != sc.Budget || s.Errors != want.Errors {
		t.Errorf("budget spent %v, errors %v; want the opening %v and %v: minute 2 was never played", s.BudgetSpent, s.Errors, sc.Budget, want.Errors)
	}
}

// TestHeadroom: N+1 headroom is the queue with one instance fewer, as the
// model computes it. At the steady scenario's noon (1,125 req/s, 74 ms a
// request: 83 busy workers) six instances (96 workers) serve, but five (80
// workers) would saturate; seven leave room for one to fail.
func TestHeadroom(t *testing.T) {
	for i, c := range []struct {
		serving  int
		admitted float64
		want     bool
	}{
		{7, 1125, true},
		{6, 1125, false},
		{1, 10, false}, // one instance: none to spare
		{0, 1125, false},
		{0, 0, true}, // no traffic, nothing to lose
		{40, 1125, true},
	} {
		f := Frame{Serving: c.serving, AdmittedPerS: c.admitted, ServiceTimeMs: 74}
		if got := Headroom(f); got != c.want {
			t.Errorf("step %d: Headroom(%d serving, %v req/s) = %v, want %v", i, c.serving, c.admitted, got, c.want)
		}
	}
	// Just short of saturation with one fewer the queue times out more
	// than 0.1 % of the requests: 16 workers for 15.99 Erlangs.
	f := Frame{Serving: 2, AdmittedPerS: 15.99 / 0.074, ServiceTimeMs: 74}
	if Headroom(f) {
		t.Error("a fleet whose one-fewer queue is at 99.9 % utilization has headroom, want none")
	}
}

// TestTallyCopiesKeepTheScoreSoFar: a copy of a Tally goes on from where
// the original was, which is what a search relies on.
func TestTallyCopiesKeepTheScoreSoFar(t *testing.T) {
	sc, _ := Lookup("surge")
	frames, err := Run(Config{Scenario: "surge", Seed: 3, Noise: true})
	if err != nil {
		t.Fatal(err)
	}
	whole := ScoreFrames(sc, frames)
	tally := NewTally(sc)
	for _, f := range frames[:100] {
		tally.Add(f)
	}
	fork := tally
	for _, f := range frames[100:] {
		fork.Add(f)
	}
	if fork.Score() != whole {
		t.Errorf("a copied tally scores %+v, the whole run %+v", fork.Score(), whole)
	}
	if tally.Score() == whole {
		t.Error("adding to a copy changed the original")
	}
}
