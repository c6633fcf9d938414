package sim

import (
	"math"

	"github.com/afloat/afloat/internal/queueing"
)

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
	// PointsPerFragileMinute is charged for each minute without N+1
	// headroom: a minute in which the fleet could not have lost one
	// serving instance without queueing past the client timeout
	// (Headroom). Nothing in the model ever fails, but instances do, and an
	// SRE sizes a fleet to survive the loss of one: six points an hour is
	// more than the whole opening fleet costs (4 $/h), so that giving up
	// the spare instance never pays.
	PointsPerFragileMinute = 0.1
)

// headroomTimeouts is the share of requests queueing past the client
// timeout, with one instance fewer, above which a minute has no N+1
// headroom: the SLO's error rate, 0.1 %.
const headroomTimeouts = errorBudget

// Headroom reports whether the minute had N+1 headroom: whether the same
// traffic (admitted requests, service time) on one serving instance fewer
// would have queued at most 0.1 % of the requests past the client timeout
// — the model's own M/M/N queue, with N − 16 workers. A minute without
// traffic always has it; a fleet of one instance, or none, serving traffic
// never does. It is a pure function of the frame.
func Headroom(f Frame) bool {
	if f.AdmittedPerS <= 0 {
		return true
	}
	if f.Serving <= 1 {
		return false
	}
	q := queueing.MMN{Lambda: f.AdmittedPerS, S: f.ServiceTimeMs / 1000, N: (f.Serving - 1) * workersPerInstance}
	if !q.Stable() {
		return false
	}
	// P(W > t) = C·e^(−(N/S − λ)·t) with C ≤ 1: when the exponential
	// alone is under the bound, Erlang C is not needed, and most minutes
	// are far from it.
	if drain := float64(q.N)/q.S - q.Lambda; drain*clientTimeout > -math.Log(headroomTimeouts) {
		return true
	}
	return q.WaitExceeds(q.ErlangC(), clientTimeout) <= headroomTimeouts
}

// Score is what a run cost: the points and where they came from, and the
// quantities they were charged for.
type Score struct {
	Points float64 `json:"points"` // the sum of the six below; fewer is better

	BudgetPoints   float64 `json:"budget_points"`
	ErrorPoints    float64 `json:"error_points"`
	ShedPoints     float64 `json:"shed_points"`
	DegradedPoints float64 `json:"degraded_points"`
	StalePoints    float64 `json:"stale_points"`
	MoneyPoints    float64 `json:"money_points"`
	FragilePoints  float64 `json:"fragile_points"`

	BudgetSpent float64 `json:"budget_spent"` // fraction of the month's budget, from 0 to the opening budget
	Errors      float64 `json:"errors"`       // failed and timed-out requests
	Shed        float64 `json:"shed"`         // requests refused at the load balancer
	Degraded    float64 `json:"degraded"`     // requests served without recommendations
	Stale       float64 `json:"stale"`        // cached answers older than the opening TTL
	Cost        float64 `json:"cost"`         // dollars
	Fragile     int     `json:"fragile"`      // minutes without N+1 headroom (Headroom)
	Minutes     int     `json:"minutes"`      // minutes graded: up to the one that lost the game, if it was lost

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
// minute. A run that fails (no budget left) is graded over the minutes
// played, up to and including the minute that lost the game: the frames
// after it are minutes nobody played. It is safe for concurrent use.
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
}

// NewTally starts the score of a run of the scenario.
func NewTally(sc Scenario) Tally {
	return Tally{budget: sc.Budget, fresh: sc.Controls.CacheTTL, s: Score{FailedMinute: -1}}
}

// Add counts the next minute of the run. Once the game is lost (the
// budget gone) the minutes after are not counted.
func (t *Tally) Add(f Frame) {
	if t.s.Failed {
		return
	}
	admitted := 60 * f.AdmittedPerS
	errs := admitted * f.ErrorRate
	served := admitted - errs
	t.s.Errors += errs
	t.s.Shed += 60 * (f.RequestsPerS - f.AdmittedPerS)
	t.s.Degraded += served * (1 - f.RecommendationsAvailable)
	t.s.Stale += served * f.CacheHit * staleShare(f.CacheTTL, t.fresh)
	if !Headroom(f) {
		t.s.Fragile++
	}
	if f.BudgetRemaining <= 0 && !t.s.Failed {
		t.s.Failed, t.s.FailedMinute = true, f.Minute
	}
	t.last = f
	t.s.Minutes++
}

// Score returns the score of the minutes added so far.
func (t *Tally) Score() Score {
	s := t.s
	if s.Minutes > 0 {
		// The budget is spent down to 0 % and no further: the month's
		// budget is all there is to lose.
		s.BudgetSpent = math.Max(0, t.budget-math.Max(0, t.last.BudgetRemaining))
		s.Cost = t.last.CostSoFar + t.last.FleetCostPerH/60
	}
	s.BudgetPoints = 100 * s.BudgetSpent * PointsPerBudgetPercent
	s.ErrorPoints = s.Errors / ErrorsPerPoint
	s.ShedPoints = s.Shed / ShedPerPoint
	s.DegradedPoints = s.Degraded / DegradedPerPoint
	s.StalePoints = s.Stale / StalePerPoint
	s.MoneyPoints = s.Cost * PointsPerDollar
	s.FragilePoints = float64(s.Fragile) * PointsPerFragileMinute
	s.Points = s.BudgetPoints + s.ErrorPoints + s.ShedPoints + s.DegradedPoints + s.StalePoints + s.MoneyPoints + s.FragilePoints
	return s
}
