package ops

import (
	"fmt"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// The metrics of the processes, listed with their meaning in
// docs/quota/operations.md, "Metrics and health". Each process has a
// registry of its own (no global default registry): the quota's collectors, the Go
// runtime's and the process's. The tenants' state is read at scrape time
// from the limiter's or the core's state, so it follows tenants that
// appear or disappear while the process runs, and the request path pays
// nothing for it; only the histograms are observed as they happen.
//
// A process serves up to 100,000 tenants, so its series are aggregates
// over them by default; a tenant's own series (named …_tenant_…, with a
// tenant label) are exported only for a bounded set the operator names
// (--metrics-tenants) or, at a region, the tenants refused most
// (--metrics-top): at most MaxMetricsTenants of each.

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

// MaxMetricsTenants bounds --metrics-tenants and --metrics-top: each
// tenant exported costs a dozen series, so that a hundred of each keep a
// scrape in the low thousands of series whatever the number of tenants.
const MaxMetricsTenants = 100

// CheckMetricsTenants refuses a --metrics-tenants list a process cannot
// export: more than MaxMetricsTenants names, a name a tenant cannot have
// (1 to 128 bytes, no slash: quota/config's rule), or a name given twice.
// Whether a name is a tenant is not known when a process starts — tenants
// are created and deleted while it runs (docs/quota/operations.md, "Tenants") — so a
// name no tenant has is no error: it has no series, and the process
// counts it (…_metrics_tenants_missing).
func CheckMetricsTenants(names []string) error {
	if len(names) > MaxMetricsTenants {
		return fmt.Errorf("--metrics-tenants: %d names: want 0 to %d", len(names), MaxMetricsTenants)
	}
	seen := make(map[string]bool, len(names))
	for i, n := range names {
		switch {
		case n == "" || len(n) > 128 || strings.ContainsAny(n, "/\n"):
			return fmt.Errorf("--metrics-tenants: name %d %q: want 1 to 128 bytes, no slash", i+1, n)
		case seen[n]:
			return fmt.Errorf("--metrics-tenants: %q given twice", n)
		}
		seen[n] = true
	}
	return nil
}
