package service

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/afloat/afloat/quota"
	"github.com/afloat/afloat/quota/coordinator"
	"github.com/afloat/afloat/quota/region"
)

// The metrics of the processes, listed with their meaning in
// docs/quota.md, "Metrics and health". Each process has a registry of its
// own (no global default registry): the quota's collectors, the Go
// runtime's and the process's. The per-tenant metrics are read at scrape
// time from the limiter's or the core's state, so they follow tenants
// that appear or disappear while the process runs, and the request path
// pays nothing for them; only the renewal and ledger-write histograms are
// observed as they happen, off the request path.

// metricPrefix starts every metric of the quota's processes.
const metricPrefix = "afloat_quota_"

// latencyBuckets are the renewal and ledger-write histograms' buckets,
// in seconds: from 0.5 ms (a write on a quiet local etcd) to 10 s (a
// renewal waiting out a coordinator failover).
var latencyBuckets = []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}

// opsBuckets are the ledger batch-size histogram's buckets, in
// operations a transaction: up to etcd's limit of the embedded member.
var opsBuckets = []float64{1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024}

// newRegistry returns a process's registry with the runtime's and the
// process's collectors.
func newRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return reg
}

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

// constMetric is prometheus.MustNewConstMetric without the panic: a
// series Prometheus refuses costs that series (the scrape goes on, with
// promhttp.ContinueOnError: see observe), never the process. A label
// value that is not UTF-8 — a tenant name from outside — is refused when
// the registry gathers, and handled the same way.
func constMetric(d *prometheus.Desc, t prometheus.ValueType, v float64, labels ...string) prometheus.Metric {
	m, err := prometheus.NewConstMetric(d, t, v, labels...)
	if err != nil {
		return prometheus.NewInvalidMetric(d, err)
	}
	return m
}

// agentMetrics are a region agent's metrics.
type agentMetrics struct {
	reg     *prometheus.Registry
	renewal *prometheus.HistogramVec
}

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
	reg := newRegistry()
	constant := prometheus.Labels{"region": lim.Region()}
	d := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc(metricPrefix+"region_"+name, help, labels, constant)
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
		grants:      d("grants_total", "Grants received, by what the region did: accepted (installed), or ignored as stale_epoch, not_newer, unknown_request, over_on_arrival or not_this_region.", "outcome"),
		returns:     d("returns_total", "Leases given back, by result: acknowledged, or failed (the coordinator counts the lease until it expires).", "result"),
		journal:     d("journal_failures_total", "Event-log records the agent could not write: the leases installed stay in use, the returns are not sent (the coordinator counts the lease until it expires)."),
		standbyDesc: d("standby", "1 while another agent holds the region: this one was refused at attach and spends nothing until that one's leases end, else 0."),
	})
	m := &agentMetrics{reg: reg, renewal: prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:        metricPrefix + "region_renewal_duration_seconds",
		Help:        "Time from sending a renewal to its answer (batching included), by result: granted or failed.",
		Buckets:     latencyBuckets,
		ConstLabels: constant,
	}, []string{"result"})}
	reg.MustRegister(m.renewal)
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
		ch <- constMetric(d, prometheus.GaugeValue, v, labels...)
	}
	counter := func(d *prometheus.Desc, v int64, labels ...string) {
		key := seriesKey{d: d}
		if len(labels) > 0 {
			key.a = labels[0]
		}
		if len(labels) > 1 {
			key.b = labels[1]
		}
		ch <- constMetric(d, prometheus.CounterValue, c.seen.at(key, float64(v)), labels...)
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

func (t timedCoordinator) Renew(ctx context.Context, req quota.Request) (quota.Grant, error) {
	began := time.Now()
	g, err := t.Coordinator.Renew(ctx, req)
	result := "granted"
	if err != nil {
		if ctx.Err() != nil {
			return g, err // shutting down: not the coordinator's latency
		}
		result = "failed"
	}
	t.h.WithLabelValues(result).Observe(time.Since(began).Seconds())
	return g, err
}

// coordMetrics are a coordinator replica's metrics.
type coordMetrics struct {
	reg     *prometheus.Registry
	txn     *prometheus.HistogramVec
	txnOps  prometheus.Histogram
	current func() *coordinator.Server
}

// coordCollector reads the leading server's core at scrape time.
type coordCollector struct {
	current func() *coordinator.Server

	leader, epoch, tenantRate, tenantBurst, tenantAllowance, shareRate, shareBurst, leases *prometheus.Desc
}

// newCoordMetrics: current is the server while the replica leads (nil
// while it follows). The tenants are the leader's own list, read at each
// scrape, so that tenants created or deleted through the API show at
// once.
func newCoordMetrics(current func() *coordinator.Server) *coordMetrics {
	reg := newRegistry()
	d := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc(metricPrefix+"coordinator_"+name, help, labels, nil)
	}
	reg.MustRegister(&coordCollector{
		current:         current,
		leader:          d("leader", "1 while this replica leads (won the election and loaded the ledger), else 0."),
		epoch:           d("epoch", "The fencing epoch this replica leads at (the election key's create revision); 0 while it follows."),
		tenantRate:      d("tenant_rate_tokens_per_second", "The tenant's global rate R (leader only).", "tenant"),
		tenantBurst:     d("tenant_burst_tokens", "The tenant's global burst B (leader only).", "tenant"),
		tenantAllowance: d("tenant_emergency_allowance_tokens", "The tenant's emergency allowance E per region (leader only).", "tenant"),
		shareRate:       d("share_rate_tokens_per_second", "The region's rate share as the coordinator counts it: the largest of its live leases (leader only).", "tenant", "region"),
		shareBurst:      d("share_burst_tokens", "The region's burst share as the coordinator counts it: the largest of its live leases (leader only).", "tenant", "region"),
		leases:          d("live_leases", "Leases the coordinator counts now (an old one not yet confirmed returned and its replacement are two) (leader only).", "tenant", "region"),
	})
	m := &coordMetrics{reg: reg, current: current,
		txn: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    metricPrefix + "coordinator_ledger_txn_duration_seconds",
			Help:    "Time to write one ledger transaction (a batch of steps), by result: ok, fenced (a successor holds the ledger) or error.",
			Buckets: latencyBuckets,
		}, []string{"result"}),
		txnOps: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    metricPrefix + "coordinator_ledger_txn_ops",
			Help:    "Operations in one ledger transaction: the batch size of the coordinator's writer.",
			Buckets: opsBuckets,
		}),
	}
	reg.MustRegister(m.txn, m.txnOps)
	return m
}

func (c *coordCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.leader, c.epoch, c.tenantRate, c.tenantBurst, c.tenantAllowance, c.shareRate, c.shareBurst, c.leases} {
		ch <- d
	}
}

func (c *coordCollector) Collect(ch chan<- prometheus.Metric) {
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- constMetric(d, prometheus.GaugeValue, v, labels...)
	}
	srv := c.current()
	if srv == nil {
		gauge(c.leader, 0)
		gauge(c.epoch, 0)
		return
	}
	gauge(c.leader, 1)
	gauge(c.epoch, float64(srv.Epoch()))
	for _, rec := range srv.Tenants() {
		t, name := rec.Tenant, rec.Name
		gauge(c.tenantRate, t.Rate.Float(), name)
		gauge(c.tenantBurst, t.Burst.Float(), name)
		gauge(c.tenantAllowance, t.Emergency.Float(), name)
		type share struct {
			rate, burst quota.Micro
			n           int
		}
		shares := map[string]*share{}
		for _, r := range t.Regions {
			shares[r] = &share{}
		}
		for _, l := range srv.Live(name) {
			s := shares[l.Region]
			if s == nil {
				s = &share{}
				shares[l.Region] = s
			}
			s.rate, s.burst, s.n = max(s.rate, l.Rate), max(s.burst, l.Burst), s.n+1
		}
		for r, s := range shares {
			gauge(c.shareRate, s.rate.Float(), name, r)
			gauge(c.shareBurst, s.burst.Float(), name, r)
			gauge(c.leases, float64(s.n), name, r)
		}
	}
}

// meteredLedger times the coordinator's ledger writes and counts their
// operations: the batching writer's latency and batch size.
type meteredLedger struct {
	coordinator.Ledger
	m *coordMetrics
}

func (m *coordMetrics) ledger(l coordinator.Ledger) coordinator.Ledger {
	if m == nil {
		return l
	}
	return meteredLedger{l, m}
}

func (t meteredLedger) Commit(ctx context.Context, epoch uint64, ops ...coordinator.Op) error {
	began := time.Now()
	err := t.Ledger.Commit(ctx, epoch, ops...)
	result := "ok"
	switch {
	case errors.Is(err, quota.ErrStaleEpoch):
		result = "fenced"
	case err != nil:
		result = "error"
	}
	t.m.txn.WithLabelValues(result).Observe(time.Since(began).Seconds())
	t.m.txnOps.Observe(float64(len(ops)))
	return err
}

// MaxOps passes the ledger's limit on (coordinator.MaxOpser).
func (t meteredLedger) MaxOps() int {
	if m, ok := t.Ledger.(coordinator.MaxOpser); ok {
		return m.MaxOps()
	}
	return 0
}
