package sim

// Controls is the position of the player's levers. The buttons (warm-up,
// rollback) are not positions and show in a Frame as minutes left.
type Controls struct {
	FleetFloor        int     `json:"fleet_floor"`
	Autoscaling       bool    `json:"autoscaling"`
	TargetUtilization float64 `json:"target_utilization"`
	CacheTTL          float64 `json:"cache_ttl_s"`
	ShedLowPriority   float64 `json:"shed_low_priority"`
	HeavyFeature      bool    `json:"heavy_feature"`
}

// With returns the controls with a applied: the lever's new position. A
// button (warm-up, rollback) moves no lever. It is the one place that
// says which field each control sets: the model applies actions through
// it, and the coach reads a lever's position before a move with it.
func (c Controls) With(a Action) Controls {
	switch a.Control {
	case ControlFleetFloor:
		c.FleetFloor = int(a.Value)
	case ControlAutoscaling:
		c.Autoscaling = a.Bool()
	case ControlTargetUtilization:
		c.TargetUtilization = a.Value
	case ControlCacheTTL:
		c.CacheTTL = a.Value
	case ControlShedLowPriority:
		c.ShedLowPriority = a.Value
	case ControlHeavyFeature:
		c.HeavyFeature = a.Bool()
	}
	return c
}

// Frame is what one simulated minute looked like: that minute's traffic and
// queueing figures, the fleet that served it, the budget after it, and the
// cost so far before it (so minute 0 shows $0.00). Shares and utilizations
// are fractions in [0, 1]; money is in dollars; times in milliseconds
// unless the name says otherwise.
type Frame struct {
	Minute int    `json:"minute"`
	Clock  string `json:"clock"` // time of day, HH:MM

	DemandPerS   float64 `json:"demand_per_s"`   // λ(t): the daily curve and any surge, before noise
	RequestsPerS float64 `json:"requests_per_s"` // observed arrivals
	AdmittedPerS float64 `json:"admitted_per_s"` // after shedding
	ShedShare    float64 `json:"shed_share"`     // share of requests shed

	Serving int `json:"serving"`
	Booting int `json:"booting"`

	CacheHit  float64 `json:"cache_hit"`
	CacheWarm float64 `json:"cache_warm"` // warm fraction at the start of the minute
	MeanAgeS  float64 `json:"mean_age_s"` // mean age of a cached answer, seconds

	DBQueriesPerS float64 `json:"db_queries_per_s"` // offered, warm-up included
	DBUtilization float64 `json:"db_utilization"`   // capped at 1
	QueryTimeMs   float64 `json:"query_time_ms"`

	ServiceTimeMs float64 `json:"service_time_ms"`
	OfferedLoad   float64 `json:"offered_load"`     // a = λ_a·S, in Erlangs (busy workers wanted)
	WaitShare     float64 `json:"wait_probability"` // Erlang C: share of requests that queue; 1 when saturated
	Utilization   float64 `json:"utilization"`      // of the serving workers, capped at 1
	P99Ms         float64 `json:"p99_ms"`           // capped at the client timeout
	TimeoutShare  float64 `json:"timeout_share"`
	FailedShare   float64 `json:"failed_share"`
	ErrorRate     float64 `json:"error_rate"` // of admitted requests

	Burn            float64 `json:"burn"`             // this minute's error rate / budget rate
	Burn5m          float64 `json:"burn_5m"`          // over the last 5 minutes
	Burn1h          float64 `json:"burn_1h"`          // over the last 60 minutes
	BudgetRemaining float64 `json:"budget_remaining"` // fraction of the month's budget, after this minute
	Paged           bool    `json:"paged"`            // the fast-burn page rule holds this minute

	FleetCostPerH float64 `json:"fleet_cost_per_h"` // rollback's second fleet included
	CostSoFar     float64 `json:"cost_so_far"`      // before this minute

	BadBuildShare            float64 `json:"bad_build_share"`
	Deploy                   bool    `json:"deploy,omitempty"`          // a deploy went out at the start of this minute: the dashboards' marker
	RecommendationsAvailable float64 `json:"recommendations_available"` // 1 with the heavy feature on

	WarmupLeft   int `json:"warmup_minutes_left"`   // minutes of warm-up still to run, this one included
	RollbackLeft int `json:"rollback_minutes_left"` // minutes of rollback preparation, this one included

	Controls
}
