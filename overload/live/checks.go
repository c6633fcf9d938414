package live

import (
	"slices"
	"time"
)

// The checks that make a live comparison trustworthy on a machine that is
// not the user's alone. Each is a range a measured number must fall in;
// the bounds leave room for loopback HTTP and scheduling, and none for
// numbers that are impossible on one core.
const (
	// The server's share of its core while it calibrates and while it is
	// overloaded: another process on the core takes the rest.
	minCPUShare = 0.85
	// The no-load median against the work: below it the handler does less
	// work than asked (it was fitted on a busy core); above, something
	// else delays it.
	minP50Ratio = 0.9
	maxP50Ratio = 1.5
	p50Overhead = 2 * time.Millisecond // loopback HTTP, added to the top
	// Capacity × work: one core serves at most one second of work a second.
	minCapacityWork = 0.7
	maxCapacityWork = 1.05
	// Goodput is answers in time ÷ capacity: more than all of it is
	// impossible.
	maxGoodput = 1.05
	// A calm phase before any overload is served in full.
	minCalm = 0.9
	// The generator sends what the load calls for.
	minSent = 0.95
	// The no-load median after the run against before it.
	minDrift = 0.8
	maxDrift = 1.25
)

func check(name, phase string, v, lo, hi float64) Check {
	return Check{Name: name, Phase: phase, Value: v, Min: lo, Max: hi, OK: v >= lo && v <= hi}
}

// calibrationChecks checks a calibration before anything runs on it.
func calibrationChecks(cal Calibration, work time.Duration) []Check {
	var cs []Check
	if cal.CPUShare >= 0 {
		cs = append(cs, check("cpu_share", "", cal.CPUShare, minCPUShare, 1.05))
	}
	w := float64(work)
	cs = append(cs,
		check("p50_vs_work", "", float64(cal.NoLoadP50)/w, minP50Ratio, (maxP50Ratio*w+float64(p50Overhead))/w),
		check("capacity_vs_work", "", cal.Capacity*work.Seconds(), minCapacityWork, maxCapacityWork),
	)
	return cs
}

// runChecks checks what the phases of one protection saw, and the no-load
// median measured after them.
func runChecks(phases []PhaseReport, cal Calibration, after time.Duration) []Check {
	var cs []Check
	overloaded := false
	for _, p := range phases {
		cs = append(cs, check("goodput", p.Name, p.Goodput, 0, maxGoodput))
		if p.Planned > 0 {
			cs = append(cs, check("sent", p.Name, float64(p.Sent)/float64(p.Planned), minSent, 1/minSent))
		}
		if !overloaded && p.Load <= 0.5 {
			cs = append(cs, check("calm", p.Name, p.Goodput/p.Load, minCalm, maxGoodput))
		}
		if p.Load > 1 {
			overloaded = true
			if p.CPUShare >= 0 {
				cs = append(cs, check("cpu_share", p.Name, p.CPUShare, minCPUShare, 1.05))
			}
		}
	}
	if cal.NoLoadP50 > 0 {
		cs = append(cs, check("drift", "", float64(after)/float64(cal.NoLoadP50), minDrift, maxDrift))
	}
	return cs
}

// conclude finds, at the highest load, the protection that answered most
// in time (the lower p99 on a tie).
func conclude(rep Report) *Conclusion {
	if len(rep.Modes) == 0 || len(rep.Modes[0].Phases) == 0 {
		return nil
	}
	top := slices.IndexFunc(rep.Modes[0].Phases, func(p PhaseReport) bool {
		return p.Load == slices.MaxFunc(rep.Modes[0].Phases, func(a, b PhaseReport) int {
			switch {
			case a.Load < b.Load:
				return -1
			case a.Load > b.Load:
				return 1
			}
			return 0
		}).Load
	})
	c := &Conclusion{Load: rep.Modes[0].Phases[top].Load, None: -1}
	ratio := func(m ModeReport) float64 {
		if m.Calibration.NoLoadP99 <= 0 || m.Phases[top].P99 <= 0 {
			return 0
		}
		return float64(m.Phases[top].P99) / float64(m.Calibration.NoLoadP99)
	}
	for _, m := range rep.Modes {
		p := m.Phases[top]
		if m.Mode == "none" {
			c.None = p.Goodput
			continue
		}
		if c.Best == "" || p.Goodput > c.Goodput+0.01 || (p.Goodput > c.Goodput-0.01 && ratio(m) < c.P99Ratio) {
			c.Best, c.Goodput, c.P99Ratio = m.Mode, p.Goodput, ratio(m)
		}
	}
	if c.Best == "" {
		return nil // only "none" ran: nothing to compare
	}
	return c
}
