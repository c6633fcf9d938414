package quota

import (
	"cmp"
	"math"
	"slices"
)

// Share is a region's target part of a tenant's rate and burst.
type Share struct {
	Rate, Burst Micro
}

// Allocate is the rebalancing policy: it turns the regions' reported
// demand (offered tokens per second) into target shares.
//
//   - Each region keeps a floor, Floor·R of the rate, so that traffic
//     arriving in a quiet region is served at once rather than after a
//     renewal.
//   - Above the floors, the rate is shared by max-min fairness on demand
//     (water-filling): a region that wants less than an equal part gets
//     what it wants, and the rest is split equally among the others, and
//     so on. When the regions together want more than R, every token of R
//     goes where it is wanted; none sits idle in a quiet region.
//   - When they want less than R, what is left is shared in proportion to
//     demand plus floor, so that each region has room to grow before it
//     must ask.
//   - Burst follows rate: each region's burst share is B in the proportion
//     of its rate share.
//
// The targets sum to at most R and B (rounding is down). A region not in
// demand counts as wanting nothing.
func Allocate(t Tenant, demand map[string]Micro) map[string]Share {
	t = t.WithDefaults()
	n := Micro(len(t.Regions))
	floor := min(Micro(float64(t.Rate)*t.FloorShare()), t.Rate/n)
	rate := make(map[string]Micro, n)
	left := t.Rate - floor*n
	type want struct {
		region string
		w      Micro
	}
	wants := make([]want, 0, n)
	for _, r := range t.Regions {
		rate[r] = floor
		wants = append(wants, want{r, max(0, demand[r]-floor)})
	}
	slices.SortStableFunc(wants, func(a, b want) int { return cmp.Compare(a.w, b.w) })
	var wanted Micro
	for _, w := range wants {
		wanted += w.w
	}
	if wanted >= left {
		// Water-fill: the smallest wants first, each up to an equal part
		// of what is left.
		for i, w := range wants {
			level := left / Micro(len(wants)-i)
			give := min(w.w, level)
			rate[w.region] += give
			left -= give
		}
	} else {
		for _, w := range wants {
			rate[w.region] += w.w
		}
		left -= wanted
		// The rest in proportion to demand plus floor.
		var weights Micro
		for _, r := range t.Regions {
			weights += rate[r]
		}
		if weights > 0 {
			extra := make(map[string]Micro, n)
			for _, r := range t.Regions {
				extra[r] = Micro(float64(left) * float64(rate[r]) / float64(weights))
			}
			for _, r := range t.Regions {
				rate[r] += extra[r]
			}
		}
	}
	out := make(map[string]Share, n)
	var sumR, sumB Micro
	for _, r := range t.Regions {
		b := Micro(float64(t.Burst) * float64(rate[r]) / float64(t.Rate))
		out[r] = Share{Rate: rate[r], Burst: b}
		sumR += rate[r]
		sumB += b
	}
	// Float products may round up by a micro-token; take any excess back
	// from the largest share so that the sums stay within R and B.
	trim := func(over Micro, get func(Share) Micro, set func(*Share, Micro)) {
		if over <= 0 {
			return
		}
		big := t.Regions[0]
		for _, r := range t.Regions {
			if get(out[r]) > get(out[big]) {
				big = r
			}
		}
		s := out[big]
		set(&s, get(s)-over)
		out[big] = s
	}
	trim(sumR-t.Rate, func(s Share) Micro { return s.Rate }, func(s *Share, v Micro) { s.Rate = v })
	trim(sumB-t.Burst, func(s Share) Micro { return s.Burst }, func(s *Share, v Micro) { s.Burst = v })
	return out
}

// MaxBurstShare is the largest burst share Allocate can give any one of
// t's regions, whatever the demand: B less the part of it that follows
// the other regions' floors. A request costing more tokens can never be
// admitted under t's current limits — no lease, transfer or emergency
// allowance beyond it (in BestEffort mode, E may be larger: the region
// takes the larger of the two) — so a region refuses it as such, without
// a time to retry. It errs high by at most a micro-token, never low.
func MaxBurstShare(t Tenant) Micro {
	t = t.WithDefaults()
	n := Micro(len(t.Regions))
	if n <= 1 || t.Rate <= 0 {
		return t.Burst
	}
	floor := min(Micro(float64(t.Rate)*t.FloorShare()), t.Rate/n)
	most := t.Rate - floor*(n-1)
	// Allocate's burst is a float product that may round up a little;
	// rounding up here keeps the ceiling above it.
	return min(t.Burst, Micro(math.Ceil(float64(t.Burst)*float64(most)/float64(t.Rate)))+1)
}
