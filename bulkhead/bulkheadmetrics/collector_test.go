package bulkheadmetrics_test

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/afloat/afloat/bulkhead"
	"github.com/afloat/afloat/bulkhead/bulkheadmetrics"
	"github.com/afloat/afloat/internal/vclock"
)

type vc struct{ *vclock.Clock }

func (c vc) AfterFunc(d time.Duration, f func()) bulkhead.Timer { return c.Clock.AfterFunc(d, f) }

func newVirtual(t *testing.T, limit int, opts ...bulkhead.Option) (*bulkhead.Bulkhead, *vclock.Clock) {
	t.Helper()
	c := vclock.New(time.Unix(1000, 0))
	b, err := bulkhead.New(limit, append([]bulkhead.Option{bulkhead.WithClock(vc{c})}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return b, c
}

// ticket records what Submit answered.
type ticket struct {
	permit bulkhead.Permit
	err    error
}

func submit(b *bulkhead.Bulkhead) *ticket {
	t := &ticket{}
	b.Submit(bulkhead.PriorityNormal, time.Time{}, func(pm bulkhead.Permit, err error) { t.permit, t.err = pm, err })
	return t
}

func TestMetrics(t *testing.T) {
	b, c := newVirtual(t, 1, bulkhead.WithQueue(1))
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(bulkheadmetrics.NewCollector(b, "api"))
	first := submit(b)
	w := submit(b)
	submit(b) // refused: queue full
	c.Advance(30 * time.Millisecond)
	first.permit.Release()
	want := `
# HELP afloat_bulkhead_admitted_total Requests granted a permit, at once or after waiting.
# TYPE afloat_bulkhead_admitted_total counter
afloat_bulkhead_admitted_total{bulkhead="api"} 2
# HELP afloat_bulkhead_inflight Requests inside now.
# TYPE afloat_bulkhead_inflight gauge
afloat_bulkhead_inflight{bulkhead="api"} 1
# HELP afloat_bulkhead_rejected_total Requests refused, by reason.
# TYPE afloat_bulkhead_rejected_total counter
afloat_bulkhead_rejected_total{bulkhead="api",reason="canceled"} 0
afloat_bulkhead_rejected_total{bulkhead="api",reason="deadline"} 0
afloat_bulkhead_rejected_total{bulkhead="api",reason="evicted"} 0
afloat_bulkhead_rejected_total{bulkhead="api",reason="max_wait"} 0
afloat_bulkhead_rejected_total{bulkhead="api",reason="queue_full"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want),
		"afloat_bulkhead_admitted_total", "afloat_bulkhead_inflight", "afloat_bulkhead_rejected_total"); err != nil {
		t.Fatal(err)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, mf := range mfs {
		if mf.GetName() != "afloat_bulkhead_queue_wait_seconds" {
			continue
		}
		found = true
		h := mf.GetMetric()[0].GetHistogram()
		// The first at once (0 s), the second after 30 ms: in the 50 ms
		// bucket, not the 25 ms one.
		if h.GetSampleCount() != 2 || math.Abs(h.GetSampleSum()-0.03) > 1e-9 || h.GetBucket()[0].GetCumulativeCount() != 1 {
			t.Fatalf("wait histogram %v", h)
		}
		for _, bk := range h.GetBucket() {
			want := uint64(1)
			if bk.GetUpperBound() >= 0.05 {
				want = 2
			}
			if bk.GetCumulativeCount() != want {
				t.Fatalf("wait histogram: %d at or under %v s, want %d", bk.GetCumulativeCount(), bk.GetUpperBound(), want)
			}
		}
	}
	if !found {
		t.Fatal("no afloat_bulkhead_queue_wait_seconds")
	}
	w.permit.Release()
}
