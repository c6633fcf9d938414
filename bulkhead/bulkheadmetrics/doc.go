// Package bulkheadmetrics exports a bulkhead's counts to Prometheus. It is
// a package of its own so that the bulkhead, and the models that drive it
// in virtual time (package overload), import no Prometheus.
//
//	b, err := bulkhead.New(100, bulkhead.WithQueue(100))
//	prometheus.MustRegister(bulkheadmetrics.NewCollector(b, "api"))
//
// The collector reads the bulkhead's own counters (Bulkhead.Stats) at
// scrape time, so the request path pays nothing for metrics.
package bulkheadmetrics
