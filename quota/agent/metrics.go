package agent

import (
	"context"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/afloat/afloat/quota"
	"github.com/afloat/afloat/quota/internal/ops"
	"github.com/afloat/afloat/quota/region"
)

// monotonic keeps counters read at scrape time from going back: a read
// racing requests may be a few tokens off (region.Counts), and Prometheus
// takes a counter that falls for a restart. A series missing from a
// scrape (its tenant gone) is forgotten, so that a tenant removed and
// added again starts from its new counts. The collector holds mu for a
// whole scrape.
type monotonic struct {
	mu   sync.Mutex
	gen  uint64
	last map[seriesKey]seenValue
}

// seriesKey names a series: its metric and up to two label values.
type seriesKey struct {
	d    *prometheus.Desc
	a, b string
}

type seenValue struct {
	v   float64
	gen uint64
}

// begin starts a scrape; end forgets what it did not see.
func (m *monotonic) begin() {
	m.mu.Lock()
	m.gen++
	if m.last == nil {
		m.last = map[seriesKey]seenValue{}
	}
}

func (m *monotonic) end() {
	for k, sv := range m.last {
		if sv.gen != m.gen {
			delete(m.last, k)
		}
	}
	m.mu.Unlock()
}

// at is v, or the value reported last if v is lower. Called between
// begin and end.
func (m *monotonic) at(key seriesKey, v float64) float64 {
	if prev, ok := m.last[key]; ok && prev.v > v {
		v = prev.v
	}
	m.last[key] = seenValue{v, m.gen}
	return v
}

// agentMetrics are a region agent's metrics.
type agentMetrics struct {
	reg      *prometheus.Registry
	renewal  *prometheus.HistogramVec
	decision *prometheus.HistogramVec
	// the decision histogram's two series, looked up once
	decideAPI, decideEnvoy prometheus.Observer
}

// decisionBuckets are the decision histogram's buckets, in seconds: a
// decision takes tens of microseconds in the handler (docs/benchmarks.md:
// p50 about 150 µs over loopback, the network included), and its alert
// fires above 5 ms.
var decisionBuckets = []float64{.000025, .00005, .0001, .00025, .0005, .001, .0025, .005, .01, .025, .1}

// regionCollector reads a region's limiter at scrape time.
type regionCollector struct {
	lim     *region.Limiter
	now     func() int64 // the agent's clock (Agent.now)
	seen    monotonic
	standby func() bool // another agent holds the region

	rate, burst, valid, remaining, balance, allowance, inUse *prometheus.Desc
	admitted, refused, unknown, grants, returns, journal     *prometheus.Desc
	standbyDesc                                              *prometheus.Desc
}

func newAgentMetrics(lim *region.Limiter, now func() int64, standby func() bool) *agentMetrics {
	reg := ops.NewRegistry()
	constant := prometheus.Labels{"region": lim.Region()}
	d := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc(ops.MetricPrefix+"region_"+name, help, labels, constant)
	}
	reg.MustRegister(&regionCollector{
		lim:         lim,
		now:         now,
		standby:     standby,
		rate:        d("lease_rate_tokens_per_second", "Rate share of the lease in use (0 without a valid lease).", "tenant"),
		burst:       d("lease_burst_tokens", "Burst share of the lease in use (0 without a valid lease).", "tenant"),
		valid:       d("lease_valid", "1 while the region holds a valid lease for the tenant, else 0.", "tenant"),
		remaining:   d("lease_remaining_seconds", "Time until the lease in use ends on the region's clock (0 without a valid lease).", "tenant"),
		balance:     d("balance_tokens", "Tokens in the region's bucket for the tenant (0 without a valid lease).", "tenant"),
		allowance:   d("emergency_allowance_tokens", "The emergency allowance E (best-effort mode; 0 in hard mode).", "tenant"),
		inUse:       d("emergency_in_use_tokens", "Emergency allowance spent and not yet refilled: E less what is left.", "tenant"),
		admitted:    d("admitted_tokens_total", "Tokens admitted, by reason: lease (under a valid lease) or emergency (from the allowance).", "tenant", "reason"),
		refused:     d("refused_tokens_total", "Tokens refused, by reason: exhausted (a valid lease lacked them), no_lease, allowance_spent (best effort, no lease, allowance spent).", "tenant", "reason"),
		unknown:     d("unknown_tenant_requests_total", "Requests naming a tenant the region does not serve."),
		grants:      d("grants_total", "Grants received, by what the region did: accepted (installed), kept (the coordinator kept the lease in use unchanged, with no write), or ignored as stale_epoch, not_newer, unknown_request, over_on_arrival or not_this_region.", "outcome"),
		returns:     d("returns_total", "Leases given back, by result: acknowledged, or failed (the coordinator counts the lease until it expires).", "result"),
		journal:     d("journal_failures_total", "Event-log records the agent could not write: the leases installed stay in use, the returns are not sent (the coordinator counts the lease until it expires)."),
		standbyDesc: d("standby", "1 while another agent holds the region: this one was refused at attach and spends nothing until that one's leases end, else 0."),
	})
	m := &agentMetrics{reg: reg, renewal: prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:        ops.MetricPrefix + "region_renewal_duration_seconds",
		Help:        "Time from sending a renewal to its answer (batching included), by result: granted or failed.",
		Buckets:     ops.LatencyBuckets,
		ConstLabels: constant,
	}, []string{"result"}), decision: prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:        ops.MetricPrefix + "region_decision_duration_seconds",
		Help:        "Time to answer one decision, from the request read to the answer written, by front: api (POST /v1/allow) or envoy (the gRPC rate-limit service).",
		Buckets:     decisionBuckets,
		ConstLabels: constant,
	}, []string{"front"})}
	// Both fronts' series exist from the start, so that an alert on
	// them sees a region that has not answered yet.
	m.decideAPI, m.decideEnvoy = m.decision.WithLabelValues("api"), m.decision.WithLabelValues("envoy")
	reg.MustRegister(m.renewal, m.decision)
	return m
}

func (c *regionCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.rate, c.burst, c.valid, c.remaining, c.balance, c.allowance, c.inUse,
		c.admitted, c.refused, c.unknown, c.grants, c.returns, c.journal, c.standbyDesc} {
		ch <- d
	}
}

func (c *regionCollector) Collect(ch chan<- prometheus.Metric) {
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- ops.ConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	counter := func(d *prometheus.Desc, v int64, labels ...string) {
		key := seriesKey{d: d}
		if len(labels) > 0 {
			key.a = labels[0]
		}
		if len(labels) > 1 {
			key.b = labels[1]
		}
		ch <- ops.ConstMetric(d, prometheus.CounterValue, c.seen.at(key, float64(v)), labels...)
	}
	c.seen.begin()
	defer c.seen.end()
	now := c.now()
	for _, t := range c.lim.Tenants() {
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
		if n, ok := c.lim.Counts(t); ok {
			counter(c.admitted, n.Admitted, t, "lease")
			counter(c.admitted, n.Emergency, t, "emergency")
			counter(c.refused, n.Exhausted, t, "exhausted")
			counter(c.refused, n.NoLease, t, "no_lease")
			counter(c.refused, n.AllowanceSpent, t, "allowance_spent")
			counter(c.refused, n.TooLarge, t, "too_large")
		}
	}
	counter(c.unknown, c.lim.UnknownTenant())
	rs := c.lim.RunStats()
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

// timedCoordinator times a region's renewals: the latency a region sees,
// the client's batching and the coordinator's ledger write included.
type timedCoordinator struct {
	region.Coordinator
	h *prometheus.HistogramVec
}

func (m *agentMetrics) timed(c region.Coordinator) region.Coordinator {
	if m == nil {
		return c
	}
	return timedCoordinator{c, m.renewal}
}

func (t timedCoordinator) RenewBatch(ctx context.Context, reqs []quota.Request) ([]quota.Result, error) {
	began := time.Now()
	res, err := t.Coordinator.RenewBatch(ctx, reqs)
	if err != nil && ctx.Err() != nil {
		return res, err // shutting down: not the coordinator's latency
	}
	took := time.Since(began).Seconds()
	for i := range reqs {
		result := "granted"
		if err != nil || res[i].Err != nil {
			result = "failed"
		}
		t.h.WithLabelValues(result).Observe(took)
	}
	return res, err
}

// decided observes the time of a decision answered on front (a
// malformed request is not a decision).
func decided(front prometheus.Observer, began time.Time) {
	front.Observe(time.Since(began).Seconds())
}
