package sim

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/afloat/afloat/internal/queueing"
)

// Formula is one relation of the model with a minute's numbers put in: the
// console's model page shows it beside its sources.
type Formula struct {
	ID      string `json:"id"`      // stable name, used as a message-catalogue key
	Formula string `json:"formula"` // the relation, in symbols
	Values  string `json:"values"`  // the same with the minute's numbers, and the result
	Sources []int  `json:"sources"` // numbers in Sources()
}

// Source is a reference behind the model's formulas.
type Source struct {
	N    int    `json:"n"`
	Text string `json:"text"`
}

// Sources returns the references the formulas cite, numbered as in the
// specification.
func Sources() []Source {
	return []Source{
		{1, "Google SRE book: service level objectives and error budgets"},
		{2, "Google SRE workbook: alerting on SLOs (burn rates, multiwindow alerts)"},
		{3, "Erlang B/C and M/M/c queueing (Kleinrock, Queueing Systems vol. 1; Harchol-Balter)"},
		{4, "Little's law (J. D. C. Little, 1961)"},
		{5, "TTL cache hit probability for Poisson requests, rT/(1 + rT) (Jung, Berger and Balakrishnan 2003; Fofack et al.)"},
		{6, "Target-tracking autoscaling as cloud providers document it, and this model's illustrative calibration"},
	}
}

// num formats a number with four significant digits (whole numbers from
// 1,000 up) and no exponent in the range the model's figures live in.
func num(v float64) string {
	switch a := math.Abs(v); {
	case v == 0:
		return "0"
	case a >= 1e9 || a < 1e-3:
		return strconv.FormatFloat(v, 'g', 3, 64)
	case a >= 1000:
		return strconv.FormatFloat(v, 'f', 0, 64)
	default:
		return strconv.FormatFloat(v, 'g', 4, 64)
	}
}

// Explain returns the model's formulas for one frame of a run of the
// scenario, with that minute's numbers substituted, in the order the
// minute is computed. Every number comes from the frame, the scenario and
// the model's constants; it is safe for concurrent use.
func Explain(sc Scenario, f Frame) []Formula {
	var out []Formula
	add := func(id, formula string, sources []int, format string, args ...any) {
		out = append(out, Formula{ID: id, Formula: formula, Values: fmt.Sprintf(format, args...), Sources: sources})
	}
	clock := float64(sc.Start) / 60
	t := float64(f.Minute)
	daily := 1 + dailySwing*math.Sin(2*math.Pi*(t/60+clock-(peakHour-6))/24)
	surge := 1.0
	if base := sc.BaseRate * daily; base > 0 {
		surge = f.DemandPerS / base
	}
	add("arrivals", "λ = base × (1 + 0.25·sin(2π(t/60 + clock − 6)/24)) × surge", []int{6},
		"λ = %s × (1 + 0.25·sin(2π(%d/60 + %s − 6)/24)) × %s = %s req/s",
		num(sc.BaseRate), f.Minute, num(clock), num(surge), num(f.DemandPerS))
	add("requests", "λ_obs = n/60, n ≈ N(60λ, √(60λ))·(1 + N(0, 0.02))", []int{6},
		"λ_obs = %s/60 = %s req/s", num(60*f.RequestsPerS), num(f.RequestsPerS))
	add("shedding", "λ_a = λ_obs·(1 − 0.3·s)", []int{6},
		"λ_a = %s × (1 − 0.3 × %s) = %s req/s", num(f.RequestsPerS), num(f.ShedLowPriority), num(f.AdmittedPerS))

	rT := f.AdmittedPerS / hotObjects * f.CacheTTL
	add("cache_rate", "r·T = λ_a/20,000 × T", []int{5},
		"r·T = %s/20,000 × %s = %s", num(f.AdmittedPerS), num(f.CacheTTL), num(rT))
	add("cache_hit", "hit = warm × rT/(1 + rT)", []int{5},
		"hit = %.2f × %s/(1 + %s) = %s", f.CacheWarm, num(rT), num(rT), num(f.CacheHit))
	add("mean_age", "age ≈ T/2", []int{5}, "age ≈ %s/2 = %s s", num(f.CacheTTL), num(f.MeanAgeS))

	q := float64(queries)
	app := appTime
	if f.HeavyFeature {
		q += heavyQueries
		app += heavyAppTime
	}
	warmup := ""
	if f.WarmupLeft > 0 {
		warmup = " + 600"
	}
	add("db_load", "DB = λ_a·q·(1 − hit) (+ 600 while warming)", []int{6},
		"DB = %s × %s × (1 − %s)%s = %s queries/s", num(f.AdmittedPerS), num(q), num(f.CacheHit), warmup, num(f.DBQueriesPerS))
	rho := f.DBQueriesPerS / dbCapacity
	add("db_utilization", "ρ_db = DB/4,000", []int{6}, "ρ_db = %s/4,000 = %s", num(f.DBQueriesPerS), num(rho))
	if rho < 1 && f.QueryTimeMs < 1000*queryTimeCap {
		add("query_time", "query = 5 ms/(1 − ρ_db), at most 250 ms", []int{3, 6},
			"query = 5/(1 − %s) = %s ms", num(rho), num(f.QueryTimeMs))
	} else {
		add("query_time", "query = 5 ms/(1 − ρ_db), at most 250 ms", []int{3, 6},
			"query = 250 ms (capped: ρ_db = %s)", num(rho))
	}
	add("service_time", "S = S_app·(1 + 0.25·b) + (1 − hit)·q·query", []int{6},
		"S = %s × (1 + 0.25 × %s) + (1 − %s) × %s × %s = %s ms",
		num(1000*app), num(f.BadBuildShare), num(f.CacheHit), num(q), num(f.QueryTimeMs), num(f.ServiceTimeMs))

	n := f.Serving * workersPerInstance
	s := f.ServiceTimeMs / 1000
	add("offered_load", "N = serving × 16; a = λ_a·S", []int{3, 4},
		"N = %d × 16 = %d; a = %s × %s = %s Erlangs", f.Serving, n, num(f.AdmittedPerS), num(s), num(f.OfferedLoad))
	add("utilization", "utilization = a/N (busy workers L = λ_a·S), at most 100 %", []int{4},
		"utilization = %s/%d = %s", num(f.OfferedLoad), n, num(f.Utilization))

	drain := float64(n)/s - f.AdmittedPerS
	switch {
	case f.AdmittedPerS == 0:
		add("erlang_c", "C = B/(1 − (a/N)(1 − B)), B = Erlang B(a, N)", []int{3}, "no traffic: C = 0")
	case n == 0:
		add("erlang_c", "C = B/(1 − (a/N)(1 − B)), B = Erlang B(a, N)", []int{3}, "no instance serving: every admitted request fails")
		add("failed", "with no serving instance every admitted request fails", []int{3}, "failed = %s", num(f.FailedShare))
	case f.OfferedLoad >= float64(n):
		add("erlang_c", "C = B/(1 − (a/N)(1 − B)), B = Erlang B(a, N)", []int{3},
			"a = %s ≥ N = %d: the fleet is saturated, C = 1", num(f.OfferedLoad), n)
		add("failed", "a ≥ N ⇒ failed = 1 − N/a; p99 = the 2 s timeout", []int{3},
			"failed = 1 − %d/%s = %s", n, num(f.OfferedLoad), num(f.FailedShare))
	default:
		b := queueing.ErlangB(f.OfferedLoad, n)
		add("erlang_c", "C = B/(1 − (a/N)(1 − B)), B = Erlang B(a, N)", []int{3},
			"B = %s; C = %s/(1 − (%s/%d)(1 − %s)) = %s", num(b), num(b), num(f.OfferedLoad), n, num(b), num(f.WaitShare))
		add("timeouts", "timeouts = P(W > 2 s) = C·e^(−(N/S − λ_a)·2)", []int{3},
			"timeouts = %s × e^(−(%d/%s − %s) × 2) = %s", num(f.WaitShare), n, num(s), num(f.AdmittedPerS), num(f.TimeoutShare))
		add("p99", "p99 ≈ S·ln 100 + max(0, ln(C/0.01))/(N/S − λ_a), at most 2 s", []int{3, 6},
			"p99 ≈ %s × %s + max(0, ln(%s/0.01))/%s = %s ms",
			num(f.ServiceTimeMs), num(math.Log(100)), num(f.WaitShare), num(drain), num(f.P99Ms))
	}

	add("error_rate", "e = 1 − (1 − timeouts)(1 − failed)(1 − 0.05·b)", []int{1},
		"e = 1 − (1 − %s)(1 − %s)(1 − 0.05 × %s) = %s",
		num(f.TimeoutShare), num(f.FailedShare), num(f.BadBuildShare), num(f.ErrorRate))
	add("burn", "burn = e/0.1 %", []int{1, 2}, "burn = %s/0.001 = %s×", num(f.ErrorRate), num(f.Burn))
	add("budget", "budget spent this minute = burn/43,200 of the month's budget", []int{1},
		"spent = %s/43,200 = %s; left = %s", num(f.Burn), num(f.Burn/monthMinutes), num(f.BudgetRemaining))
	add("burn_windows", "burn (1 h), burn (5 min) = mean e over the window/0.1 %", []int{2},
		"burn (1 h) = %s×; burn (5 min) = %s×", num(f.Burn1h), num(f.Burn5m))
	verdict := "no page"
	if f.Paged {
		verdict = "PAGE"
	}
	add("page", "page when burn (1 h) ≥ 14.4 and burn (5 min) ≥ 14.4", []int{2},
		"%s ≥ 14.4 and %s ≥ 14.4: %s", num(f.Burn1h), num(f.Burn5m), verdict)

	double := ""
	if f.RollbackLeft > 0 {
		double = " × 2 (rollback)"
	}
	add("fleet_cost", "cost = (serving + booting) × $0.40/h, twice during a rollback", []int{6},
		"cost = (%d + %d) × 0.40%s = %.2f $/h", f.Serving, f.Booting, double, f.FleetCostPerH)

	if f.Autoscaling {
		raw := math.Ceil(float64(f.Serving)*f.Utilization/f.TargetUtilization - autoscaleSlack)
		if f.Serving == 0 && f.AdmittedPerS > 0 {
			raw = 1
		}
		desired := max(float64(f.FleetFloor), min(MaxFleet, raw))
		add("autoscaler", "desired = ⌈serving × utilization/target⌉, between the floor and 40", []int{6},
			"desired = ⌈%d × %s/%s⌉ = %s → %s (floor %d)", f.Serving, num(f.Utilization), num(f.TargetUtilization), num(raw), num(desired), f.FleetFloor)
	} else {
		add("autoscaler", "autoscaling off: the fleet is exactly the floor", []int{6}, "fleet = floor = %d", f.FleetFloor)
	}

	speed := 1.0
	if rho > 1 {
		speed = 1 / rho
	}
	next := f.CacheWarm + (1-f.CacheWarm)*refillStep*speed
	extra := ""
	if f.WarmupLeft > 0 {
		next += warmupStep
		extra = " + 0.12"
	}
	add("refill", "warm' = warm + (1 − warm)(1 − e^(−1/30))·min(1, 1/ρ_db) (+ 0.12 while warming)", []int{6},
		"warm' = %.3f + (1 − %.3f) × %s × %s%s = %.3f",
		f.CacheWarm, f.CacheWarm, num(refillStep), num(speed), extra, math.Min(1, next))
	return out
}

// Constant is one calibration constant of the model, for display.
type Constant struct {
	ID    string  `json:"id"`
	Value float64 `json:"value"`
	Unit  string  `json:"unit"`
}

// Constants returns the model's calibration, as docs/model.md lists it.
func Constants() []Constant {
	return []Constant{
		{"workers_per_instance", workersPerInstance, ""},
		{"app_time", 1000 * appTime, "ms"},
		{"heavy_app_time", 1000 * heavyAppTime, "ms"},
		{"queries", queries, ""},
		{"heavy_queries", heavyQueries, ""},
		{"db_capacity", dbCapacity, "queries/s"},
		{"hot_objects", hotObjects, ""},
		{"base_query_time", 1000 * baseQueryTime, "ms"},
		{"query_time_cap", 1000 * queryTimeCap, "ms"},
		{"refill_minutes", refillMinutes, "min"},
		{"warmup_step", 100 * warmupStep, "%"},
		{"warmup_minutes", warmupMinutes, "min"},
		{"warmup_queries", warmupQueries, "queries/s"},
		{"client_timeout", clientTimeout, "s"},
		{"low_priority", 100 * lowPriority, "%"},
		{"bad_build_errors", 100 * badBuildErrors, "%"},
		{"bad_build_cpu", 1 + badBuildCPU, "×"},
		{"rollback_minutes", rollbackMinutes, "min"},
		{"price_per_hour", pricePerHour, "$/h"},
		{"scale_in_quiet", scaleInQuiet, "min"},
		{"scale_in_fraction", 100 * scaleInFraction, "%"},
		{"max_fleet", MaxFleet, ""},
		{"slo", 100 * (1 - errorBudget), "%"},
		{"page_burn", pageBurn, "×"},
	}
}

// FormulaIDs lists every Formula.ID Explain can return, for catalogues.
func FormulaIDs() []string {
	return strings.Fields(`arrivals requests shedding cache_rate cache_hit mean_age db_load
		db_utilization query_time service_time offered_load utilization erlang_c failed timeouts
		p99 error_rate burn budget burn_windows page fleet_cost autoscaler refill`)
}
