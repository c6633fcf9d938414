package drill

import (
	"math"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/afloat/afloat/internal/queueing"
	"github.com/afloat/afloat/sim"
)

// The status codes the simulated service answers with, as
// http_requests_total labels them: 200 served; 429 shed at the load
// balancer ("try again later", not an error of the SLO: the model counts
// errors of admitted requests); 500 failed by a bad build; 503 failed for
// want of capacity (a saturated fleet, or none); 504 queued past the
// client's timeout.
var codes = [...]string{"200", "429", "500", "503", "504"}

const (
	code200 = iota
	code429
	code500
	code503
	code504
)

// latencyBuckets are the latency histogram's upper bounds, in seconds:
// a request takes 50–90 ms of work, a p99 of a few hundred milliseconds
// is normal, and the client gives up at 2 s (sim's client_timeout), the
// last bound.
var latencyBuckets = [...]float64{.025, .05, .075, .1, .15, .2, .25, .3, .4, .5, .75, 1, 1.5, 2}

// counters are the values of the drill's counters, or their growth a wall
// second during a simulated minute.
type counters struct {
	requests     [len(codes)]float64
	hits, misses float64
	queries      float64
	latency      [len(latencyBuckets)]float64 // cumulative: requests at most the bound
	latCount     float64
	latSum       float64 // seconds
}

// add adds r·k to c.
func (c *counters) add(r counters, k float64) {
	for i := range c.requests {
		c.requests[i] += r.requests[i] * k
	}
	for i := range c.latency {
		c.latency[i] += r.latency[i] * k
	}
	c.hits += r.hits * k
	c.misses += r.misses * k
	c.queries += r.queries * k
	c.latCount += r.latCount * k
	c.latSum += r.latSum * k
}

// constant returns one of the model's constants by its name in
// sim.Constants.
func constant(name string) float64 {
	for _, c := range sim.Constants() {
		if c.ID == name {
			return c.Value
		}
	}
	panic("drill: the model has no constant " + name) // TestConstantsExist
}

var (
	clientTimeout      = constant("client_timeout") // seconds
	workersPerInstance = int(constant("workers_per_instance"))
	dbCapacity         = constant("db_capacity") // queries a second
)

// ratesOf returns how fast each counter grows during a minute, per second
// of wall time: the model's own per-second figures for that minute. A
// counter so grows at the model's rate whatever the drill's speed, and
// rate() over any wall window gives the model's requests a second back;
// increase() over it gives the model's count scaled by the speed (a
// simulated minute's requests ×5/60 at 5 s a minute).
func ratesOf(f sim.Frame) counters {
	var r counters
	admitted := f.AdmittedPerS
	errs := admitted * f.ErrorRate
	// ErrorRate = 1 − (1−failed)(1−timeouts)(1−bad build's): the three
	// causes in that order, so that their shares add up to it.
	r.requests[code200] = admitted - errs
	r.requests[code429] = math.Max(0, f.RequestsPerS-admitted)
	r.requests[code503] = admitted * f.FailedShare
	r.requests[code504] = admitted * (1 - f.FailedShare) * f.TimeoutShare
	r.requests[code500] = math.Max(0, errs-r.requests[code503]-r.requests[code504])
	r.hits = admitted * f.CacheHit
	r.misses = admitted - r.hits
	r.queries = f.DBQueriesPerS

	// Every admitted request is observed: a served one by the model's
	// response-time distribution (queueing.MMN.ResponseExceeds, the
	// inverse of the quantile its p99 comes from), cut at the client's
	// timeout, where the timed-out and failed ones are observed.
	q := queueing.MMN{Lambda: admitted, S: f.ServiceTimeMs / 1000, N: f.Serving * workersPerInstance}
	c := f.WaitShare
	over := func(t float64) float64 {
		if q.N == 0 || t >= clientTimeout {
			return 0
		}
		return q.ResponseExceeds(c, t)
	}
	for i, b := range latencyBuckets {
		r.latency[i] = admitted * clampUnit(1-over(b))
	}
	r.latCount = admitted
	// E[min(R, timeout)] = ∫₀^timeout P(R > t) dt, by the midpoint rule:
	// a 400th of the timeout is 5 ms, under the first bucket.
	const steps = 400
	h := clientTimeout / steps
	var mean float64
	for i := range steps {
		mean += over((float64(i) + 0.5) * h)
	}
	r.latSum = admitted * mean * h
	return r
}

// sample is what /metrics shows at an instant: the counters, the gauges
// of the minute under way, and that minute.
type sample struct {
	c       counters
	f       sim.Frame
	version string
	minute  int
	ended   bool
}

// sampleAt returns the metrics at now: each counter at its value at the
// start of the minute under way, plus its growth since at that minute's
// rate; after the end, the counters stand still.
func (d *Drill) sampleAt(now time.Time) sample {
	d.advance(now)
	m, ended := d.MinuteAt(now)
	if ended {
		last := d.length - 1
		return sample{c: d.cum[d.length], f: d.frames[last], version: d.version, minute: d.length, ended: true}
	}
	c := d.cum[m]
	if el := now.Sub(d.minuteStart(m)); el > 0 {
		c.add(d.rates[m], el.Seconds())
	}
	return sample{c: c, f: d.frames[m], version: d.versions[m], minute: m}
}

// collector exposes a drill's sample at scrape time. The names and types
// are those a web service behind a load balancer exports (docs/drill.md,
// "Metrics"); the drill's own are drill_….
type collector struct {
	sample func() sample
	info   prometheus.Labels

	requests, latency, instances, hits, misses, queries         *prometheus.Desc
	dbUtil, dbConns, burn, budget, build, cost, minute, drillOn *prometheus.Desc
}

func newCollector(sample func() sample, scenario string, speed time.Duration) *collector {
	d := prometheus.NewDesc
	return &collector{
		sample:    sample,
		requests:  d("http_requests_total", "HTTP requests the service answered, by status code: 200 served, 429 shed at the load balancer, 500 failed by the build, 503 no capacity, 504 past the client's timeout.", []string{"code"}, nil),
		latency:   d("http_request_duration_seconds", "Time to answer an admitted request (shed ones are not observed), up to the client's 2 s timeout, where requests that timed out or failed are counted.", nil, nil),
		instances: d("fleet_instances", "Instances of the fleet, by state: serving, or booting (billed, not serving yet).", []string{"state"}, nil),
		hits:      d("cache_hits_total", "Requests answered from the cache.", nil, nil),
		misses:    d("cache_misses_total", "Requests the cache could not answer (they query the database).", nil, nil),
		queries:   d("db_queries_total", "Queries offered to the database, the cache warm-up's included.", nil, nil),
		dbUtil:    d("db_utilization_ratio", "Share of the database's capacity in use, 0 to 1 (1: saturated; queries queue and slow down).", nil, nil),
		dbConns:   d("db_connections_active", "Database connections busy on a query (Little's law: queries served a second × query time).", nil, nil),
		burn:      d("slo_error_budget_burn_rate", "How fast the 99.9 % objective's error budget burns (1: it would last the month), over the window: 1m, 5m or 1h of simulated time, as the service's own dashboard computes it.", []string{"window"}, nil),
		budget:    d("slo_error_budget_remaining_ratio", "Share of the month's error budget left.", nil, nil),
		build:     d("build_info", "1, labelled with the version of the build deployed last: it changes with each deploy, and back with a rollback.", []string{"version"}, nil),
		cost:      d("fleet_cost_dollars_per_hour", "What the fleet costs now, a rollback's second fleet included.", nil, nil),
		minute:    d("drill_minute", "The simulated minute under way, from 0 (the scenario's length once the drill has ended).", nil, nil),
		drillOn:   d("drill_info", "1 while the drill runs, 0 once it has ended; labelled with its scenario and its speed (wall seconds a simulated minute).", []string{"scenario", "speed_seconds"}, nil),
		info:      prometheus.Labels{"scenario": scenario, "speed_seconds": strconv.FormatFloat(speed.Seconds(), 'g', -1, 64)},
	}
}

func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.requests, c.latency, c.instances, c.hits, c.misses, c.queries,
		c.dbUtil, c.dbConns, c.burn, c.budget, c.build, c.cost, c.minute, c.drillOn} {
		ch <- d
	}
}

func (c *collector) Collect(ch chan<- prometheus.Metric) {
	s := c.sample()
	counter := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, labels...)
	}
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	for i, code := range codes {
		counter(c.requests, s.c.requests[i], code)
	}
	buckets := make(map[float64]uint64, len(latencyBuckets))
	for i, b := range latencyBuckets {
		buckets[b] = uint64(s.c.latency[i])
	}
	ch <- prometheus.MustNewConstHistogram(c.latency, uint64(s.c.latCount), s.c.latSum, buckets)
	counter(c.hits, s.c.hits)
	counter(c.misses, s.c.misses)
	counter(c.queries, s.c.queries)

	f := s.f
	gauge(c.instances, float64(f.Serving), "serving")
	gauge(c.instances, float64(f.Booting), "booting")
	gauge(c.dbUtil, f.DBUtilization)
	gauge(c.dbConns, math.Min(f.DBQueriesPerS, dbCapacity)*f.QueryTimeMs/1000)
	gauge(c.burn, f.Burn, "1m")
	gauge(c.burn, f.Burn5m, "5m")
	gauge(c.burn, f.Burn1h, "1h")
	gauge(c.budget, math.Max(0, f.BudgetRemaining))
	gauge(c.build, 1, s.version)
	gauge(c.cost, f.FleetCostPerH)
	gauge(c.minute, float64(s.minute))
	on := 1.0
	if s.ended {
		on = 0
	}
	gauge(c.drillOn, on, c.info["scenario"], c.info["speed_seconds"])
}
