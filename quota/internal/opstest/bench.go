package opstest

import (
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/afloat/afloat/internal/loadgen"
)

// The load benchmarks measure the services over loopback HTTP; they run
// only when asked (AFLOAT_QUOTA_BENCH=1), are bounded in time, and print
// what they measured: docs/benchmarks.md quotes them.

// BenchOnly skips a load benchmark unless AFLOAT_QUOTA_BENCH is set.
func BenchOnly(t testing.TB) {
	if os.Getenv("AFLOAT_QUOTA_BENCH") == "" {
		t.Skip("a load benchmark: AFLOAT_QUOTA_BENCH=1 to run it")
	}
}

// Load is what OpenLoop measured, each list sorted: Lat, the latency of
// each call that succeeded from when a worker sent it; Sched, from when
// it was scheduled — what a caller waits, a backlog included (too few
// workers, a stalled server, a late generator), so that it cannot hide
// (coordinated omission); Lag, how far each send was behind its
// schedule. (For a service's own network path, internal/loadgen's Spin
// is the sharper instrument; OpenLoop drives Go clients.)
type Load struct {
	Lat, Sched, Lag []time.Duration
	Failed          int64
	Elapsed         time.Duration
}

// OpenLoop calls f at rate calls a second for d, from workers goroutines,
// each call scheduled at start + i/rate and sent by the first free worker.
func OpenLoop(rate float64, d time.Duration, workers int, f func(i int) error) Load {
	var mu sync.Mutex
	var fails atomic.Int64
	type job struct {
		i  int
		at time.Time
	}
	jobs := make(chan job, 1<<16)
	var out Load
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			var mine, sched, late []time.Duration
			for j := range jobs {
				t0 := time.Now()
				late = append(late, t0.Sub(j.at))
				if err := f(j.i); err != nil {
					fails.Add(1)
					continue
				}
				t1 := time.Now()
				mine = append(mine, t1.Sub(t0))
				sched = append(sched, t1.Sub(j.at))
			}
			mu.Lock()
			out.Lat = append(out.Lat, mine...)
			out.Sched = append(out.Sched, sched...)
			out.Lag = append(out.Lag, late...)
			mu.Unlock()
		})
	}
	start := time.Now()
	n := int(rate * d.Seconds())
	for i := range n {
		at := start.Add(time.Duration(float64(i) / rate * float64(time.Second)))
		waitUntil(at)
		jobs <- job{i, at}
	}
	close(jobs)
	wg.Wait()
	out.Elapsed = time.Since(start)
	slices.Sort(out.Lat)
	slices.Sort(out.Sched)
	slices.Sort(out.Lag)
	out.Failed = fails.Load()
	return out
}

// Pct is the p quantile of sorted latencies.
func Pct(lat []time.Duration, p float64) time.Duration { return loadgen.Pct(lat, p) }
