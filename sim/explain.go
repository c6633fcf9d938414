package sim

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/afloat/afloat/internal/queueing"
)

// Formula is one relation of the model with a minute's numbers put in: the
// console's model page shows it beside its sources. Formula and Values are
// English; Key and Args let a page show them in another language: the
// relation is the template FormulaTexts()[Key].Relation, the values
// FormulaTexts()[Key].Values with each {name} replaced by Args[name].
type Formula struct {
	ID      string            `json:"id"`      // stable name, used as a message-catalogue key
	Key     string            `json:"key"`     // the variant's texts in FormulaTexts: ID, or ID.variant
	Formula string            `json:"formula"` // the relation, in symbols
	Values  string            `json:"values"`  // the same with the minute's numbers, and the result
	Args    map[string]string `json:"args"`    // the numbers, by placeholder
	Sources []int             `json:"sources"` // numbers in Sources()
}

// FormulaText is the English of one variant of a formula: the relation and
// the template of its worked values.
type FormulaText struct {
	Relation string `json:"relation"`
	Values   string `json:"values"`
}

// Source is a reference behind the model's formulas.
type Source struct {
	N    int    `json:"n"`
	Text string `json:"text"`
	URL  string `json:"url,omitempty"`
}

// Sources returns the references the formulas cite, numbered as in the
// specification, each with a link where one is stable.
func Sources() []Source {
	return []Source{
		{1, "Google SRE book: service level objectives and error budgets", "https://sre.google/sre-book/service-level-objectives/"},
		{2, "Google SRE workbook: alerting on SLOs (burn rates, multiwindow alerts)", "https://sre.google/workbook/alerting-on-slos/"},
		{3, "Erlang B/C and M/M/c queueing (Kleinrock, Queueing Systems vol. 1; Harchol-Balter)", "https://www.cs.cmu.edu/~harchol/PerformanceModeling/book.html"},
		{4, "Little's law (J. D. C. Little, 1961)", "https://doi.org/10.1287/opre.9.3.383"},
		{5, "TTL cache hit probability for Poisson requests, rT/(1 + rT) (Jung, Berger and Balakrishnan 2003; Fofack et al.)", "https://www.researchgate.net/publication/4020982_Modeling_TTL-based_Internet_caches"},
		{6, "Target-tracking autoscaling as cloud providers document it, and this model's illustrative calibration", "https://docs.aws.amazon.com/autoscaling/application/userguide/application-auto-scaling-target-tracking.html"},
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

// formulaTexts holds the English of every variant of every formula, by
// Key. The console's English catalogue carries the same texts (a test
// keeps them equal), and the Welsh and Tagalog ones translate them.
var formulaTexts = map[string]FormulaText{
	"arrivals":            {"λ = base × (1 + 0.25·sin(2π(t/60 + clock − 6)/24)) × surge", "λ = {base} × (1 + 0.25·sin(2π({t}/60 + {clock} − 6)/24)) × {surge} = {lambda} req/s"},
	"requests":            {"λ_obs = n/60, n ≈ N(60λ, √(60λ))·(1 + N(0, 0.02))", "λ_obs = {n}/60 = {observed} req/s"},
	"shedding":            {"λ_a = λ_obs·(1 − 0.3·s)", "λ_a = {observed} × (1 − 0.3 × {s}) = {admitted} req/s"},
	"cache_rate":          {"r·T = λ_a/20,000 × T", "r·T = {admitted}/20,000 × {ttl} = {rt}"},
	"cache_hit":           {"hit = warm × rT/(1 + rT)", "hit = {warm} × {rt}/(1 + {rt}) = {hit}"},
	"mean_age":            {"age ≈ T/2", "age ≈ {ttl}/2 = {age} s"},
	"db_load":             {"DB = λ_a·q·(1 − hit) (+ 600 while warming)", "DB = {admitted} × {q} × (1 − {hit}) = {db} queries/s"},
	"db_load.warmup":      {"DB = λ_a·q·(1 − hit) (+ 600 while warming)", "DB = {admitted} × {q} × (1 − {hit}) + 600 (warming) = {db} queries/s"},
	"db_utilization":      {"ρ_db = DB/4,000", "ρ_db = {db}/4,000 = {rho}"},
	"query_time":          {"query = 5 ms/(1 − ρ_db), at most 250 ms", "query = 5/(1 − {rho}) = {query} ms"},
	"query_time.capped":   {"query = 5 ms/(1 − ρ_db), at most 250 ms", "query = 250 ms (capped: ρ_db = {rho})"},
	"service_time":        {"S = S_app·(1 + 0.25·b) + (1 − hit)·q·query", "S = {app} × (1 + 0.25 × {b}) + (1 − {hit}) × {q} × {query} = {s} ms"},
	"offered_load":        {"N = serving × 16; a = λ_a·S", "N = {serving} × 16 = {n}; a = {admitted} × {s} = {a} Erlangs"},
	"utilization":         {"utilization = a/N (busy workers L = λ_a·S), at most 100 %", "utilization = {a}/{n} = {u}"},
	"erlang_c":            {"C = B/(1 − (a/N)(1 − B)), B = Erlang B(a, N)", "B = {b}; C = {b}/(1 − ({a}/{n})(1 − {b})) = {c}"},
	"erlang_c.idle":       {"C = B/(1 − (a/N)(1 − B)), B = Erlang B(a, N)", "no traffic: C = 0"},
	"erlang_c.no_server":  {"C = B/(1 − (a/N)(1 − B)), B = Erlang B(a, N)", "no instance serving: every admitted request fails"},
	"erlang_c.saturated":  {"C = B/(1 − (a/N)(1 − B)), B = Erlang B(a, N)", "a = {a} ≥ N = {n}: the fleet is saturated, C = 1"},
	"failed.no_server":    {"with no serving instance every admitted request fails", "failed = {failed}"},
	"failed.saturated":    {"a ≥ N ⇒ failed = 1 − N/a; p99 = the 2 s timeout", "failed = 1 − {n}/{a} = {failed}"},
	"timeouts":            {"timeouts = P(W > 2 s) = C·e^(−(N/S − λ_a)·2)", "timeouts = {c} × e^(−({n}/{s} − {admitted}) × 2) = {timeouts}"},
	"p99":                 {"p99 ≈ S·ln 100 + max(0, ln(C/0.01))/(N/S − λ_a), at most 2 s", "p99 ≈ {s} × {ln100} + max(0, ln({c}/0.01))/{drain} = {p99} ms"},
	"error_rate":          {"e = 1 − (1 − timeouts)(1 − failed)(1 − 0.05·b)", "e = 1 − (1 − {timeouts})(1 − {failed})(1 − 0.05 × {b}) = {e}"},
	"burn":                {"burn = e/0.1 %", "burn = {e}/0.001 = {burn}×"},
	"budget":              {"budget spent this minute = burn/43,200 of the month's budget", "spent = {burn}/43,200 = {spent}; left = {left}"},
	"burn_windows":        {"burn (1 h), burn (5 min) = mean e over the window/0.1 %", "burn (1 h) = {burn1h}×; burn (5 min) = {burn5m}×"},
	"page":                {"page when burn (1 h) ≥ 14.4 and burn (5 min) ≥ 14.4", "{burn1h} ≥ 14.4 and {burn5m} ≥ 14.4: no page"},
	"page.fires":          {"page when burn (1 h) ≥ 14.4 and burn (5 min) ≥ 14.4", "{burn1h} ≥ 14.4 and {burn5m} ≥ 14.4: PAGE"},
	"fleet_cost":          {"cost = (serving + booting) × $0.40/h, twice during a rollback", "cost = ({serving} + {booting}) × 0.40 = {cost} $/h"},
	"fleet_cost.rollback": {"cost = (serving + booting) × $0.40/h, twice during a rollback", "cost = ({serving} + {booting}) × 0.40 × 2 (rollback) = {cost} $/h"},
	"autoscaler":          {"desired = ⌈serving × utilization/target⌉, between the floor and 40", "desired = ⌈{serving} × {u}/{target}⌉ = {raw} → {desired} (floor {floor})"},
	"autoscaler.off":      {"autoscaling off: the fleet is exactly the floor", "fleet = floor = {floor}"},
	"refill":              {"warm' = warm + (1 − warm)(1 − e^(−1/30))·min(1, 1/ρ_db) (+ 0.12 while warming)", "warm' = {warm} + (1 − {warm}) × {step} × {speed} = {next}"},
	"refill.warmup":       {"warm' = warm + (1 − warm)(1 − e^(−1/30))·min(1, 1/ρ_db) (+ 0.12 while warming)", "warm' = {warm} + (1 − {warm}) × {step} × {speed} + 0.12 = {next}"},
}

// FormulaTexts returns the English of every variant of every formula, by
// Key, for message catalogues. The map is a fresh copy each call.
func FormulaTexts() map[string]FormulaText {
	out := make(map[string]FormulaText, len(formulaTexts))
	for k, v := range formulaTexts {
		out[k] = v
	}
	return out
}

// fill replaces each {name} of a template with args[name].
func fill(template string, args map[string]string) string {
	var b strings.Builder
	for {
		i := strings.IndexByte(template, '{')
		j := strings.IndexByte(template[i+1:], '}')
		if i < 0 || j < 0 {
			b.WriteString(template)
			return b.String()
		}
		b.WriteString(template[:i])
		name := template[i+1 : i+1+j]
		if v, ok := args[name]; ok {
			b.WriteString(v)
		} else {
			b.WriteString(template[i : i+2+j])
		}
		template = template[i+2+j:]
	}
}

// Explain returns the model's formulas for one frame of a run of the
// scenario, with that minute's numbers substituted, in the order the
// minute is computed. Every number comes from the frame, the scenario and
// the model's constants; it is safe for concurrent use.
func Explain(sc Scenario, f Frame) []Formula {
	var out []Formula
	add := func(id, key string, sources []int, pairs ...string) {
		args := map[string]string{}
		for i := 0; i+1 < len(pairs); i += 2 {
			args[pairs[i]] = pairs[i+1]
		}
		text := formulaTexts[key]
		out = append(out, Formula{ID: id, Key: key, Formula: text.Relation, Values: fill(text.Values, args), Args: args, Sources: sources})
	}
	clock := float64(sc.Start) / 60
	t := float64(f.Minute)
	daily := 1 + dailySwing*math.Sin(2*math.Pi*(t/60+clock-(peakHour-6))/24)
	surge := 1.0
	if base := sc.BaseRate * daily; base > 0 {
		surge = f.DemandPerS / base
	}
	add("arrivals", "arrivals", []int{6},
		"base", num(sc.BaseRate), "t", strconv.Itoa(f.Minute), "clock", num(clock), "surge", num(surge), "lambda", num(f.DemandPerS))
	add("requests", "requests", []int{6}, "n", num(60*f.RequestsPerS), "observed", num(f.RequestsPerS))
	add("shedding", "shedding", []int{6}, "observed", num(f.RequestsPerS), "s", num(f.ShedLowPriority), "admitted", num(f.AdmittedPerS))

	rT := f.AdmittedPerS / hotObjects * f.CacheTTL
	add("cache_rate", "cache_rate", []int{5}, "admitted", num(f.AdmittedPerS), "ttl", num(f.CacheTTL), "rt", num(rT))
	add("cache_hit", "cache_hit", []int{5}, "warm", fmt.Sprintf("%.2f", f.CacheWarm), "rt", num(rT), "hit", num(f.CacheHit))
	add("mean_age", "mean_age", []int{5}, "ttl", num(f.CacheTTL), "age", num(f.MeanAgeS))

	q := float64(queries)
	app := appTime
	if f.HeavyFeature {
		q += heavyQueries
		app += heavyAppTime
	}
	dbKey := "db_load"
	if f.WarmupLeft > 0 {
		dbKey = "db_load.warmup"
	}
	// With no instance serving no request reaches the database (sim.go):
	// the worked values say so with 0 requests querying.
	querying := f.AdmittedPerS
	if f.Serving == 0 {
		querying = 0
	}
	add("db_load", dbKey, []int{6}, "admitted", num(querying), "q", num(q), "hit", num(f.CacheHit), "db", num(f.DBQueriesPerS))
	rho := f.DBQueriesPerS / dbCapacity
	add("db_utilization", "db_utilization", []int{6}, "db", num(f.DBQueriesPerS), "rho", num(rho))
	if rho < 1 && f.QueryTimeMs < 1000*queryTimeCap {
		add("query_time", "query_time", []int{3, 6}, "rho", num(rho), "query", num(f.QueryTimeMs))
	} else {
		add("query_time", "query_time.capped", []int{3, 6}, "rho", num(rho))
	}
	add("service_time", "service_time", []int{6},
		"app", num(1000*app), "b", num(f.BadBuildShare), "hit", num(f.CacheHit), "q", num(q), "query", num(f.QueryTimeMs), "s", num(f.ServiceTimeMs))

	n := f.Serving * workersPerInstance
	s := f.ServiceTimeMs / 1000
	add("offered_load", "offered_load", []int{3, 4},
		"serving", strconv.Itoa(f.Serving), "n", strconv.Itoa(n), "admitted", num(f.AdmittedPerS), "s", num(s), "a", num(f.OfferedLoad))
	add("utilization", "utilization", []int{4}, "a", num(f.OfferedLoad), "n", strconv.Itoa(n), "u", num(f.Utilization))

	drain := float64(n)/s - f.AdmittedPerS
	switch {
	case f.AdmittedPerS == 0:
		add("erlang_c", "erlang_c.idle", []int{3})
	case n == 0:
		add("erlang_c", "erlang_c.no_server", []int{3})
		add("failed", "failed.no_server", []int{3}, "failed", num(f.FailedShare))
	case f.OfferedLoad >= float64(n):
		add("erlang_c", "erlang_c.saturated", []int{3}, "a", num(f.OfferedLoad), "n", strconv.Itoa(n))
		add("failed", "failed.saturated", []int{3}, "n", strconv.Itoa(n), "a", num(f.OfferedLoad), "failed", num(f.FailedShare))
	default:
		b := queueing.ErlangB(f.OfferedLoad, n)
		add("erlang_c", "erlang_c", []int{3}, "b", num(b), "a", num(f.OfferedLoad), "n", strconv.Itoa(n), "c", num(f.WaitShare))
		add("timeouts", "timeouts", []int{3},
			"c", num(f.WaitShare), "n", strconv.Itoa(n), "s", num(s), "admitted", num(f.AdmittedPerS), "timeouts", num(f.TimeoutShare))
		add("p99", "p99", []int{3, 6},
			"s", num(f.ServiceTimeMs), "ln100", num(math.Log(100)), "c", num(f.WaitShare), "drain", num(drain), "p99", num(f.P99Ms))
	}

	add("error_rate", "error_rate", []int{1},
		"timeouts", num(f.TimeoutShare), "failed", num(f.FailedShare), "b", num(f.BadBuildShare), "e", num(f.ErrorRate))
	add("burn", "burn", []int{1, 2}, "e", num(f.ErrorRate), "burn", num(f.Burn))
	add("budget", "budget", []int{1}, "burn", num(f.Burn), "spent", num(f.Burn/monthMinutes), "left", num(f.BudgetRemaining))
	add("burn_windows", "burn_windows", []int{2}, "burn1h", num(f.Burn1h), "burn5m", num(f.Burn5m))
	pageKey := "page"
	if f.Paged {
		pageKey = "page.fires"
	}
	add("page", pageKey, []int{2}, "burn1h", num(f.Burn1h), "burn5m", num(f.Burn5m))

	costKey := "fleet_cost"
	if f.RollbackLeft > 0 {
		costKey = "fleet_cost.rollback"
	}
	add("fleet_cost", costKey, []int{6},
		"serving", strconv.Itoa(f.Serving), "booting", strconv.Itoa(f.Booting), "cost", fmt.Sprintf("%.2f", f.FleetCostPerH))

	if f.Autoscaling {
		raw := math.Ceil(float64(f.Serving)*f.Utilization/f.TargetUtilization - autoscaleSlack)
		if f.Serving == 0 && f.AdmittedPerS > 0 {
			raw = 1
		}
		desired := max(float64(f.FleetFloor), min(MaxFleet, raw))
		add("autoscaler", "autoscaler", []int{6}, "serving", strconv.Itoa(f.Serving), "u", num(f.Utilization),
			"target", num(f.TargetUtilization), "raw", num(raw), "desired", num(desired), "floor", strconv.Itoa(f.FleetFloor))
	} else {
		add("autoscaler", "autoscaler.off", []int{6}, "floor", strconv.Itoa(f.FleetFloor))
	}

	speed := 1.0
	if rho > 1 {
		speed = 1 / rho
	}
	next := f.CacheWarm + (1-f.CacheWarm)*refillStep*speed
	refillKey := "refill"
	if f.WarmupLeft > 0 {
		next += warmupStep
		refillKey = "refill.warmup"
	}
	add("refill", refillKey, []int{6}, "warm", fmt.Sprintf("%.3f", f.CacheWarm), "step", num(refillStep), "speed", num(speed),
		"next", fmt.Sprintf("%.3f", math.Min(1, next)))
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
