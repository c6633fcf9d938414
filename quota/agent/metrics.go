package agent

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/afloat/afloat/quota"
	"github.com/afloat/afloat/quota/internal/ops"
	"github.com/afloat/afloat/quota/region"
)

// A region serves up to region.MaxTenants tenants, and a series per
// tenant would make a scrape of one region hundreds of thousands of
// series. So the agent exports aggregates over its tenants — how many
// hold a valid lease, the admissions and refusals by reason summed — and
// a tenant's own series (afloat_quota_region_tenant_…) only for the
// bounded set Options.MetricsTenants and Options.MetricsTop choose
// (TestMetricsAtMaxTenants counts a scrape at 100,000 tenants).

// The lease states afloat_quota_region_tenants counts tenants in.
const (
	stateValid    = iota // a valid lease with more than 1/expiringPart of its term left
	stateExpiring        // a valid lease with less
	stateNone            // no valid lease
	numStates
)

var stateLabels = [numStates]string{"valid", "expiring", "none"}

// expiringPart: a lease with less than 1/expiringPart of its term
// (Lease.Expires − Lease.Activates, the lease duration and the skew
// margin) left counts as expiring. A region renews a lease half a lease
// after the request that got it, moved by up to a fifth of a lease either
// way at the widest region.Config.Spread, and an answer to that renewal
// ends the lease in use later (the coordinator keeps a lease unchanged
// only for a request within a quarter of its start). With the default
// 10 s lease and 500 ms skew margin, a lease lasts 9.5 s at the region
// and is renewed 7 s in at the latest, with 2.5 s left; a fifth of its
// 10.5 s term is 2.1 s. So a tenant renewed as it should be is never
// expiring: one that is has gone 0.4 s or more without an answer to a
// renewal due, and ends within 2.1 s unless one comes.
const expiringPart = 5

// tenantCounts is a tenant's counts as last reported, and the scrape
// that saw it last.
type tenantCounts struct {
	region.Counts
	gen uint64
}

// agentMetrics are a region agent's metrics.
type agentMetrics struct {
	reg      *prometheus.Registry
	region   *regionCollector
	renewal  *prometheus.HistogramVec
	batch    *prometheus.HistogramVec
	decision *prometheus.HistogramVec
	// the decision histogram's two series, looked up once
	decideAPI, decideEnvoy prometheus.Observer
	// the batch histogram's two series, looked up once
	batchRenew, batchReturn prometheus.Observer
}

// decisionBuckets are the decision histogram's buckets, in seconds: a
// decision takes tens of microseconds in the handler (docs/benchmarks.md:
// p50 about 150 µs over loopback, the network included), and its alert
// fires above 5 ms.
var decisionBuckets = []float64{.000025, .00005, .0001, .00025, .0005, .001, .0025, .005, .01, .025, .1}

// batchBuckets are the batch-size histogram's buckets, in requests a
// call: powers of two up to remote.MaxBatch, what one call carries at
// most.
var batchBuckets = prometheus.ExponentialBuckets(1, 2, 12)

// regionCollector reads a region's limiter at scrape time: every tenant's
// state and counts, summed, and the series of the tenants in the bounded
// set.
type regionCollector struct {
	lim     *region.Limiter
	now     func() int64 // the agent's clock (Agent.now)
	standby func() bool  // another agent holds the region
	named   []string     // Options.MetricsTenants
	top     int          // Options.MetricsTop: the most refused besides those named
	isNamed map[string]bool

	// mu serializes scrapes: they update what follows.
	mu sync.Mutex
	// counts holds every tenant's counts as last reported, so that no
	// counter goes back: a read racing requests may be a few tokens
	// low (region.Counts), and Prometheus takes a counter that falls
	// for a restart. gone sums the counts of the tenants no longer
	// served, so that the sums over tenants do not fall when one is
	// removed. A tenant removed and added again between two scrapes
	// keeps its old counts until its new ones pass them.
	counts map[string]tenantCounts
	gone   region.Counts
	gen    uint64

	tenants, admitted, refused, unknown, grants, returns, journal, standbyDesc *prometheus.Desc
	renewals, renewalsRefused, batches, batchFailures, inFlight, backlog       *prometheus.Desc
	backoff, patience, batchLimit, missing                                     *prometheus.Desc
	// a tenant's own
	rate, burst, valid, remaining, balance, allowance, inUse, tAdmitted, tRefused *prometheus.Desc
}

// checkMetrics refuses a bounded set the agent cannot export (ops.
// CheckMetricsTenants, and --metrics-top 0 to ops.MaxMetricsTenants).
func (o *Options) checkMetrics() error {
	if o.MetricsTop < 0 || o.MetricsTop > ops.MaxMetricsTenants {
		return fmt.Errorf("--metrics-top %d: want 0 (none) to %d tenants", o.MetricsTop, ops.MaxMetricsTenants)
	}
	return ops.CheckMetricsTenants(o.MetricsTenants)
}

// newAgentMetrics: named and top are the bounded set of tenants whose own
// series are exported (Options.MetricsTenants, Options.MetricsTop).
func newAgentMetrics(lim *region.Limiter, now func() int64, standby func() bool, named []string, top int) *agentMetrics {
	reg := ops.NewRegistry()
	constant := prometheus.Labels{"region": lim.Region()}
	d := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc(ops.MetricPrefix+"region_"+name, help, labels, constant)
	}
	const own = " One series per tenant of --metrics-tenants and --metrics-top."
	rc := &regionCollector{
		lim:     lim,
		now:     now,
		standby: standby,
		named:   slices.Clone(named),
		isNamed: map[string]bool{},
		top:     top,
		counts:  map[string]tenantCounts{},

		tenants:         d("tenants", "Tenants the region serves, by the state of their lease: valid; expiring (valid, with less than a fifth of its term left: a renewal due has gone unanswered); none (no valid lease: refused in hard mode, spending the emergency allowance in best effort).", "state"),
		admitted:        d("admitted_tokens_total", "Tokens admitted, summed over the tenants, by reason: lease (under a valid lease) or emergency (from the allowance).", "reason"),
		refused:         d("refused_tokens_total", "Tokens refused, summed over the tenants, by reason: exhausted (a valid lease lacked them), no_lease, allowance_spent (best effort, no lease, allowance spent), too_large (more than the tenant's quota can ever hold here).", "reason"),
		unknown:         d("unknown_tenant_requests_total", "Requests naming a tenant the region does not serve."),
		grants:          d("grants_total", "Grants received, by what the region did: accepted (installed), kept (the coordinator kept the lease in use unchanged, with no write), or ignored as stale_epoch, not_newer, unknown_request, over_on_arrival or not_this_region.", "outcome"),
		returns:         d("returns_total", "Leases given back, by result: acknowledged, or failed (the coordinator counts the lease until it expires).", "result"),
		journal:         d("journal_failures_total", "Event-log records the agent could not write: the leases installed stay in use, the returns are not sent (the coordinator counts the lease until it expires)."),
		renewals:        d("renewals_total", "Renewal requests, by result: granted, or failed (refused one by one, or in a call that failed as a whole: timed out, shed, the coordinator out of reach, the region held by another agent).", "result"),
		renewalsRefused: d("renewals_refused_total", "Renewal requests the coordinator refused one by one in calls it answered, by reason: unknown (the tenant or its region unknown to it), fenced (a stale or unverified epoch, a superseded agent), busy (dropped to shed load), other (the ledger did not take the write in time, say).", "reason"),
		batches:         d("batches_total", "Calls the region sent to the coordinator, each of up to a batch of requests, by call: renew or return.", "call"),
		batchFailures:   d("batch_failures_total", "Calls to the coordinator that failed as a whole, by reason: busy (the coordinator shed load), timeout (no answer within the region's patience), unavailable (no leader answered, or the call failed otherwise), held (another agent holds the region). After each the region waits before it sends again.", "reason"),
		inFlight:        d("batches_in_flight", "Calls to the coordinator under way now."),
		backlog:         d("backlog_tenants", "Tenants due for a renewal that wait for a place in a call."),
		backoff:         d("backoff_seconds", "How long until the region sends again, after calls that failed as a whole; 0 when it is not backing off."),
		patience:        d("patience_seconds", "The deadline the region gives each call to the coordinator now (it grows while the coordinator is slow)."),
		batchLimit:      d("batch_size_limit", "The most requests the region puts in a call now: its batch size, halved by each call that timed out (down to 64) and doubled again by each answered within half its patience."),
		missing:         d("metrics_tenants_missing", "Names of --metrics-tenants the region does not serve now (a typo, a tenant not created yet or deleted): they have no series."),
		standbyDesc:     d("standby", "1 while another agent holds the region: this one was refused at attach and spends nothing until that one's leases end, else 0."),

		rate:      d("tenant_lease_rate_tokens_per_second", "Rate share of the tenant's lease in use (0 without a valid lease)."+own, "tenant"),
		burst:     d("tenant_lease_burst_tokens", "Burst share of the tenant's lease in use (0 without a valid lease)."+own, "tenant"),
		valid:     d("tenant_lease_valid", "1 while the region holds a valid lease for the tenant, else 0."+own, "tenant"),
		remaining: d("tenant_lease_remaining_seconds", "Time until the tenant's lease in use ends on the region's clock (0 without a valid lease)."+own, "tenant"),
		balance:   d("tenant_balance_tokens", "Tokens in the region's bucket for the tenant (0 without a valid lease)."+own, "tenant"),
		allowance: d("tenant_emergency_allowance_tokens", "The tenant's emergency allowance E (best-effort mode; 0 in hard mode)."+own, "tenant"),
		inUse:     d("tenant_emergency_in_use_tokens", "The tenant's emergency allowance spent and not yet refilled: E less what is left."+own, "tenant"),
		tAdmitted: d("tenant_admitted_tokens_total", "The tenant's tokens admitted, by reason: lease or emergency."+own, "tenant", "reason"),
		tRefused:  d("tenant_refused_tokens_total", "The tenant's tokens refused, by reason: exhausted, no_lease, allowance_spent, too_large."+own, "tenant", "reason"),
	}
	for _, t := range named {
		rc.isNamed[t] = true
	}
	reg.MustRegister(rc)
	m := &agentMetrics{reg: reg, region: rc, renewal: prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:        ops.MetricPrefix + "region_renewal_duration_seconds",
		Help:        "Time from sending a renewal to its answer (batching included), by result: granted or failed.",
		Buckets:     ops.LatencyBuckets,
		ConstLabels: constant,
	}, []string{"result"}), batch: prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:        ops.MetricPrefix + "region_batch_requests",
		Help:        "Requests in one call of the region's runner to the coordinator, by call: renew or return.",
		Buckets:     batchBuckets,
		ConstLabels: constant,
	}, []string{"call"}), decision: prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:        ops.MetricPrefix + "region_decision_duration_seconds",
		Help:        "Time to answer one decision, from the request read to the answer written, by front: api (POST /v1/allow) or envoy (the gRPC rate-limit service).",
		Buckets:     decisionBuckets,
		ConstLabels: constant,
	}, []string{"front"})}
	// The series exist from the start, so that an alert on them sees a
	// region that has not answered yet.
	m.decideAPI, m.decideEnvoy = m.decision.WithLabelValues("api"), m.decision.WithLabelValues("envoy")
	m.batchRenew, m.batchReturn = m.batch.WithLabelValues("renew"), m.batch.WithLabelValues("return")
	reg.MustRegister(m.renewal, m.batch, m.decision)
	return m
}

func (c *regionCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.tenants, c.admitted, c.refused, c.unknown, c.grants, c.returns, c.journal,
		c.renewals, c.renewalsRefused, c.batches, c.batchFailures, c.inFlight, c.backlog, c.backoff, c.patience, c.batchLimit, c.missing, c.standbyDesc,
		c.rate, c.burst, c.valid, c.remaining, c.balance, c.allowance, c.inUse, c.tAdmitted, c.tRefused} {
		ch <- d
	}
}

// leaseState is the state of a tenant's lease at now (stateValid…).
func leaseState(now int64, st region.Status) int {
	switch {
	case !st.Valid:
		return stateNone
	case st.Until-now < int64(st.Lease.Expires-st.Lease.Activates)/expiringPart:
		return stateExpiring
	}
	return stateValid
}

// refusedTokens is what a tenant was refused, all reasons together: what
// --metrics-top ranks tenants by.
func refusedTokens(n region.Counts) int64 {
	return n.Exhausted + n.NoLease + n.AllowanceSpent + n.TooLarge
}

// add adds b to a, reason by reason.
func add(a *region.Counts, b region.Counts) {
	a.Admitted += b.Admitted
	a.Emergency += b.Emergency
	a.Exhausted += b.Exhausted
	a.NoLease += b.NoLease
	a.AllowanceSpent += b.AllowanceSpent
	a.TooLarge += b.TooLarge
}

// atLeast is n, each count raised to at least prev's.
func atLeast(n, prev region.Counts) region.Counts {
	return region.Counts{
		Admitted: max(n.Admitted, prev.Admitted), Emergency: max(n.Emergency, prev.Emergency),
		Exhausted: max(n.Exhausted, prev.Exhausted), NoLease: max(n.NoLease, prev.NoLease),
		AllowanceSpent: max(n.AllowanceSpent, prev.AllowanceSpent), TooLarge: max(n.TooLarge, prev.TooLarge),
	}
}

// ranked is a tenant and the tokens it was refused.
type ranked struct {
	tenant  string
	refused int64
}

// before orders the most refused first, then by name.
func (r ranked) before(o ranked) bool {
	return r.refused > o.refused || r.refused == o.refused && r.tenant < o.tenant
}

// topRefused keeps the n tenants refused the most tokens among those
// offered (none never refused), most first: a scan of every tenant
// compares most of them with the last place alone.
type topRefused struct {
	n    int
	list []ranked
}

func (t *topRefused) offer(r ranked) {
	if t.n == 0 || r.refused == 0 || len(t.list) == t.n && !r.before(t.list[len(t.list)-1]) {
		return
	}
	i, _ := slices.BinarySearchFunc(t.list, r, func(a, b ranked) int {
		if a.before(b) {
			return -1
		}
		return 1
	})
	t.list = slices.Insert(t.list, i, r)
	if len(t.list) > t.n {
		t.list = t.list[:t.n]
	}
}

func (c *regionCollector) Collect(ch chan<- prometheus.Metric) {
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- ops.ConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	counter := func(d *prometheus.Desc, v int64, labels ...string) {
		ch <- ops.ConstMetric(d, prometheus.CounterValue, float64(v), labels...)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	now := c.now()
	var states [numStates]int
	top := topRefused{n: c.top}
	for _, t := range c.lim.Tenants() {
		n, ok := c.lim.Counts(t)
		if !ok {
			continue // removed since the list was read
		}
		n = atLeast(n, c.counts[t].Counts)
		c.counts[t] = tenantCounts{n, c.gen}
		states[leaseState(now, c.lim.Status(now, t))]++
		if top.n > 0 && !c.isNamed[t] {
			top.offer(ranked{t, refusedTokens(n)})
		}
	}
	for t, tc := range c.counts {
		if tc.gen != c.gen {
			add(&c.gone, tc.Counts)
			delete(c.counts, t)
		}
	}
	sum := c.gone
	for _, tc := range c.counts {
		add(&sum, tc.Counts)
	}
	for s, n := range states {
		gauge(c.tenants, float64(n), stateLabels[s])
	}
	counter(c.admitted, sum.Admitted, "lease")
	counter(c.admitted, sum.Emergency, "emergency")
	counter(c.refused, sum.Exhausted, "exhausted")
	counter(c.refused, sum.NoLease, "no_lease")
	counter(c.refused, sum.AllowanceSpent, "allowance_spent")
	counter(c.refused, sum.TooLarge, "too_large")

	// The bounded set: the names given, then the most refused.
	missing := 0
	set := make([]string, 0, len(c.named)+len(top.list))
	for _, t := range c.named {
		if _, ok := c.counts[t]; ok {
			set = append(set, t)
		} else {
			missing++
		}
	}
	for _, r := range top.list {
		set = append(set, r.tenant)
	}
	gauge(c.missing, float64(missing))
	for _, t := range set {
		st := c.lim.Status(now, t)
		var rate, burst, valid, remaining float64
		if st.Valid {
			rate, burst, valid = st.Lease.Rate.Float(), st.Lease.Burst.Float(), 1
			remaining = time.Duration(st.Until - now).Seconds()
		}
		gauge(c.rate, rate, t)
		gauge(c.burst, burst, t)
		gauge(c.valid, valid, t)
		gauge(c.remaining, remaining, t)
		gauge(c.balance, st.Balance.Float(), t)
		gauge(c.allowance, st.Allowance.Float(), t)
		gauge(c.inUse, max(0, (st.Allowance-st.Reserve).Float()), t)
		n := c.counts[t].Counts
		counter(c.tAdmitted, n.Admitted, t, "lease")
		counter(c.tAdmitted, n.Emergency, t, "emergency")
		counter(c.tRefused, n.Exhausted, t, "exhausted")
		counter(c.tRefused, n.NoLease, t, "no_lease")
		counter(c.tRefused, n.AllowanceSpent, t, "allowance_spent")
		counter(c.tRefused, n.TooLarge, t, "too_large")
	}

	counter(c.unknown, c.lim.UnknownTenant())
	rs := c.lim.RunStats()
	counter(c.renewals, rs.Renewals, "granted")
	counter(c.renewals, rs.RenewFailures, "failed")
	counter(c.renewalsRefused, rs.RefusedUnknown, "unknown")
	counter(c.renewalsRefused, rs.RefusedFenced, "fenced")
	counter(c.renewalsRefused, rs.RefusedBusy, "busy")
	counter(c.renewalsRefused, rs.RefusedOther, "other")
	counter(c.batches, rs.Batches, "renew")
	counter(c.batches, rs.ReturnBatches, "return")
	counter(c.batchFailures, rs.BatchesBusy, "busy")
	counter(c.batchFailures, rs.BatchesTimedOut, "timeout")
	counter(c.batchFailures, rs.BatchesUnavailable, "unavailable")
	counter(c.batchFailures, rs.BatchesHeld, "held")
	gauge(c.inFlight, float64(rs.InFlight))
	gauge(c.backlog, float64(rs.Backlog))
	gauge(c.backoff, rs.Backoff.Seconds())
	gauge(c.patience, rs.Patience.Seconds())
	gauge(c.batchLimit, float64(rs.BatchSize))
	for _, o := range region.Outcomes() {
		counter(c.grants, c.lim.Grants(o), outcomeLabel(o))
	}
	counter(c.returns, rs.Returns, "acknowledged")
	counter(c.returns, rs.ReturnFailures, "failed")
	counter(c.journal, rs.JournalFailures)
	var standby float64
	if c.standby != nil && c.standby() {
		standby = 1
	}
	gauge(c.standbyDesc, standby)
}

// outcomeLabel is an Outcome as a label value.
func outcomeLabel(o region.Outcome) string {
	switch o {
	case region.Accepted:
		return "accepted"
	case region.NotThisRegion:
		return "not_this_region"
	case region.StaleEpoch:
		return "stale_epoch"
	case region.NotNewer:
		return "not_newer"
	case region.UnknownRequest:
		return "unknown_request"
	case region.OverOnArrival:
		return "over_on_arrival"
	case region.Kept:
		return "kept"
	}
	return "outcome_" + strconv.Itoa(int(o))
}

// timedCoordinator times a region's renewals — the latency a region
// sees, the client's batching and the coordinator's ledger write
// included — and counts the requests in each call.
type timedCoordinator struct {
	region.Coordinator
	m *agentMetrics
}

func (m *agentMetrics) timed(c region.Coordinator) region.Coordinator {
	if m == nil {
		return c
	}
	return timedCoordinator{c, m}
}

func (t timedCoordinator) RenewBatch(ctx context.Context, reqs []quota.Request) ([]quota.Result, error) {
	began := time.Now()
	t.m.batchRenew.Observe(float64(len(reqs)))
	res, err := t.Coordinator.RenewBatch(ctx, reqs)
	if err != nil && errors.Is(ctx.Err(), context.Canceled) {
		return res, err // shutting down: not the coordinator's latency
	}
	// A call past its deadline (the region's patience) failed, and took
	// that long: a coordinator that does not answer shows as failures.
	took := time.Since(began).Seconds()
	granted, failed := t.m.renewal.WithLabelValues("granted"), t.m.renewal.WithLabelValues("failed")
	for i := range reqs {
		if err != nil || i >= len(res) || res[i].Err != nil {
			failed.Observe(took)
		} else {
			granted.Observe(took)
		}
	}
	return res, err
}

func (t timedCoordinator) ReturnBatch(ctx context.Context, rets []quota.Return) ([]error, error) {
	t.m.batchReturn.Observe(float64(len(rets)))
	return t.Coordinator.ReturnBatch(ctx, rets)
}

// decided observes the time of a decision answered on front (a
// malformed request is not a decision).
func decided(front prometheus.Observer, began time.Time) {
	front.Observe(time.Since(began).Seconds())
}
