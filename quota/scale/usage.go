package scale

import (
	"context"
	"sync"
	"time"
)

// Sampler reads every process's /proc usage at an interval, and keeps
// the most memory each held (by name, across restarts). Start it with
// Cluster.Sample; safe for concurrent use.
type Sampler struct {
	c      *Cluster
	cancel context.CancelFunc
	done   chan struct{}

	mu   sync.Mutex
	peak map[string]int64
}

// Sample starts a Sampler reading every process every interval.
func (c *Cluster) Sample(interval time.Duration) *Sampler {
	ctx, cancel := context.WithCancel(context.Background())
	s := &Sampler{c: c, cancel: cancel, done: make(chan struct{}), peak: map[string]int64{}}
	go func() {
		defer close(s.done)
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			s.Snapshot()
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	return s
}

// Stop ends the sampling.
func (s *Sampler) Stop() { s.cancel(); <-s.done }

// Snapshot is every running process's usage now, by name; the peaks
// take it in.
func (s *Sampler) Snapshot() map[string]Usage {
	out := map[string]Usage{}
	for _, p := range s.c.Processes() {
		if u, err := p.Usage(); err == nil {
			out[p.Name] = u
		}
	}
	s.mu.Lock()
	for name, u := range out {
		s.peak[name] = max(s.peak[name], u.RSS, u.PeakRSS)
	}
	s.mu.Unlock()
	return out
}

// PeakRSS is the most resident memory the named process held in any of
// its runs, as far as the samples saw (with each run's own high-water
// mark, VmHWM, at every sample).
func (s *Sampler) PeakRSS(name string) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.peak[name]
}

// CPUShare is the CPU the named process used between two snapshots, in
// cores (1 is one core busy all the time); −1 when either snapshot lacks
// it or it restarted in between.
func CPUShare(before, after map[string]Usage, name string, elapsed time.Duration) float64 {
	a, ok1 := before[name]
	b, ok2 := after[name]
	if !ok1 || !ok2 || b.CPU < a.CPU || elapsed <= 0 {
		return -1
	}
	return float64(b.CPU-a.CPU) / float64(elapsed)
}
