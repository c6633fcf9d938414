package opstest

import (
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
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

// OpenLoop calls f at rate calls a second for d, from workers goroutines,
// and returns the latencies of the calls that succeeded (from when a
// worker sent each), the count of those that failed, and the lag of the
// sends behind their schedule: a backlog (too few workers, a stalled
// server) shows there, so that a latency measured from the send cannot
// hide it (coordinated omission).
func OpenLoop(rate float64, d time.Duration, workers int, f func(i int) error) (lat, lag []time.Duration, failed int64, elapsed time.Duration) {
	var mu sync.Mutex
	var fails atomic.Int64
	type job struct {
		i  int
		at time.Time
	}
	jobs := make(chan job, 1<<16)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			var mine, late []time.Duration
			for j := range jobs {
				t0 := time.Now()
				late = append(late, t0.Sub(j.at))
				if err := f(j.i); err != nil {
					fails.Add(1)
					continue
				}
				mine = append(mine, time.Since(t0))
			}
			mu.Lock()
			lat = append(lat, mine...)
			lag = append(lag, late...)
			mu.Unlock()
		})
	}
	start := time.Now()
	n := int(rate * d.Seconds())
	for i := range n {
		at := start.Add(time.Duration(float64(i) / rate * float64(time.Second)))
		if w := time.Until(at); w > 0 {
			time.Sleep(w)
		}
		jobs <- job{i, at}
	}
	close(jobs)
	wg.Wait()
	elapsed = time.Since(start)
	slices.Sort(lat)
	slices.Sort(lag)
	return lat, lag, fails.Load(), elapsed
}

// Pct is the p quantile of sorted latencies.
func Pct(lat []time.Duration, p float64) time.Duration {
	if len(lat) == 0 {
		return 0
	}
	return lat[min(len(lat)-1, int(p*float64(len(lat))))]
}
