package chaos

import (
	"time"

	"github.com/afloat/afloat/quota"
	"github.com/afloat/afloat/quota/eventlog"
)

// Timeline reads a run's event log into steps of a fixed length, for
// drawing it: per region the load the schedule offers, the tokens offered,
// admitted and admitted without a lease, whether it was cut off, and —
// from the run's sample events (Config.Sample, set to the step) — the
// lease it spends under and its balance at the end of each step; for the
// tenant, the worst window ending in each step, as its own eventlog.Checker
// computes it. It reads only events, like the checker. It is not safe for
// concurrent use.
type Timeline struct {
	Step    time.Duration
	Regions []string
	Steps   []Step

	chk     *eventlog.Checker
	tenant  string
	index   map[string]int
	demand  []float64 // tokens a second, by region index, in force since demandAt
	demandT int64
	cutFrom []int64 // when each region was cut off; −1 if it is not
	down    int64   // since when no coordinator serves; −1 while one does
	serving map[uint64]bool
	newest  uint64
	last    int64
	done    bool
}

// Step is one step of a Timeline.
type Step struct {
	Regions []RegionStep // in the order of Timeline.Regions
	// Excess is the most tokens admitted, beyond R·Δ, in a window ending
	// within the step (Δ its length, any start): the bound holds while it
	// stays at most B (plus regions·E in best-effort mode). 0 for the
	// empty window.
	Excess float64
	// Down: no coordinator could grant for some of the step (crashed, or
	// paused before a successor ran).
	Down bool
	// Epoch is the newest coordinator's epoch at the step's end.
	Epoch uint64
}

// RegionStep is one region's step.
type RegionStep struct {
	Demand   float64 // tokens a second the schedule offers, averaged over the step
	Offered  int64   // tokens requested in the step
	Admitted int64   // tokens admitted
	NoLease  int64   // of them, admitted without a lease (best-effort's allowance)
	Cut      bool    // cut off from the coordinator for some of the step
	// Sampled at the step's end: the lease spent under (0: none valid),
	// its rate (per second) and burst, and the bucket's balance.
	Lease   uint64
	Rate    quota.Micro
	Burst   quota.Micro
	Balance quota.Micro
}

// NewTimeline reads a run of the given length into steps of step (which
// should be the run's Config.Sample, so that each step has its sample).
func NewTimeline(regions []string, duration, step time.Duration) *Timeline {
	step = max(step, time.Millisecond)
	n := int((duration + step - 1) / step)
	tl := &Timeline{
		Step: step, Regions: regions, Steps: make([]Step, n), chk: eventlog.NewChecker(), index: map[string]int{},
		demand: make([]float64, len(regions)), cutFrom: make([]int64, len(regions)), serving: map[uint64]bool{}, down: -1,
	}
	for i, r := range regions {
		tl.index[r] = i
		tl.cutFrom[i] = -1
	}
	for k := range tl.Steps {
		tl.Steps[k].Regions = make([]RegionStep, len(regions))
	}
	return tl
}

// stepOf is the step holding time t (the last for t at the very end).
func (tl *Timeline) stepOf(t int64) int {
	return min(max(0, int(t/int64(tl.Step))), len(tl.Steps)-1)
}

// Write implements eventlog.Writer.
func (tl *Timeline) Write(e *eventlog.Event) {
	if len(tl.Steps) == 0 || tl.done {
		return
	}
	tl.chk.Write(e)
	tl.last = e.T
	i, regional := tl.index[e.Region]
	switch e.Kind {
	case eventlog.Start:
		tl.tenant = e.Tenant
	case eventlog.Admit, eventlog.Reject:
		if !regional {
			return
		}
		st := &tl.Steps[tl.stepOf(e.T)]
		rs := &st.Regions[i]
		rs.Offered += e.N
		if e.Kind == eventlog.Reject {
			return
		}
		rs.Admitted += e.N
		if !tl.chk.Spending(e.Tenant, e.Region) {
			rs.NoLease += e.N
		}
		st.Excess = max(st.Excess, tl.chk.WindowExcess(e.Tenant, e.T))
	case eventlog.Sample:
		if !regional {
			return
		}
		// Samples come a nanosecond before the end of each step.
		k := int(e.T / int64(tl.Step))
		if k >= len(tl.Steps) {
			return
		}
		rs := &tl.Steps[k].Regions[i]
		rs.Lease, rs.Rate, rs.Burst, rs.Balance = e.ID, e.Rate, e.Burst, e.Balance
		if i == 0 {
			// The worst window ending at the step's end, with no admission
			// since the last: it shrinks as R·Δ grows.
			st := &tl.Steps[k]
			st.Excess = max(st.Excess, tl.chk.WindowExcess(tl.tenant, e.T))
		}
	case eventlog.Traffic:
		tl.spendDemand(e.T)
		for r, j := range tl.index {
			tl.demand[j] = e.Rates[r]
		}
	case eventlog.Partition:
		if regional && tl.cutFrom[i] < 0 {
			tl.cutFrom[i] = e.T
		}
	case eventlog.Heal:
		if regional && tl.cutFrom[i] >= 0 {
			tl.markCut(i, tl.cutFrom[i], e.T)
			tl.cutFrom[i] = -1
		}
	case eventlog.Restart:
		tl.serving[e.Epoch] = true
		tl.newest = max(tl.newest, e.Epoch)
		tl.checkServing(e.T)
	case eventlog.Crash, eventlog.Pause:
		tl.serving[e.Epoch] = false
		tl.checkServing(e.T)
	case eventlog.Wake:
		tl.serving[e.Epoch] = true
		tl.checkServing(e.T)
	case eventlog.Fenced:
		tl.serving[e.Epoch] = false
		tl.checkServing(e.T)
	case eventlog.Stop:
		tl.finish(e.T)
	}
}

// checkServing notes when the newest coordinator stops or starts serving.
func (tl *Timeline) checkServing(t int64) {
	up := tl.serving[tl.newest]
	switch {
	case !up && tl.down < 0:
		tl.down = t
	case up && tl.down >= 0:
		tl.markDown(tl.down, t)
		tl.down = -1
	}
	tl.Steps[tl.stepOf(t)].Epoch = tl.newest
}

func (tl *Timeline) markDown(from, to int64) {
	for k := tl.stepOf(from); k <= tl.stepOf(max(from, to-1)); k++ {
		tl.Steps[k].Down = true
	}
}

func (tl *Timeline) markCut(i int, from, to int64) {
	for k := tl.stepOf(from); k <= tl.stepOf(max(from, to-1)); k++ {
		tl.Steps[k].Regions[i].Cut = true
	}
}

// spendDemand credits the demand in force since demandT up to t to the
// steps it covers, as an average over each step.
func (tl *Timeline) spendDemand(t int64) {
	step := int64(tl.Step)
	for from := tl.demandT; from < t; {
		k := tl.stepOf(from)
		to := min(t, int64(k+1)*step)
		if k == len(tl.Steps)-1 {
			to = t
		}
		w := float64(to-from) / float64(step)
		for j, d := range tl.demand {
			tl.Steps[k].Regions[j].Demand += d * w
		}
		from = to
	}
	tl.demandT = t
}

// finish closes the spans still open at the end of the run and carries
// the epoch forward to every step.
func (tl *Timeline) finish(end int64) {
	tl.spendDemand(end)
	for i, from := range tl.cutFrom {
		if from >= 0 {
			tl.markCut(i, from, end)
		}
	}
	if tl.down >= 0 {
		tl.markDown(tl.down, end)
	}
	var epoch uint64
	for k := range tl.Steps {
		epoch = max(epoch, tl.Steps[k].Epoch)
		tl.Steps[k].Epoch = epoch
	}
	tl.done = true
}
