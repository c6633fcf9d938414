package ops

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// The metrics of the processes, listed with their meaning in
// docs/quota.md, "Metrics and health". Each process has a registry of its
// own (no global default registry): the quota's collectors, the Go
// runtime's and the process's. The per-tenant metrics are read at scrape
// time from the limiter's or the core's state, so they follow tenants
// that appear or disappear while the process runs, and the request path
// pays nothing for them; only the renewal and ledger-write histograms are
// observed as they happen, off the request path.

// MetricPrefix starts every metric of the quota's processes.
const MetricPrefix = "afloat_quota_"

// LatencyBuckets are the renewal and ledger-write histograms' buckets,
// in seconds: from 0.5 ms (a write on a quiet local etcd) to 10 s (a
// renewal waiting out a coordinator failover).
var LatencyBuckets = []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}

// NewRegistry returns a process's registry with the runtime's and the
// process's collectors.
func NewRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return reg
}

// ConstMetric is prometheus.MustNewConstMetric without the panic: a
// series Prometheus refuses costs that series (the scrape goes on, with
// promhttp.ContinueOnError: see Observe), never the process. A label
// value that is not UTF-8 — a tenant name from outside — is refused when
// the registry gathers, and handled the same way.
func ConstMetric(d *prometheus.Desc, t prometheus.ValueType, v float64, labels ...string) prometheus.Metric {
	m, err := prometheus.NewConstMetric(d, t, v, labels...)
	if err != nil {
		return prometheus.NewInvalidMetric(d, err)
	}
	return m
}
