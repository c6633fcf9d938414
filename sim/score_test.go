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
		{Minute: 0, RequestsPerS: 1000, AdmittedPerS: 1000, ErrorRate: 0.05, CacheHit: 0.8, RecommendationsAvailable: 1,
			BudgetRemaining: 0.19, FleetCostPerH: 4, Controls: Controls{CacheTTL: 60}},
		{Minute: 1, RequestsPerS: 1000, AdmittedPerS: 700, ErrorRate: 0, CacheHit: 0.5, RecommendationsAvailable: 0,
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
		{"points", s.Points, 2*PointsPerBudgetPercent + want.Errors/ErrorsPerPoint + want.Shed/ShedPerPoint +
			want.Degraded/DegradedPerPoint + want.Stale/StalePerPoint + want.Cost*PointsPerDollar},
	} {
		if !near(c.got, c.want) {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
	if s.Failed || s.FailedMinute != -1 {
		t.Errorf("a run with budget left failed: %+v", s)
	}

	// The budget gone at minute 1: failed there.
	frames[1].BudgetRemaining = -0.001
	if s := ScoreFrames(sc, frames); !s.Failed || s.FailedMinute != 1 {
		t.Errorf("a run whose budget ran out at minute 1: failed %v at %d", s.Failed, s.FailedMinute)
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
