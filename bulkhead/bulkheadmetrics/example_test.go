package bulkheadmetrics_test

import (
	"context"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/afloat/afloat/bulkhead"
	"github.com/afloat/afloat/bulkhead/bulkheadmetrics"
)

// A bulkhead of one, full: the second request is refused, and the scrape
// says so.
func Example() {
	b, _ := bulkhead.New(1)
	reg := prometheus.NewRegistry()
	reg.MustRegister(bulkheadmetrics.NewCollector(b, "api"))

	p, _ := b.Acquire(context.Background())
	_, err := b.Acquire(context.Background())
	fmt.Println(bulkhead.ReasonOf(err))
	p.Release()

	mfs, _ := reg.Gather()
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			switch mf.GetName() {
			case "afloat_bulkhead_admitted_total", "afloat_bulkhead_completed_total":
				fmt.Println(mf.GetName(), m.GetCounter().GetValue())
			case "afloat_bulkhead_rejected_total":
				if v := m.GetCounter().GetValue(); v > 0 {
					fmt.Println(mf.GetName(), m.GetLabel()[1].GetValue(), v)
				}
			}
		}
	}
	// Output:
	// queue_full
	// afloat_bulkhead_admitted_total 1
	// afloat_bulkhead_completed_total 1
	// afloat_bulkhead_rejected_total queue_full 1
}
