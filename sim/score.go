package sim

import "math"

// The score of a run is what the incident cost, in points: like strokes in
// golf, fewer is better, and par is what an expert would have spent on the
// same seed. Each point is the same harm whatever its source, at these
// exchange rates (docs/model.md, "The score", gives the reasons):
const (
	// PointsPerBudgetPercent is charged for each 1 % of the month's error
	// budget spent: the SLO is the promise, and a month's budget gone is
	// the end of the game.
	PointsPerBudgetPercent = 10
	// ErrorsPerPoint failed or timed-out requests cost a point: users who
	// saw an error.
	ErrorsPerPoint = 1000
	// ShedPerPoint shed requests cost a point: low-priority traffic told to
	// try again later, a quarter of the harm of an error.
	ShedPerPoint = 4000
	// DegradedPerPoint requests served without recommendations cost a
	// point: degrading is cheaper than failing, but not free.
	DegradedPerPoint = 50000
	// StalePerPoint stale answers cost a point: answers from the cache
	// older than the scenario's opening TTL, the freshness the service
	// normally gives.
	StalePerPoint = 50000
	// PointsPerDollar is charged for each dollar of the fleet's bill.
	PointsPerDollar = 1
)

// Score is what a run cost: the points and where they came from, and the
// quantities they were charged for.
type Score struct {
	Points float64 `json:"points"` // the sum of the five below; fewer is better

	BudgetPoints   float64 `json:"budget_points"`
	ErrorPoints    float64 `json:"error_points"`
	ShedPoints     float64 `json:"shed_points"`
	DegradedPoints float64 `json:"degraded_points"`
	StalePoints    float64 `json:"stale_points"`
	MoneyPoints    float64 `json:"money_points"`

	BudgetSpent float64 `json:"budget_spent"` // fraction of the month's budget; negative never
	Errors      float64 `json:"errors"`       // failed and timed-out requests
	Shed        float64 `json:"shed"`         // requests refused at the load balancer
	Degraded    float64 `json:"degraded"`     // requests served without recommendations
	Stale       float64 `json:"stale"`        // cached answers older than the opening TTL
	Cost        float64 `json:"cost"`         // dollars

	// Failed is set when the month's budget ran out: the game is over at
	// FailedMinute, the first minute that left no budget (-1 when none).
	Failed       bool `json:"failed"`
	FailedMinute int  `json:"failed_minute"`
}

// staleShare is the share of cached answers older than fresh seconds with
// a TTL of ttl seconds: an answer's age is uniform between 0 and the TTL
// (which is also why the mean age is TTL/2).
func staleShare(ttl, fresh float64) float64 {
	if ttl <= fresh {
		return 0
	}
	return 1 - fresh/ttl
}

// ScoreFrames scores the frames of a run of the scenario, from its first
// minute. A run that fails (no budget left) is scored all the same, over
// every frame given. It is safe for concurrent use.
func ScoreFrames(sc Scenario, frames []Frame) Score {
	t := NewTally(sc)
	for _, f := range frames {
		t.Add(f)
	}
	return t.Score()
}

// Tally scores a run a minute at a time: Add each frame in order, then
// Score. A Tally is a value: copying one keeps the score so far, so that a
// search trying several futures from one minute scores only the minutes
// after it. The zero value is not valid; use NewTally.
type Tally struct {
	budget, fresh float64 // the scenario's opening budget and TTL
	s             Score
	last          Frame
	n             int
}

// NewTally starts the score of a run of the scenario.
func NewTally(sc Scenario) Tally {
	return Tally{budget: sc.Budget, fresh: sc.Controls.CacheTTL, s: Score{FailedMinute: -1}}
}

// Add counts the next minute of the run.
func (t *Tally) Add(f Frame) {
	admitted := 60 * f.AdmittedPerS
	errs := admitted * f.ErrorRate
	served := admitted - errs
	t.s.Errors += errs
	t.s.Shed += 60 * (f.RequestsPerS - f.AdmittedPerS)
	t.s.Degraded += served * (1 - f.RecommendationsAvailable)
	t.s.Stale += served * f.CacheHit * staleShare(f.CacheTTL, t.fresh)
	if f.BudgetRemaining <= 0 && !t.s.Failed {
		t.s.Failed, t.s.FailedMinute = true, f.Minute
	}
	t.last = f
	t.n++
}

// Score returns the score of the minutes added so far.
func (t *Tally) Score() Score {
	s := t.s
	if t.n > 0 {
		s.BudgetSpent = math.Max(0, t.budget-t.last.BudgetRemaining)
		s.Cost = t.last.CostSoFar + t.last.FleetCostPerH/60
	}
	s.BudgetPoints = 100 * s.BudgetSpent * PointsPerBudgetPercent
	s.ErrorPoints = s.Errors / ErrorsPerPoint
	s.ShedPoints = s.Shed / ShedPerPoint
	s.DegradedPoints = s.Degraded / DegradedPerPoint
	s.StalePoints = s.Stale / StalePerPoint
	s.MoneyPoints = s.Cost * PointsPerDollar
	s.Points = s.BudgetPoints + s.ErrorPoints + s.ShedPoints + s.DegradedPoints + s.StalePoints + s.MoneyPoints
	return s
}
