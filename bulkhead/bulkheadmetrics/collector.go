package bulkheadmetrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/afloat/afloat/bulkhead"
)

type collector struct {
	b                                   *bulkhead.Bulkhead
	limit, inflight, queued, baseline   *prometheus.Desc
	admitted, completed, rejected, wait *prometheus.Desc
}

// NewCollector returns a prometheus.Collector for b, its metrics labelled
// bulkhead=name:
//
//	afloat_bulkhead_limit, afloat_bulkhead_inflight, afloat_bulkhead_queued (gauges)
//	afloat_bulkhead_admitted_total, afloat_bulkhead_completed_total (counters)
//	afloat_bulkhead_rejected_total{reason} (counter; reasons as in bulkhead.Reason)
//	afloat_bulkhead_queue_wait_seconds (histogram; requests admitted at once count as 0)
//	afloat_bulkhead_baseline_seconds (gauge; adaptive limit only)
//
// In-flight concurrency is the signal to watch: it keeps rising after an
// overload while the throughput looks normal. The collector is safe for
// concurrent use, as the bulkhead is.
func NewCollector(b *bulkhead.Bulkhead, name string) prometheus.Collector {
	labels := prometheus.Labels{"bulkhead": name}
	d := func(metric, help string, variable ...string) *prometheus.Desc {
		return prometheus.NewDesc("afloat_bulkhead_"+metric, help, variable, labels)
	}
	return &collector{
		b:         b,
		limit:     d("limit", "Concurrency limit: requests allowed inside at once."),
		inflight:  d("inflight", "Requests inside now."),
		queued:    d("queued", "Requests waiting in the queue now."),
		baseline:  d("baseline_seconds", "Adaptive limit: latency inside with nobody queueing."),
		admitted:  d("admitted_total", "Requests granted a permit, at once or after waiting."),
		completed: d("completed_total", "Requests that released their permit."),
		rejected:  d("rejected_total", "Requests refused, by reason.", "reason"),
		wait:      d("queue_wait_seconds", "Time waited in the queue before admission."),
	}
}

func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.limit, c.inflight, c.queued, c.baseline, c.admitted, c.completed, c.rejected, c.wait} {
		ch <- d
	}
}

func (c *collector) Collect(ch chan<- prometheus.Metric) {
	st := c.b.Stats()
	ch <- prometheus.MustNewConstMetric(c.limit, prometheus.GaugeValue, float64(st.Limit))
	ch <- prometheus.MustNewConstMetric(c.inflight, prometheus.GaugeValue, float64(st.InFlight))
	ch <- prometheus.MustNewConstMetric(c.queued, prometheus.GaugeValue, float64(st.Queued))
	if base, ok := c.b.Baseline(); ok {
		ch <- prometheus.MustNewConstMetric(c.baseline, prometheus.GaugeValue, base.Seconds())
	}
	ch <- prometheus.MustNewConstMetric(c.admitted, prometheus.CounterValue, float64(st.Admitted))
	ch <- prometheus.MustNewConstMetric(c.completed, prometheus.CounterValue, float64(st.Completed))
	for r, n := range st.Rejected {
		ch <- prometheus.MustNewConstMetric(c.rejected, prometheus.CounterValue, float64(n), string(r))
	}

	// The requests admitted at once waited 0 s: the first bucket's.
	immediate := uint64(0)
	if st.Admitted > st.Waited {
		immediate = st.Admitted - st.Waited
	}
	buckets := make(map[float64]uint64, len(st.Waits.Bounds))
	cum := immediate
	for i, ub := range st.Waits.Bounds {
		cum += st.Waits.Counts[i]
		buckets[ub] = cum
	}
	ch <- prometheus.MustNewConstHistogram(c.wait, immediate+st.Waited, st.Waits.Sum, buckets)
}
