package live

import (
	"context"
	"io"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

func newLoadClient() *http.Client {
	return &http.Client{Transport: &http.Transport{
		MaxIdleConns: 20000, MaxIdleConnsPerHost: 20000, IdleConnTimeout: 30 * time.Second,
	}}
}

// call makes one request and reports its status and latency; status 0 is
// a give-up at the deadline.
func call(ctx context.Context, client *http.Client, url string, deadline time.Duration) (int, time.Duration) {
	ctx, cancel := context.WithTimeout(ctx, deadline)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", url, nil)
	req.Header.Set(deadlineHeader, strconv.Itoa(int(deadline.Milliseconds())))
	start := time.Now()
	res, err := client.Do(req)
	if err != nil {
		return 0, time.Since(start)
	}
	io.Copy(io.Discard, res.Body)
	res.Body.Close()
	return res.StatusCode, time.Since(start)
}

// noLoad measures latency with one request at a time.
func noLoad(ctx context.Context, client *http.Client, url string, n int) (p50, p99 time.Duration) {
	var ds []time.Duration
	for range n {
		if _, d := call(ctx, client, url, time.Minute); ctx.Err() == nil {
			ds = append(ds, d)
		}
	}
	slices.Sort(ds)
	if len(ds) == 0 {
		return 0, 0
	}
	return ds[len(ds)/2], ds[len(ds)*99/100]
}

// capacity measures throughput with a closed loop of workers.
func capacity(ctx context.Context, client *http.Client, url string, workers int, d time.Duration) float64 {
	var done atomic.Int64
	start := time.Now()
	stop := start.Add(d)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for time.Now().Before(stop) && ctx.Err() == nil {
				if status, _ := call(ctx, client, url, time.Minute); status == http.StatusOK {
					done.Add(1)
				}
			}
		})
	}
	wg.Wait()
	return float64(done.Load()) / time.Since(start).Seconds()
}

// outcome is one request of the open loop.
type outcome struct {
	sent    time.Duration // since the start of the run
	status  int
	latency time.Duration
}

// phaseEnds returns when each phase ends, from the start of the run.
func phaseEnds(phases []Phase) []time.Duration {
	var ends []time.Duration
	at := time.Duration(0)
	for _, ph := range phases {
		at += ph.Duration
		ends = append(ends, at)
	}
	return ends
}

// runPhases sends the open-loop load of every phase, at each phase's load
// × capacity, and returns what every request saw.
func runPhases(ctx context.Context, client *http.Client, url string, capacity float64, cfg Config) []outcome {
	var mu sync.Mutex
	var outs []outcome
	var wg sync.WaitGroup
	start := time.Now()
	ends := phaseEnds(cfg.Phases)
	// One tick a millisecond; each sends the requests due by then, so the
	// rate holds even when the scheduler is late.
	rate := func(t time.Duration) float64 {
		for i, end := range ends {
			if t < end {
				return cfg.Phases[i].Load * capacity
			}
		}
		return 0
	}
	total := ends[len(ends)-1]
	ticker := time.NewTicker(time.Millisecond)
	defer ticker.Stop()
	owed := 0.0
	last := time.Duration(0)
	for now := time.Since(start); now < total && ctx.Err() == nil; now = time.Since(start) {
		owed += rate(now) * (now - last).Seconds()
		last = now
		for ; owed >= 1; owed-- {
			sent := time.Since(start)
			wg.Go(func() {
				status, lat := call(ctx, client, url, cfg.Deadline)
				mu.Lock()
				outs = append(outs, outcome{sent: sent, status: status, latency: lat})
				mu.Unlock()
			})
		}
		<-ticker.C
	}
	wg.Wait()
	return outs
}

// cpuShare returns the share of [from, to) the server spent on its core,
// from samples of its CPU time; −1 if the samples do not cover the span.
func cpuShare(samples []cpuSample, from, to time.Duration) float64 {
	at := func(t time.Duration) (time.Duration, bool) {
		// samples[i-1].At ≤ t < samples[i].At
		i := sort.Search(len(samples), func(k int) bool { return samples[k].At > t })
		switch {
		case i == 0:
			return 0, false
		case i == len(samples):
			if last := samples[i-1]; last.At == t {
				return last.CPU, true
			}
			return 0, false
		}
		a, b := samples[i-1], samples[i]
		f := float64(t-a.At) / float64(b.At-a.At)
		return a.CPU + time.Duration(f*float64(b.CPU-a.CPU)), true
	}
	c0, ok0 := at(from)
	c1, ok1 := at(to)
	if !ok0 || !ok1 || to <= from {
		return -1
	}
	return float64(c1-c0) / float64(to-from)
}

// summarize sums up each phase of one protection's run, against its
// calibration, and the recovery after each overload.
func summarize(outs []outcome, cal Calibration, cfg Config, samples []cpuSample) ([]PhaseReport, map[string]time.Duration) {
	recoveries := map[string]time.Duration{}
	var phases []PhaseReport
	ends := phaseEnds(cfg.Phases)
	begin := time.Duration(0)
	for i, ph := range cfg.Phases {
		end := ends[i]
		pr := PhaseReport{Name: ph.Name, Load: ph.Load, Planned: int(ph.Load * cal.Capacity * ph.Duration.Seconds())}
		var lat []time.Duration
		for _, o := range outs {
			if o.sent < begin || o.sent >= end {
				continue
			}
			pr.Sent++
			switch {
			case o.status == http.StatusOK && o.latency <= cfg.Deadline:
				pr.Good++
				lat = append(lat, o.latency)
			case o.status == http.StatusServiceUnavailable:
				pr.Rejected++
			default:
				pr.Timeouts++
			}
		}
		if cal.Capacity > 0 {
			pr.Goodput = float64(pr.Good) / (end - begin).Seconds() / cal.Capacity
		}
		if len(lat) > 0 {
			slices.Sort(lat)
			pr.P50, pr.P99 = lat[len(lat)/2], lat[len(lat)*99/100]
		}
		pr.CPUShare = cpuShare(samples, begin, end)
		phases = append(phases, pr)
		if i > 0 && cfg.Phases[i-1].Load > 1 && ph.Load < 1 {
			recoveries[cfg.Phases[i-1].Name] = recovery(outs, begin, end, 2*cal.NoLoadP99, cfg.Deadline)
		}
		begin = end
	}
	return phases, recoveries
}

// recovery finds the first moment after from such that the second after it
// has every answer within limit and no give-up; −1 if none before to.
func recovery(outs []outcome, from, to, limit, deadline time.Duration) time.Duration {
	const bucket = 100 * time.Millisecond
	n := int((to - from) / bucket)
	if n <= 0 {
		return -1
	}
	bad := make([]bool, n)
	for _, o := range outs {
		if o.sent < from || o.sent >= to {
			continue
		}
		i := int((o.sent - from) / bucket)
		if i >= n {
			continue
		}
		if o.status == 0 || o.latency > deadline || (o.status == http.StatusOK && o.latency > limit) {
			bad[i] = true
		}
	}
	for i := 0; i+10 <= n; i++ {
		if !slices.Contains(bad[i:i+10], true) {
			return time.Duration(i) * bucket
		}
	}
	return -1
}
