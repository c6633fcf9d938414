package replica

import (
	"context"
	"errors"
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
	reg := ops.NewRegistry()
	d := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc(ops.MetricPrefix+"coordinator_"+name, help, labels, nil)
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
	for _, d := range []*prometheus.Desc{c.leader, c.epoch, c.tenantRate, c.tenantBurst, c.tenantAllowance, c.shareRate, c.shareBurst, c.leases} {
		ch <- d
	}
}

func (c *coordCollector) Collect(ch chan<- prometheus.Metric) {
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- ops.ConstMetric(d, prometheus.GaugeValue, v, labels...)
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
