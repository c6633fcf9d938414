package sim

import "math"

// Debrief sums up a run for the conversation after it: what the budget,
// the users and the bill went through, and what the player did when.
type Debrief struct {
	Minutes int    `json:"minutes"` // minutes summed up
	From    string `json:"from"`    // clock of the first minute
	To      string `json:"to"`      // clock of the last minute

	BudgetStart float64 `json:"budget_start"` // fraction of the month's budget
	BudgetLeft  float64 `json:"budget_left"`  // after the last minute, 0 at the least
	// Lost is set when the month's budget ran out: the game ended at the
	// minute it did, and the debrief sums up the minutes up to it only.
	Lost bool `json:"lost"`

	WorstBurn         float64 `json:"worst_burn"`        // highest one-minute burn rate
	WorstBurnMinute   int     `json:"worst_burn_minute"` // first minute it was reached
	WorstBurn1h       float64 `json:"worst_burn_1h"`
	WorstBurn1hMinute int     `json:"worst_burn_1h_minute"`

	MinutesOverSLO   int    `json:"minutes_over_slo"`    // error rate above 0.1 %
	MinutesP99Over1s int    `json:"minutes_p99_over_1s"` // p99 above 1 s
	PagedMinutes     int    `json:"paged_minutes"`
	Pages            []Span `json:"pages"` // when the page rule held

	TotalCost float64 `json:"total_cost"` // dollars, every minute summed up included

	CachedAnswers float64 `json:"cached_answers"` // requests answered from the cache
	MeanAgeS      float64 `json:"mean_age_s"`     // mean age of those answers, seconds

	ShedRequests float64 `json:"shed_requests"` // refused at the load balancer
	ShedShare    float64 `json:"shed_share"`    // of all requests that arrived

	MinutesWithoutRecommendations int `json:"minutes_without_recommendations"`
	BadBuildMinutes               int `json:"bad_build_minutes"` // minutes with any traffic on the bad build

	Timeline []Moment `json:"timeline"` // the player's actions and the page, in minute order
}

// Span is a stretch of minutes, first and last included.
type Span struct {
	From int `json:"from"`
	To   int `json:"to"`
}

// Moment is an entry of the debrief's timeline: an action of the player
// ("action"), or the page starting ("page") or stopping ("page_end"), with
// the state of the service: at that minute for the page's moments, and for
// an action what the dashboard showed when the player moved — the minute
// before the one it applies to — so that a move that brought the page on
// is not told as made "while paged".
type Moment struct {
	Minute        int     `json:"minute"`
	Clock         string  `json:"clock"`
	Kind          string  `json:"kind"`
	Action        *Action `json:"action,omitempty"`
	BadBuildShare float64 `json:"bad_build_share"`
	Paged         bool    `json:"paged"`
	Burn1h        float64 `json:"burn_1h"`
}

// sloErrorRate is the error rate above which a minute misses the SLO.
const sloErrorRate = errorBudget

// Summarize builds the debrief of the frames of a run and the actions that
// made it. Actions past the last frame have not happened yet and are left
// out. A run that lost the month's budget is summed up to the minute it
// did, as the score grades it (ScoreFrames): the game was over. It is
// safe for concurrent use: it reads only its arguments.
func Summarize(sc Scenario, frames []Frame, actions []Action) Debrief {
	for i, f := range frames {
		if f.BudgetRemaining <= 0 {
			frames = frames[:i+1]
			break
		}
	}
	d := Debrief{Minutes: len(frames), BudgetStart: sc.Budget, BudgetLeft: sc.Budget}
	if len(frames) == 0 {
		return d
	}
	d.From, d.To = frames[0].Clock, frames[len(frames)-1].Clock
	last := frames[len(frames)-1]
	d.BudgetLeft = math.Max(0, last.BudgetRemaining)
	d.Lost = last.BudgetRemaining <= 0
	d.TotalCost = last.CostSoFar + last.FleetCostPerH/60

	var requests, ageSum float64
	pageStart := -1
	for _, f := range frames {
		if f.Burn > d.WorstBurn {
			d.WorstBurn, d.WorstBurnMinute = f.Burn, f.Minute
		}
		if f.Burn1h > d.WorstBurn1h {
			d.WorstBurn1h, d.WorstBurn1hMinute = f.Burn1h, f.Minute
		}
		if f.ErrorRate > sloErrorRate {
			d.MinutesOverSLO++
		}
		if f.P99Ms > 1000 {
			d.MinutesP99Over1s++
		}
		if f.RecommendationsAvailable == 0 {
			d.MinutesWithoutRecommendations++
		}
		if f.BadBuildShare > 0 {
			d.BadBuildMinutes++
		}
		n := 60 * f.RequestsPerS
		requests += n
		d.ShedRequests += n * f.ShedShare
		hits := 60 * f.AdmittedPerS * f.CacheHit
		d.CachedAnswers += hits
		ageSum += hits * f.MeanAgeS

		switch {
		case f.Paged && pageStart < 0:
			pageStart = f.Minute
			d.Timeline = append(d.Timeline, moment(f, "page", nil))
		case !f.Paged && pageStart >= 0:
			d.Pages = append(d.Pages, Span{From: pageStart, To: f.Minute - 1})
			d.Timeline = append(d.Timeline, moment(f, "page_end", nil))
			pageStart = -1
		}
		if f.Paged {
			d.PagedMinutes++
		}
	}
	if pageStart >= 0 {
		d.Pages = append(d.Pages, Span{From: pageStart, To: last.Minute})
	}
	if requests > 0 {
		d.ShedShare = d.ShedRequests / requests
	}
	if d.CachedAnswers > 0 {
		d.MeanAgeS = ageSum / d.CachedAnswers
	}

	// The player's actions, merged into the page moments by minute; within a
	// minute the actions come first, since they were applied at its start.
	sorted := append([]Action(nil), actions...)
	sortActions(sorted)
	var timeline []Moment
	i := 0
	for _, a := range sorted {
		if a.Minute >= len(frames) || a.Minute < 0 {
			continue
		}
		for i < len(d.Timeline) && d.Timeline[i].Minute < a.Minute {
			timeline = append(timeline, d.Timeline[i])
			i++
		}
		a := a
		m := Moment{Minute: a.Minute, Clock: frames[a.Minute].Clock, Kind: "action", Action: &a}
		if a.Minute > 0 {
			seen := frames[a.Minute-1]
			m.BadBuildShare, m.Paged, m.Burn1h = seen.BadBuildShare, seen.Paged, seen.Burn1h
		}
		timeline = append(timeline, m)
	}
	d.Timeline = append(timeline, d.Timeline[i:]...)
	if d.Timeline == nil {
		d.Timeline = []Moment{}
	}
	if d.Pages == nil {
		d.Pages = []Span{}
	}
	return d
}

func moment(f Frame, kind string, a *Action) Moment {
	return Moment{Minute: f.Minute, Clock: f.Clock, Kind: kind, Action: a,
		BadBuildShare: f.BadBuildShare, Paged: f.Paged, Burn1h: f.Burn1h}
}
