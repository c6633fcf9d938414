package quota

import (
	"cmp"
	"fmt"
	"slices"
	"time"
)

// The two conservation invariants, at every instant:
//
//	Σ over regions of the largest rate share of the region's live leases ≤ R
//	Σ over regions of the largest burst share of its live leases ≤ B
//
// A region spends through one bucket, under one lease at a time, so its
// overlapping leases (an old one not yet confirmed returned and its
// replacement) count as their maximum, not their sum — but they count
// until the old one is confirmed returned or has expired. Across regions
// the shares add up. Everything else follows: a region's bucket refills
// at most at its lease's rate and holds at most its lease's burst, so the
// admissions of any window of length Δ are at most R·Δ + B.

// Span is the interval in which a lease counts, [From, To).
type Span struct {
	Region   string
	Rate     Micro
	Burst    Micro
	From, To time.Duration
}

// SpanOf is the interval of a lease as its coordinator counts it: from
// activation to expiry, or to when it was ended earlier (ended > 0).
func SpanOf(l Lease, ended time.Duration) Span {
	to := l.Expires
	if ended > 0 && ended < to {
		to = ended
	}
	return Span{Region: l.Region, Rate: l.Rate, Burst: l.Burst, From: l.Activates, To: to}
}

// Peak is the highest total of the invariants' sums over time, and when
// the first highest total of each was reached.
type Peak struct {
	Rate, Burst     Micro
	RateAt, BurstAt time.Duration
}

// PeakOf sweeps the spans in time and returns the largest sums. Spans
// that are empty (To ≤ From) never count.
func PeakOf(spans []Span) Peak {
	type edge struct {
		at   time.Duration
		open bool
		i    int
	}
	edges := make([]edge, 0, 2*len(spans))
	for i, s := range spans {
		if s.To > s.From {
			edges = append(edges, edge{s.From, true, i}, edge{s.To, false, i})
		}
	}
	// At one instant, close before opening: [From, To) intervals that
	// touch do not overlap.
	slices.SortFunc(edges, func(a, b edge) int {
		if c := cmp.Compare(a.at, b.at); c != 0 {
			return c
		}
		if a.open != b.open {
			if a.open {
				return 1
			}
			return -1
		}
		return cmp.Compare(a.i, b.i)
	})
	live := map[string][]int{} // region → live spans
	var p Peak
	var rateSum, burstSum Micro
	maxOf := func(region string) (r, b Micro) {
		for _, i := range live[region] {
			r, b = max(r, spans[i].Rate), max(b, spans[i].Burst)
		}
		return r, b
	}
	for k := 0; k < len(edges); {
		at := edges[k].at
		for ; k < len(edges) && edges[k].at == at; k++ {
			e := edges[k]
			region := spans[e.i].Region
			r0, b0 := maxOf(region)
			if e.open {
				live[region] = append(live[region], e.i)
			} else {
				l := live[region]
				j := slices.Index(l, e.i)
				live[region] = slices.Delete(l, j, j+1)
			}
			r1, b1 := maxOf(region)
			rateSum += r1 - r0
			burstSum += b1 - b0
		}
		if rateSum > p.Rate {
			p.Rate, p.RateAt = rateSum, at
		}
		if burstSum > p.Burst {
			p.Burst, p.BurstAt = burstSum, at
		}
	}
	return p
}

// Check reports whether spans keep a tenant's invariants: the peak sums
// of rate and burst within R and B (credit, tokens held for transfer,
// counts against B too).
func Check(t Tenant, spans []Span, credit Micro) error {
	p := PeakOf(spans)
	if p.Rate > t.Rate {
		return fmt.Errorf("%w: tenant %q: rate shares sum to %v at %v, R is %v", ErrOverCommitted, t.Name, p.Rate, p.RateAt, t.Rate)
	}
	if p.Burst+credit > t.Burst {
		return fmt.Errorf("%w: tenant %q: burst shares sum to %v (+%v credit) at %v, B is %v", ErrOverCommitted, t.Name, p.Burst, credit, p.BurstAt, t.Burst)
	}
	return nil
}
