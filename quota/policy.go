package quota

import (
	"cmp"
	"slices"
)

// Share is a region's target part of a tenant's rate and burst.
type Share struct {
	Rate, Burst Micro
}

// Allocate is the rebalancing policy: it turns the regions' reported
// demand (offered tokens per second) and their recent peaks of it into
// target shares. The rate follows demand now; the burst is sized on its
// own, from the peaks.
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
//   - The burst is sized from peak, not from demand: each region keeps a
//     floor of B (Floor·B, as of R) so that a region with no recent peak
//     can still serve a small burst, and the rest of B is shared in
//     proportion to the regions' peaks. A burst is what a region spends
//     when its traffic jumps above its rate, so it belongs where traffic
//     has lately jumped highest, not where it happens to be now: a region
//     whose spike has just ended keeps the room to absorb the next one,
//     and a region that is busy but steady does not take it away. With no
//     peak known (peak empty, or every peak zero) the rest of B is shared
//     in proportion to the rate shares instead.
//
// What a peak is, and how long it lasts, is the caller's to choose (the
// coordinator keeps the largest demand a region reported, decaying
// slowly: coordinator.Core). The targets sum to at most R and B (rounding
// is down); each burst is at most MaxBurstShare. A region not in demand
// counts as wanting nothing, and one not in peak as having no peak.
// Allocate is a pure function of its arguments.
func Allocate(t Tenant, demand, peak map[string]Micro) map[string]Share {
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
	burst := burstShares(t, rate, peak)
	out := make(map[string]Share, n)
	var sumR, sumB Micro
	for _, r := range t.Regions {
		out[r] = Share{Rate: rate[r], Burst: burst[r]}
		sumR += rate[r]
		sumB += burst[r]
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

// burstFloor is the burst each of t's regions keeps whatever its peak:
// Floor·B, and at most an equal part of B.
func burstFloor(t Tenant) Micro {
	return min(Micro(float64(t.Burst)*t.FloorShare()), t.Burst/Micro(len(t.Regions)))
}

// burstShares splits B: burstFloor to every region, the rest in
// proportion to peak, or to rate when no region has a peak.
func burstShares(t Tenant, rate, peak map[string]Micro) map[string]Micro {
	floor := burstFloor(t)
	left := t.Burst - floor*Micro(len(t.Regions))
	weight := peak
	var sum float64
	for _, r := range t.Regions {
		sum += float64(max(0, peak[r]))
	}
	if sum == 0 {
		weight, sum = rate, 0
		for _, r := range t.Regions {
			sum += float64(max(0, rate[r]))
		}
	}
	out := make(map[string]Micro, len(t.Regions))
	for _, r := range t.Regions {
		out[r] = floor
		if sum > 0 {
			// Never above left (w ≤ sum), so never above MaxBurstShare.
			out[r] += min(left, Micro(float64(left)*(float64(max(0, weight[r]))/sum)))
		}
	}
	return out
}

// MaxBurstShare is the largest burst share Allocate can give any one of
// t's regions, whatever the demand and the peaks: B less the other
// regions' floors. A request costing more tokens can never be admitted
// under t's current limits — no lease, transfer or emergency allowance
// beyond it (in BestEffort mode, E may be larger: the region takes the
// larger of the two) — so a region refuses it as such, without a time to
// retry.
func MaxBurstShare(t Tenant) Micro {
	t = t.WithDefaults()
	n := Micro(len(t.Regions))
	if n <= 1 {
		return t.Burst
	}
	return t.Burst - burstFloor(t)*(n-1)
}
