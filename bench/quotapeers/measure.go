package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"
)

// bin is the resolution admissions are counted at. A window aligned to
// bins is measured exactly; an unaligned one can exceed the aligned ones
// around it by at most 2·R·bin (1 token at R 500/s).
const bin = time.Millisecond

// schedule is the traffic and the faults, the same for all three systems.
type schedule struct {
	Duration, Shift, Partition, Heal time.Duration
	Hot, Cut, Owner                  int       // regions: where traffic shifts, which is cut off, where the coordinator (key owner) runs
	Before, After                    []float64 // requests a second offered in each region before and after the shift
}

func (s schedule) json() scheduleJSON {
	m := func(xs []float64) map[string]float64 {
		o := map[string]float64{}
		for i, x := range xs {
			o[regionNames[i]] = x
		}
		return o
	}
	return scheduleJSON{
		DurationS: s.Duration.Seconds(), ShiftS: s.Shift.Seconds(), PartitionS: s.Partition.Seconds(), HealS: s.Heal.Seconds(),
		Hot: regionNames[s.Hot], Cut: regionNames[s.Cut], Owner: regionNames[s.Owner], Before: m(s.Before), After: m(s.After),
	}
}

// arrivals is how many requests region r has been offered by t.
func (s schedule) arrivals(r int, t time.Duration) int {
	before := min(t, s.Shift).Seconds() * s.Before[r]
	after := max(0, t-s.Shift).Seconds() * s.After[r]
	return int(before + after)
}

type recorder struct {
	sc       schedule
	admitted [][]atomic.Int64 // [region][bin], by when the decision came back
	offered  [][]atomic.Int64 // [region][bin], by when the request was due
	lat      []time.Duration  // from the schedule, filled once drive returns
}

func newRecorder(sc schedule) *recorder {
	n := int(sc.Duration / bin)
	r := &recorder{sc: sc}
	for range regionNames {
		r.admitted = append(r.admitted, make([]atomic.Int64, n))
		r.offered = append(r.offered, make([]atomic.Int64, n))
	}
	return r
}

// due is when region r's k-th request (from 0) is scheduled: arrivals
// inverted.
func (s schedule) due(r, k int) time.Duration {
	x := float64(k + 1)
	if first := s.Shift.Seconds() * s.Before[r]; x <= first {
		return time.Duration(x / s.Before[r] * float64(time.Second))
	} else if s.After[r] > 0 {
		return s.Shift + time.Duration((x-first)/s.After[r]*float64(time.Second))
	}
	return s.Duration
}

// drive offers each region its schedule's requests, open-loop, to every
// system at once: one pacer releases each request at its scheduled time
// (to the runtime timer's resolution, about a millisecond) to each system on a goroutine of its own, however many are
// still waiting for an answer, and its latency runs from when it was
// scheduled to when its decision came back — what a caller waits,
// including any time the generator or the service fell behind.
func drive(ctx context.Context, start time.Time, systems []system, sc schedule, recs []*recorder) {
	nbins := len(recs[0].admitted[0])
	type lats struct {
		mu  sync.Mutex
		lat []time.Duration
	}
	ls := make([]lats, len(systems))
	var calls sync.WaitGroup
	next := make([]int, len(regionNames)) // each region's next request
	for ctx.Err() == nil {
		// The next request due, over the regions.
		r, at := -1, sc.Duration
		for i := range regionNames {
			if d := sc.due(i, next[i]); d < at {
				r, at = i, d
			}
		}
		if r < 0 {
			break
		}
		next[r]++
		// The runtime's sleep, not a thread's nanosleep: a goroutine back
		// from a nanosleep queues for a P behind every call in flight,
		// which under load delays the pacer far more than a late timer.
		if w := time.Until(start.Add(at)); w > 0 {
			time.Sleep(w)
		}
		for i, s := range systems {
			recs[i].offered[r][int(at/bin)].Add(1)
			calls.Go(func() {
				ok := s.allow(ctx, r)
				t1 := time.Now()
				if b := int(t1.Sub(start) / bin); ok && b < nbins {
					recs[i].admitted[r][b].Add(1)
				}
				ls[i].mu.Lock()
				ls[i].lat = append(ls[i].lat, t1.Sub(start.Add(at)))
				ls[i].mu.Unlock()
			})
		}
	}
	calls.Wait()
	for i := range systems {
		recs[i].lat = ls[i].lat
	}
}

func (rec *recorder) offeredPerSecond() []float64 {
	return perSecond(rec.offered, nil)
}

// perSecond sums bins into seconds, over the regions listed (nil: all).
func perSecond(bins [][]atomic.Int64, regions []int) []float64 {
	if regions == nil {
		for r := range bins {
			regions = append(regions, r)
		}
	}
	per := int(time.Second / bin)
	out := make([]float64, (len(bins[0])+per-1)/per)
	for _, r := range regions {
		for b := range bins[r] {
			out[b/per] += float64(bins[r][b].Load())
		}
	}
	return out
}

func seconds(sc schedule) []float64 {
	n := int(math.Ceil(sc.Duration.Seconds()))
	out := make([]float64, n)
	for i := range out {
		out[i] = float64(i + 1)
	}
	return out
}

func (rec *recorder) summary(id string, t tenant, sc schedule) systemJSON {
	n := len(rec.admitted[0])
	total := make([]float64, n)
	for r := range rec.admitted {
		for b := range total {
			total[b] += float64(rec.admitted[r][b].Load())
		}
	}
	// The worst window: max over a < b of (P[b] − P[a]) − R·(b − a)·bin − B,
	// P the admissions before a bin: one pass keeping min(P[a] − R·a·bin).
	// excess is the worst admitted − R·Δ over windows ending in each second.
	perTok := t.Rate * bin.Seconds()
	per := int(time.Second / bin)
	excess := make([]float64, (n+per-1)/per)
	worst, worstAt := math.Inf(-1), 0.0
	p, low := 0.0, 0.0
	for b := range n {
		p += total[b]
		v := p - perTok*float64(b+1)
		if e := v - low; e > worst {
			worst, worstAt = e, float64(b+1)*bin.Seconds()
		}
		excess[b/per] = max(excess[b/per], v-low)
		low = min(low, v)
	}
	util := func(from, to time.Duration) float64 {
		a, z := int(from/bin), min(n, int(to/bin))
		sum := 0.0
		for _, x := range total[a:z] {
			sum += x
		}
		return sum / (t.Rate * float64(z-a) * bin.Seconds())
	}
	// hot90: from the shift, the first time the hot region's admissions
	// over the trailing 250 ms reach 90 % of R over it.
	const trail = 250 * time.Millisecond
	var hot90 *float64
	k := int(trail / bin)
	hot := rec.admitted[sc.Hot]
	sum := 0.0
	for b := int(sc.Shift / bin); b < n; b++ {
		sum += float64(hot[b].Load())
		if b-k >= int(sc.Shift/bin) {
			sum -= float64(hot[b-k].Load())
		}
		if sum >= 0.9*t.Rate*trail.Seconds() {
			v := float64(b+1)*bin.Seconds() - sc.Shift.Seconds()
			hot90 = &v
			break
		}
	}
	slices.Sort(rec.lat)
	pct := func(q float64) float64 {
		if len(rec.lat) == 0 {
			return 0
		}
		return float64(rec.lat[min(len(rec.lat)-1, int(q*float64(len(rec.lat))))]) / float64(time.Microsecond)
	}
	var admitted, offered int64
	for r := range rec.admitted {
		for b := range rec.admitted[r] {
			admitted += rec.admitted[r][b].Load()
			offered += rec.offered[r][b].Load()
		}
	}
	return systemJSON{
		ID: id, WorstWindow: worst - t.Burst, WorstAtS: worstAt,
		Utilization: utilJSON{
			Before: util(0, sc.Shift), Shift: util(sc.Shift, sc.Partition),
			Partition: util(sc.Partition, sc.Heal), Healed: util(sc.Heal, sc.Duration), Whole: util(0, sc.Duration),
		},
		Hot90S:   hot90,
		Latency:  latJSON{P50: pct(0.5), P99: pct(0.99), P999: pct(0.999), Max: pct(1), N: len(rec.lat)},
		Admitted: admitted, Offered: offered,
		PerSecond: perSecond(rec.admitted, nil), HotPerSecond: perSecond(rec.admitted, []int{sc.Hot}),
		Excess: excess,
	}
}

type result struct {
	Date       string          `json:"date"`
	Command    string          `json:"command"`
	Go         string          `json:"go"`
	Gubernator string          `json:"gubernator"`
	CPUs       int             `json:"cpus"`
	LoadBefore string          `json:"load_before"`
	LoadAfter  string          `json:"load_after"`
	Tenant     tenant          `json:"tenant"`
	LeaseS     float64         `json:"lease_s"`
	Schedule   scheduleJSON    `json:"schedule"`
	BinMS      float64         `json:"bin_ms"`
	Seconds    []float64       `json:"seconds"` // the end of each second of the series
	Offered    []float64       `json:"offered"` // requests offered in each second, all regions
	Systems    []systemJSON    `json:"systems"`
	Ratelimit  string          `json:"ratelimit"` // envoyproxy/ratelimit's version
	Throughput *throughputJSON `json:"throughput,omitempty"`
}

type scheduleJSON struct {
	DurationS  float64            `json:"duration_s"`
	ShiftS     float64            `json:"shift_s"`
	PartitionS float64            `json:"partition_s"`
	HealS      float64            `json:"heal_s"`
	Hot        string             `json:"hot"`
	Cut        string             `json:"cut"`
	Owner      string             `json:"owner"`
	Before     map[string]float64 `json:"before"`
	After      map[string]float64 `json:"after"`
}

type systemJSON struct {
	ID           string    `json:"id"`
	WorstWindow  float64   `json:"worst_window"` // max over windows of admitted − (R·Δ + B), tokens
	WorstAtS     float64   `json:"worst_at_s"`   // where that window ends
	Utilization  utilJSON  `json:"utilization"`  // admitted / (R·Δ) in each phase; demand is 2 R throughout
	Hot90S       *float64  `json:"hot90_s"`      // seconds from the shift; null: never
	Latency      latJSON   `json:"latency_us"`
	Admitted     int64     `json:"admitted"`
	Offered      int64     `json:"offered"`
	PerSecond    []float64 `json:"per_second"`     // admitted in each second, all regions
	HotPerSecond []float64 `json:"hot_per_second"` // admitted in each second, the hot region
	Excess       []float64 `json:"excess"`         // worst admitted − R·Δ of the windows ending in each second; the bound is B
}

type utilJSON struct {
	Before    float64 `json:"before"`
	Shift     float64 `json:"shift"`
	Partition float64 `json:"partition"`
	Healed    float64 `json:"healed"`
	Whole     float64 `json:"whole"`
}

type latJSON struct {
	P50  float64 `json:"p50"`
	P99  float64 `json:"p99"`
	P999 float64 `json:"p999"`
	Max  float64 `json:"max"`
	N    int     `json:"n"`
}

func printTable(w io.Writer, res *result) {
	fmt.Fprintf(w, "%s, %s, %d CPUs, load %s → %s; R %.0f/s, B %.0f; %gs: shift to %s at %gs, %s cut off at %gs, healed at %gs\n",
		res.Date, res.Go, res.CPUs, res.LoadBefore, res.LoadAfter, res.Tenant.Rate, res.Tenant.Burst, res.Schedule.DurationS,
		res.Schedule.Hot, res.Schedule.ShiftS, res.Schedule.Cut, res.Schedule.PartitionS, res.Schedule.HealS)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "system\tworst window (tokens)\tat s\tutil before\tafter shift\tpartition\thealed\thot 90 % R after (s)\tp50 µs\tp99 µs\tdecisions\t")
	for _, s := range res.Systems {
		h := "never"
		if s.Hot90S != nil {
			h = fmt.Sprintf("%.2f", *s.Hot90S)
		}
		fmt.Fprintf(tw, "%s\t%+.0f\t%.1f\t%.0f%%\t%.0f%%\t%.0f%%\t%.0f%%\t%s\t%.1f\t%.1f\t%d\t\n", s.ID, s.WorstWindow, s.WorstAtS,
			100*s.Utilization.Before, 100*s.Utilization.Shift, 100*s.Utilization.Partition, 100*s.Utilization.Healed, h,
			s.Latency.P50, s.Latency.P99, s.Latency.N)
	}
	tw.Flush()
}
