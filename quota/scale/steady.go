package scale

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"
)

// Steady is the cluster measured over a window of steady load: the
// agents' renewals, etcd's writes, and the processes' CPU and memory.
type Steady struct {
	Window time.Duration `json:"window_ns"`
	// Renewals and Failed are the renewals a second granted and failed,
	// summed over the regions (the agents' renewal histograms' counts);
	// P50 and P99 are the granted ones' latency, from the histograms'
	// buckets as Prometheus's histogram_quantile reads them (0.5 ms to
	// 10 s; −1 without renewals).
	Renewals float64       `json:"renewals_per_s"`
	Failed   float64       `json:"failed_per_s"`
	P50      time.Duration `json:"renewal_p50_ns"`
	P99      time.Duration `json:"renewal_p99_ns"`
	// Grants are the grants a second the agents received, by outcome
	// (accepted: installed; kept: the lease in use, unwritten; …).
	Grants map[string]float64 `json:"grants_per_s"`
	// Etcd's writes a second: raft proposals committed, multi-operation
	// transactions, puts; and its database's size at the end.
	EtcdProposals float64 `json:"etcd_proposals_per_s"`
	EtcdTxns      float64 `json:"etcd_txns_per_s"`
	EtcdPuts      float64 `json:"etcd_puts_per_s"`
	EtcdDBBytes   float64 `json:"etcd_db_bytes"`
	// Leader is the coordinator that led at the window's start.
	Leader string `json:"leader"`
	// CPU is each process's CPU use over the window, in cores; RSS its
	// resident memory at the end, by process name.
	CPU map[string]float64 `json:"cpu_cores"`
	RSS map[string]int64   `json:"rss_bytes"`
	// ScrapeBytes and ScrapeTook are the largest agent scrape and the
	// longest one: with many tenants the scrapes are large, and what they
	// cost the agents is inside the window's edges.
	ScrapeBytes int64         `json:"scrape_bytes"`
	ScrapeTook  time.Duration `json:"scrape_took_ns"`
	// Errors are the scrapes that failed.
	Errors []string `json:"errors,omitempty"`
}

// MeasureSteady measures the cluster over window: it scrapes every
// agent and etcd's member 0, and reads /proc, at the window's start and
// at its end.
func (c *Cluster) MeasureSteady(ctx context.Context, s *Sampler, window time.Duration) Steady {
	st := Steady{Window: window, Grants: map[string]float64{}, CPU: map[string]float64{}, RSS: map[string]int64{}, P50: -1, P99: -1}
	if k := c.leader(ctx); k >= 0 {
		st.Leader = c.Coordinators[k].Name
	}
	read := func() ([]AgentMetrics, EtcdMetrics, map[string]Usage, time.Time) {
		at := time.Now()
		use := s.Snapshot()
		ams := make([]AgentMetrics, len(c.Agents))
		errs := make([]error, len(c.Agents))
		var wg sync.WaitGroup
		for i := range c.Agents {
			wg.Go(func() { ams[i], errs[i] = c.ScrapeAgent(ctx, i) })
		}
		em, err := c.ScrapeEtcd(ctx, 0)
		wg.Wait()
		for _, e := range append(errs, err) {
			if e != nil {
				st.Errors = append(st.Errors, e.Error())
			}
		}
		return ams, em, use, at
	}
	a0, e0, u0, t0 := read()
	select {
	case <-ctx.Done():
	case <-time.After(window):
	}
	a1, e1, u1, t1 := read()
	var granted Histogram
	for i := range c.Agents {
		if a0[i].At.IsZero() || a1[i].At.IsZero() {
			continue
		}
		dt := a1[i].At.Sub(a0[i].At).Seconds()
		g := a1[i].Renewals["granted"].Sub(a0[i].Renewals["granted"])
		granted = granted.Add(g)
		st.Renewals += g.Count / dt
		st.Failed += a1[i].Renewals["failed"].Sub(a0[i].Renewals["failed"]).Count / dt
		for o, n := range a1[i].Grants {
			st.Grants[o] += (n - a0[i].Grants[o]) / dt
		}
		for _, m := range []AgentMetrics{a0[i], a1[i]} {
			st.ScrapeBytes, st.ScrapeTook = max(st.ScrapeBytes, m.Bytes), max(st.ScrapeTook, m.Took)
		}
	}
	if q := granted.Quantile(0.5); !math.IsNaN(q) {
		st.P50 = time.Duration(q * float64(time.Second))
	}
	if q := granted.Quantile(0.99); !math.IsNaN(q) {
		st.P99 = time.Duration(q * float64(time.Second))
	}
	if dt := e1.At.Sub(e0.At).Seconds(); dt > 0 && !e0.At.IsZero() {
		st.EtcdProposals = (e1.Proposals - e0.Proposals) / dt
		st.EtcdTxns = (e1.Txns - e0.Txns) / dt
		st.EtcdPuts = (e1.Puts - e0.Puts) / dt
		st.EtcdDBBytes = e1.DBBytes
	}
	for _, p := range c.Processes() {
		if v := CPUShare(u0, u1, p.Name, t1.Sub(t0)); v >= 0 {
			st.CPU[p.Name] = v
		}
		if u, ok := u1[p.Name]; ok {
			st.RSS[p.Name] = u.RSS
		}
	}
	return st
}

func (st Steady) String() string {
	ms := func(d time.Duration) string {
		if d < 0 {
			return "–"
		}
		return fmt.Sprintf("%.1f ms", float64(d)/1e6)
	}
	return fmt.Sprintf("%.0f renewals/s granted (%.0f/s failed), p50 %s, p99 %s; etcd %.0f proposals/s, %.0f txns/s, %.0f puts/s",
		st.Renewals, st.Failed, ms(st.P50), ms(st.P99), st.EtcdProposals, st.EtcdTxns, st.EtcdPuts)
}

// errScrapes is returned when a window's scrapes failed.
var errScrapes = errors.New("scale: scrapes failed")

// Err is nil when every scrape of the window answered.
func (st Steady) Err() error {
	if len(st.Errors) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %v", errScrapes, st.Errors)
}
