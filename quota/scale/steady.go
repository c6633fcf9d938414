package scale

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"time"
)

// Steady is the cluster measured over a window of steady load: the
// agents' renewals, etcd's writes, and the processes' CPU and memory.
type Steady struct {
	Window time.Duration `json:"window_ns"`
	// Renewals and Failed are the renewals a second answered with a
	// grant and failed (timed out, refused, unreachable), summed over the
	// regions; Installed and Kept the grants a second put into use and
	// answered with the lease in use (unwritten). From the agents' run
	// counters (GET /v1/status), cheap at any number of tenants; −1 when
	// an agent's could not be read.
	Renewals  float64 `json:"renewals_per_s"`
	Failed    float64 `json:"failed_per_s"`
	Installed float64 `json:"installed_per_s"`
	Kept      float64 `json:"kept_per_s"`
	// Calls are the renewal calls a second the agents sent (each carries
	// many renewals), and Failures the calls that failed whole and the
	// renewals refused one by one, a second, by reason (RunStats), those
	// above zero only.
	Calls    float64            `json:"calls_per_s"`
	Failures map[string]float64 `json:"failures_per_s,omitempty"`
	// P50 and P99 are the granted renewals' latency — from sending to the
	// answer, batching included — over the window, from the agents'
	// renewal histograms (GET /metrics) as Prometheus's
	// histogram_quantile reads them (buckets 0.5 ms to 10 s); −1 when no
	// agent's histogram could be read at both ends. Histograms says of
	// how many agents they are.
	P50        time.Duration `json:"renewal_p50_ns"`
	P99        time.Duration `json:"renewal_p99_ns"`
	Histograms int           `json:"histograms"`
	Agents     int           `json:"agents"`
	// Etcd's writes a second, on member 0: raft proposals committed,
	// multi-operation transactions, puts; and its database's size at the
	// end.
	EtcdProposals float64 `json:"etcd_proposals_per_s"`
	EtcdTxns      float64 `json:"etcd_txns_per_s"`
	EtcdPuts      float64 `json:"etcd_puts_per_s"`
	EtcdDBBytes   float64 `json:"etcd_db_bytes"`
	// FsyncP99 is member 0's write-ahead log's fsync p99 over the window
	// (−1 without fsyncs): a commit waits for one, so it floors every
	// write's latency.
	FsyncP99 time.Duration `json:"etcd_wal_fsync_p99_ns"`
	// Leader is the coordinator that led at the window's start.
	Leader string `json:"leader"`
	// CPU is each process's CPU use over the window, in cores; RSS its
	// resident memory at the end, by process name.
	CPU map[string]float64 `json:"cpu_cores"`
	RSS map[string]int64   `json:"rss_bytes"`
	// ScrapeBytes and ScrapeTook are the largest agent scrape and the
	// longest one: with many tenants a scrape is large, and what it costs
	// the agent falls inside the window's edges.
	ScrapeBytes int64         `json:"scrape_bytes"`
	ScrapeTook  time.Duration `json:"scrape_took_ns"`
	// Errors are the reads that failed.
	Errors []string `json:"errors,omitempty"`
}

// agentRead is one read of an agent: its run counters and its renewal
// histograms.
type agentRead struct {
	run             RunStats
	runAt           time.Time
	runErr, histErr error
	hist            AgentMetrics
}

// MeasureSteady measures the cluster over window: it reads every agent's
// run counters and renewal histograms, etcd's member 0's counters, and
// /proc, at the window's start and at its end.
func (c *Cluster) MeasureSteady(ctx context.Context, s *Sampler, window time.Duration) Steady {
	st := Steady{Window: window, Agents: len(c.Agents), Failures: map[string]float64{}, CPU: map[string]float64{}, RSS: map[string]int64{}, P50: -1, P99: -1, FsyncP99: -1}
	if k := c.leader(ctx); k >= 0 {
		st.Leader = c.Coordinators[k].Name
	}
	// edge is one end of the window: every agent, etcd, /proc.
	type edge struct {
		agents  []agentRead
		etcd    EtcdMetrics
		etcdErr error
		use     map[string]Usage
		at      time.Time
	}
	read := func() edge {
		e := edge{at: time.Now(), use: s.Snapshot(), agents: make([]agentRead, len(c.Agents))}
		var wg sync.WaitGroup
		for i := range c.Agents {
			wg.Go(func() {
				r := &e.agents[i]
				r.run, r.runAt, r.runErr = c.AgentRun(ctx, i)
				r.hist, r.histErr = c.ScrapeAgent(ctx, i)
			})
		}
		e.etcd, e.etcdErr = c.ScrapeEtcd(ctx, 0)
		wg.Wait()
		return e
	}
	start := read()
	select {
	case <-ctx.Done():
	case <-time.After(window):
	}
	end := read()
	r0, r1, e0, e1, u0, u1 := start.agents, end.agents, start.etcd, end.etcd, start.use, end.use
	var granted Histogram
	for i := range c.Agents {
		name := c.Agents[i].Name
		switch err := firstErr(r0[i].runErr, r1[i].runErr); {
		case err != nil:
			st.Errors = append(st.Errors, fmt.Sprintf("%s: run counters: %v", name, err))
			st.Renewals, st.Failed, st.Installed, st.Kept, st.Calls = -1, -1, -1, -1, -1
		case st.Renewals >= 0:
			dt := r1[i].runAt.Sub(r0[i].runAt).Seconds()
			st.Renewals += float64(r1[i].run.Renewals-r0[i].run.Renewals) / dt
			st.Failed += float64(r1[i].run.RenewFailures-r0[i].run.RenewFailures) / dt
			st.Installed += float64(r1[i].run.Installed-r0[i].run.Installed) / dt
			st.Kept += float64(r1[i].run.Kept-r0[i].run.Kept) / dt
			st.Calls += float64(r1[i].run.Batches-r0[i].run.Batches) / dt
			before := r0[i].run.failures()
			for k, n := range r1[i].run.failures() {
				if n > before[k] {
					st.Failures[k] += float64(n-before[k]) / dt
				}
			}
		}
		if err := firstErr(r0[i].histErr, r1[i].histErr); err != nil {
			st.Errors = append(st.Errors, fmt.Sprintf("%s: /metrics: %v", name, err))
		} else {
			granted = granted.Add(r1[i].hist.Renewals["granted"].Sub(r0[i].hist.Renewals["granted"]))
			st.Histograms++
		}
		for _, m := range []AgentMetrics{r0[i].hist, r1[i].hist} {
			st.ScrapeBytes, st.ScrapeTook = max(st.ScrapeBytes, m.Bytes), max(st.ScrapeTook, m.Took)
		}
	}
	if q := granted.Quantile(0.5); !math.IsNaN(q) {
		st.P50 = time.Duration(q * float64(time.Second))
	}
	if q := granted.Quantile(0.99); !math.IsNaN(q) {
		st.P99 = time.Duration(q * float64(time.Second))
	}
	if err := firstErr(start.etcdErr, end.etcdErr); err != nil {
		st.Errors = append(st.Errors, fmt.Sprintf("etcd m0: /metrics: %v", err))
		st.EtcdProposals, st.EtcdTxns, st.EtcdPuts = -1, -1, -1
	} else if dt := e1.At.Sub(e0.At).Seconds(); dt > 0 {
		st.EtcdProposals = (e1.Proposals - e0.Proposals) / dt
		st.EtcdTxns = (e1.Txns - e0.Txns) / dt
		st.EtcdPuts = (e1.Puts - e0.Puts) / dt
		st.EtcdDBBytes = e1.DBBytes
		if q := e1.Fsync.Sub(e0.Fsync).Quantile(0.99); !math.IsNaN(q) {
			st.FsyncP99 = time.Duration(q * float64(time.Second))
		}
	}
	for _, p := range c.Processes() {
		if v := CPUShare(u0, u1, p.Name, end.at.Sub(start.at)); v >= 0 {
			st.CPU[p.Name] = v
		}
		if u, ok := u1[p.Name]; ok {
			st.RSS[p.Name] = u.RSS
		}
	}
	return st
}

// FailureList is Failures as "calls_busy 3.2/s, refused_other 0.5/s",
// by name.
func (st Steady) FailureList() string {
	var out []string
	for k, v := range st.Failures {
		out = append(out, fmt.Sprintf("%s %.1f/s", k, v))
	}
	slices.Sort(out)
	return strings.Join(out, ", ")
}

func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

func (st Steady) String() string {
	var b strings.Builder
	if st.Renewals < 0 {
		b.WriteString("renewals unmeasured (an agent's run counters unread)")
	} else {
		fmt.Fprintf(&b, "%.0f renewals/s granted, %.0f/s failed (%.0f/s installed, %.0f/s kept) in %.0f calls/s", st.Renewals, st.Failed, st.Installed, st.Kept, st.Calls)
		if f := st.FailureList(); f != "" {
			fmt.Fprintf(&b, " (failed: %s)", f)
		}
	}
	switch {
	case st.Histograms == 0:
		b.WriteString("; latency unmeasured (no agent's /metrics read at both ends)")
	default:
		fmt.Fprintf(&b, "; p50 %s, p99 %s", Millis(st.P50), Millis(st.P99))
		if st.Histograms < st.Agents {
			fmt.Fprintf(&b, " (of %d agents)", st.Histograms)
		}
	}
	if st.EtcdProposals >= 0 {
		fmt.Fprintf(&b, "; etcd %.0f proposals/s, %.0f txns/s, %.0f puts/s, WAL fsync p99 %s", st.EtcdProposals, st.EtcdTxns, st.EtcdPuts, Millis(st.FsyncP99))
	}
	return b.String()
}

// Millis is d in milliseconds to a tenth, "–" for a negative d (not
// measured).
func Millis(d time.Duration) string {
	if d < 0 {
		return "–"
	}
	return fmt.Sprintf("%.1f ms", float64(d)/1e6)
}
