package replica

import (
	"context"
	"errors"
	"slices"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/afloat/afloat/quota"
	"github.com/afloat/afloat/quota/coordinator"
	"github.com/afloat/afloat/quota/eventlog"
	"github.com/afloat/afloat/quota/internal/ops"
)

// opsBuckets are the ledger batch-size histogram's buckets, in
// operations a transaction: up to etcd's limit of the embedded member.
var opsBuckets = []float64{1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024}

// coordMetrics are a coordinator replica's metrics.
type coordMetrics struct {
	reg     *prometheus.Registry
	txn     *prometheus.HistogramVec
	txnOps  prometheus.Histogram
	current func() *coordinator.Server
	events  atomic.Pointer[eventlog.File] // the event log, once open
}

// coordCollector reads the leading server's core at scrape time. The
// leader serves up to 100,000 tenants: it exports sums over them by
// region, and a tenant's own series (afloat_quota_coordinator_tenant_…)
// only for the tenants named (Options.MetricsTenants), so that a scrape
// stays a few hundred series whatever their number
// (TestCoordinatorMetricsAtMaxTenants).
type coordCollector struct {
	current func() *coordinator.Server
	named   map[string]bool // Options.MetricsTenants

	leader, epoch, tenants, rate, burst, shareRate, shareBurst, leases, regionTenants, missing *prometheus.Desc
	queued, queuedOps, busy, abandoned, splits, maxOps, proofs, covered                        *prometheus.Desc
	// a tenant's own
	tenantRate, tenantBurst, tenantAllowance, tenantShareRate, tenantShareBurst, tenantLeases *prometheus.Desc
}

// newCoordMetrics: current is the server while the replica leads (nil
// while it follows). The tenants are the leader's own list, read at each
// scrape, so that tenants created or deleted through the API show at
// once. named are the tenants whose own series are exported
// (Options.MetricsTenants).
func newCoordMetrics(current func() *coordinator.Server, named []string) *coordMetrics {
	reg := ops.NewRegistry()
	d := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc(ops.MetricPrefix+"coordinator_"+name, help, labels, nil)
	}
	const own = " One series per tenant of --metrics-tenants (leader only)."
	cc := &coordCollector{
		current: current,
		named:   map[string]bool{},
		leader:  d("leader", "1 while this replica leads (won the election and loaded the ledger), else 0."),
		epoch:   d("epoch", "The fencing epoch this replica leads at (the election key's create revision); 0 while it follows."),

		tenants:       d("tenants", "Tenants the leader serves (leader only)."),
		rate:          d("rate_tokens_per_second", "The tenants' global rates R, summed (leader only)."),
		burst:         d("burst_tokens", "The tenants' global bursts B, summed (leader only)."),
		shareRate:     d("share_rate_tokens_per_second", "The region's rate shares as the coordinator counts them (each tenant's: the largest of its live leases there), summed over the tenants (leader only).", "region"),
		shareBurst:    d("share_burst_tokens", "The region's burst shares as the coordinator counts them (each tenant's: the largest of its live leases there), summed over the tenants (leader only).", "region"),
		leases:        d("live_leases", "Leases the coordinator counts now in the region, summed over the tenants (an old one not yet confirmed returned and its replacement are two; a deleted tenant's are left out) (leader only).", "region"),
		regionTenants: d("region_tenants", "Tenants of the region, by whether the coordinator counts a live lease of theirs there: leased or none (leader only).", "region", "state"),
		missing:       d("metrics_tenants_missing", "Names of --metrics-tenants the leader does not serve (a typo, a tenant not created yet or deleted): they have no series (leader only)."),

		queued:    d("queued_steps", "Steps (a renewal, a return, a tenant's change) waiting for the committer now (leader only)."),
		queuedOps: d("queued_ops", "Ledger operations of the steps waiting for the committer now (leader only)."),
		busy:      d("busy_refusals_total", "Calls (a region's batch, an operator's change) refused at admission because the leader's queue was full: quota.ErrBusy, with a time to wait (leader only; from 0 at each leadership)."),
		abandoned: d("abandoned_steps_total", "Steps taken back unwritten because their caller's deadline passed before they could be written (leader only; from 0 at each leadership)."),
		splits:    d("ledger_txn_splits_total", "Ledger writes refused for their size, each then split in two (leader only; from 0 at each leadership)."),
		maxOps:    d("ledger_txn_max_ops", "The most operations the leader puts in one ledger transaction now: the ledger's limit, halved at each split (leader only)."),
		proofs:    d("leadership_proofs_total", "Proofs of leadership asked of the ledger before answers without a write, by result: ok, or failed (the answers waiting on it failed) (leader only; from 0 at each leadership).", "result"),
		covered:   d("covered_renewals_total", "Renewals answered without a ledger write: the region's shares unchanged, the lease standing on a written one (leader only; from 0 at each leadership)."),

		tenantRate:       d("tenant_rate_tokens_per_second", "The tenant's global rate R."+own, "tenant"),
		tenantBurst:      d("tenant_burst_tokens", "The tenant's global burst B."+own, "tenant"),
		tenantAllowance:  d("tenant_emergency_allowance_tokens", "The tenant's emergency allowance E per region."+own, "tenant"),
		tenantShareRate:  d("tenant_share_rate_tokens_per_second", "The region's rate share of the tenant as the coordinator counts it: the largest of its live leases."+own, "tenant", "region"),
		tenantShareBurst: d("tenant_share_burst_tokens", "The region's burst share of the tenant as the coordinator counts it: the largest of its live leases."+own, "tenant", "region"),
		tenantLeases:     d("tenant_live_leases", "The tenant's leases the coordinator counts now in the region (an old one not yet confirmed returned and its replacement are two)."+own, "tenant", "region"),
	}
	for _, t := range named {
		cc.named[t] = true
	}
	reg.MustRegister(cc)
	m := &coordMetrics{reg: reg, current: current,
		txn: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    ops.MetricPrefix + "coordinator_ledger_txn_duration_seconds",
			Help:    "Time to write one ledger transaction (a batch of steps), by result: ok, fenced (a successor holds the ledger), unknown (cancelled or cut off after it was sent: settled by reading the ledger back) or error.",
			Buckets: ops.LatencyBuckets,
		}, []string{"result"}),
		txnOps: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    ops.MetricPrefix + "coordinator_ledger_txn_ops",
			Help:    "Operations in one ledger transaction: the batch size of the coordinator's writer.",
			Buckets: opsBuckets,
		}),
	}
	reg.MustRegister(m.txn, m.txnOps, prometheus.NewCounterFunc(prometheus.CounterOpts{
		Name: ops.MetricPrefix + "coordinator_event_log_write_failures_total",
		Help: "Writes to the event log (--event-log) that failed, a full disk say: the calls whose lines they held failed, and the lines are written again with the next write.",
	}, func() float64 { return float64(m.events.Load().Failures()) }))
	return m
}

func (c *coordCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.leader, c.epoch, c.tenants, c.rate, c.burst, c.shareRate, c.shareBurst, c.leases,
		c.regionTenants, c.missing, c.queued, c.queuedOps, c.busy, c.abandoned, c.splits, c.maxOps, c.proofs, c.covered,
		c.tenantRate, c.tenantBurst, c.tenantAllowance, c.tenantShareRate, c.tenantShareBurst, c.tenantLeases} {
		ch <- d
	}
}

// ownSeries is what a tenant of --metrics-tenants has series of.
type ownSeries struct {
	name                   string
	rate, burst, allowance quota.Micro
	shares                 []coordinator.RegionShare
}

// regionSum is a region's shares summed over the tenants. In float64:
// 100,000 tenants' shares of up to 1e9 tokens in micro-tokens would
// overflow an int64.
type regionSum struct {
	rate, burst    float64
	leases         int
	leased, unheld int
}

func (c *coordCollector) Collect(ch chan<- prometheus.Metric) {
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- ops.ConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	counter := func(d *prometheus.Desc, v int64, labels ...string) {
		ch <- ops.ConstMetric(d, prometheus.CounterValue, float64(v), labels...)
	}
	srv := c.current()
	if srv == nil {
		gauge(c.leader, 0)
		gauge(c.epoch, 0)
		return
	}
	gauge(c.leader, 1)
	gauge(c.epoch, float64(srv.Epoch()))
	st := srv.Stats()
	gauge(c.queued, float64(st.Queued))
	gauge(c.queuedOps, float64(st.QueuedOps))
	counter(c.busy, st.Busy)
	counter(c.abandoned, st.Abandoned)
	counter(c.splits, st.Split)
	gauge(c.maxOps, float64(st.MaxOps))
	counter(c.proofs, st.Confirms-st.Unproven, "ok")
	counter(c.proofs, st.Unproven, "failed")
	counter(c.covered, st.Covered)

	sums := map[string]*regionSum{}
	var rate, burst float64
	tenants := 0
	var own []ownSeries
	srv.Shares(func(t *quota.Tenant, shares []coordinator.RegionShare) {
		tenants++
		rate += t.Rate.Float()
		burst += t.Burst.Float()
		for _, s := range shares {
			sum := sums[s.Region]
			if sum == nil {
				sum = &regionSum{}
				sums[s.Region] = sum
			}
			sum.rate += s.Rate.Float()
			sum.burst += s.Burst.Float()
			sum.leases += s.Leases
			if s.Leases > 0 {
				sum.leased++
			} else {
				sum.unheld++
			}
		}
		if c.named[t.Name] {
			// Copied out, and sent once the server's lock is let go: a
			// send may wait for the registry.
			own = append(own, ownSeries{name: t.Name, rate: t.Rate, burst: t.Burst, allowance: t.Emergency, shares: slices.Clone(shares)})
		}
	})
	for _, o := range own {
		gauge(c.tenantRate, o.rate.Float(), o.name)
		gauge(c.tenantBurst, o.burst.Float(), o.name)
		gauge(c.tenantAllowance, o.allowance.Float(), o.name)
		for _, s := range o.shares {
			gauge(c.tenantShareRate, s.Rate.Float(), o.name, s.Region)
			gauge(c.tenantShareBurst, s.Burst.Float(), o.name, s.Region)
			gauge(c.tenantLeases, float64(s.Leases), o.name, s.Region)
		}
	}
	served := len(own)
	gauge(c.tenants, float64(tenants))
	gauge(c.rate, rate)
	gauge(c.burst, burst)
	gauge(c.missing, float64(len(c.named)-served))
	for r, sum := range sums {
		gauge(c.shareRate, sum.rate, r)
		gauge(c.shareBurst, sum.burst, r)
		gauge(c.leases, float64(sum.leases), r)
		gauge(c.regionTenants, float64(sum.leased), r, "leased")
		gauge(c.regionTenants, float64(sum.unheld), r, "none")
	}
}

// eventLog counts the event log's failed writes: a failed append fails
// the calls of its transaction, which the regions see; the operator sees
// the counter.
func (m *coordMetrics) eventLog(events *eventlog.File) { m.events.Store(events) }

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
	case errors.Is(err, coordinator.ErrOutcomeUnknown):
		result = "unknown"
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
