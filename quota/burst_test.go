package quota_test

import (
	"math/big"
	"math/rand/v2"
	"testing"

	"github.com/afloat/afloat/quota"
)

// TestAllocateBurst: the burst is sized from the peaks, on its own —
// floors first, the rest of B in proportion to peak (to rate when no
// region has one) — step by step on chosen cases.
func TestAllocateBurst(t *testing.T) {
	tn := seedTenant() // R 500, B 6000, floor 1 %: 60 of B each, 5820 to share
	noFloor := tn
	noFloor.Floor = quota.NoFloor
	one := tn
	one.Regions = []string{"eu"}
	m := func(kv ...any) map[string]quota.Micro {
		out := map[string]quota.Micro{}
		for i := 0; i < len(kv); i += 2 {
			out[kv[i].(string)] = quota.Micro(kv[i+1].(int) * int(quota.One))
		}
		return out
	}
	for i, tc := range []struct {
		t            quota.Tenant
		demand, peak map[string]quota.Micro
		want         map[string]float64 // bursts, in tokens
	}{
		// The peak, not the demand now: us is quiet now but peaked at 900.
		{tn, m("eu", 300, "us", 100, "ap", 50), m("eu", 300, "us", 900, "ap", 0),
			map[string]float64{"eu": 60 + 1455, "us": 60 + 4365, "ap": 60}},
		// Equal peaks, unequal demand: equal bursts.
		{tn, m("eu", 400, "us", 10), m("eu", 500, "us", 500, "ap", 500),
			map[string]float64{"eu": 2000, "us": 2000, "ap": 2000}},
		// No peak known: the rest of B in proportion to the rates
		// (eu 400, us 95, ap 5 of 500).
		{tn, m("eu", 600, "us", 95), nil,
			map[string]float64{"eu": 60 + 4656, "us": 60 + 1105.8, "ap": 60 + 58.2}},
		// Every peak zero counts as none known.
		{tn, m("eu", 600, "us", 95), m("eu", 0, "us", 0),
			map[string]float64{"eu": 60 + 4656, "us": 60 + 1105.8, "ap": 60 + 58.2}},
		// Nothing at all: equal rates, equal bursts.
		{tn, nil, nil, map[string]float64{"eu": 2000, "us": 2000, "ap": 2000}},
		// All of the peak in one region: the most any region can hold.
		{tn, nil, m("ap", 7), map[string]float64{"eu": 60, "us": 60, "ap": 5880}},
		// Without floors a region with no peak keeps no burst.
		{noFloor, m("eu", 100), m("eu", 100), map[string]float64{"eu": 6000, "us": 0, "ap": 0}},
		// One region holds all of B whatever its peak.
		{one, nil, nil, map[string]float64{"eu": 6000}},
		{one, m("eu", 5), m("eu", 9), map[string]float64{"eu": 6000}},
	} {
		sh := quota.Allocate(tc.t, tc.demand, tc.peak)
		for reg, want := range tc.want {
			if got := sh[reg].Burst; got != quota.Tokens(want) {
				t.Errorf("step %d: Allocate(%v, %v)[%s].Burst = %v, want %v", i, tc.demand, tc.peak, reg, got, want)
			}
		}
		if len(sh) != len(tc.want) {
			t.Errorf("step %d: %d shares, want %d: %+v", i, len(sh), len(tc.want), sh)
		}
	}
}

// TestAllocateBurstProperties: on random demands and peaks, against a
// simple exact reference (big rationals): Σ burst ≤ B; every burst at
// least the floor; the larger peak never gets the smaller burst; the
// rate shares are those Allocate gives without peaks (the burst moves
// nothing else); and the same input, in maps built in another order,
// gives the same split.
func TestAllocateBurstProperties(t *testing.T) {
	r := rand.New(rand.NewPCG(23, 4))
	regions := []string{"eu", "us", "ap", "sa", "af", "me", "oc"}
	for n := range 3000 {
		tn := seedTenant()
		tn.Regions = regions[:1+r.IntN(len(regions))]
		tn.Burst = quota.Micro(r.Int64N(int64(20000 * quota.One)))
		if r.IntN(5) == 0 {
			tn.Floor = quota.NoFloor
		} else {
			tn.Floor = 0.5 / float64(len(tn.Regions)) * r.Float64()
		}
		if err := tn.Validate(); err != nil {
			t.Fatalf("case %d: %v", n, err)
		}
		d, p := map[string]quota.Micro{}, map[string]quota.Micro{}
		for _, reg := range tn.Regions {
			if r.IntN(3) > 0 {
				d[reg] = quota.Micro(r.Int64N(int64(800 * quota.One)))
			}
			switch r.IntN(4) {
			case 0: // no peak
			case 1:
				p[reg] = d[reg] // a steady region: its peak is its demand
			default:
				p[reg] = d[reg] + quota.Micro(r.Int64N(int64(2000*quota.One)))
			}
		}
		sh := quota.Allocate(tn, d, p)
		// The same input in maps built in reverse order.
		d2, p2 := map[string]quota.Micro{}, map[string]quota.Micro{}
		for i := len(tn.Regions) - 1; i >= 0; i-- {
			reg := tn.Regions[i]
			if v, ok := d[reg]; ok {
				d2[reg] = v
			}
			if v, ok := p[reg]; ok {
				p2[reg] = v
			}
		}
		again := quota.Allocate(tn, d2, p2)
		noPeaks := quota.Allocate(tn, d, nil)
		floor := min(quota.Micro(float64(tn.Burst)*tn.FloorShare()), tn.Burst/quota.Micro(len(tn.Regions)))
		want := refBurst(tn, floor, p, noPeaks)
		var sum quota.Micro
		for _, reg := range tn.Regions {
			b := sh[reg].Burst
			sum += b
			switch {
			case again[reg] != sh[reg]:
				t.Fatalf("case %d: %s: %+v, then %+v from the same input", n, reg, sh[reg], again[reg])
			case sh[reg].Rate != noPeaks[reg].Rate:
				t.Fatalf("case %d: %s: rate %v with peaks, %v without", n, reg, sh[reg].Rate, noPeaks[reg].Rate)
			case b < floor:
				t.Fatalf("case %d: %s: burst %v under the floor %v: %+v", n, reg, b, floor, sh)
			case b > quota.MaxBurstShare(tn):
				t.Fatalf("case %d: %s: burst %v over MaxBurstShare %v", n, reg, b, quota.MaxBurstShare(tn))
			case b > want[reg] || b < want[reg]-2:
				t.Fatalf("case %d: %s: burst %v, the reference says %v (peaks %v)", n, reg, b, want[reg], p)
			}
			for _, other := range tn.Regions {
				if p[reg] > p[other] && b < sh[other].Burst {
					t.Fatalf("case %d: %s peaked at %v, above %s's %v, and gets the smaller burst: %v < %v",
						n, reg, p[reg], other, p[other], b, sh[other].Burst)
				}
			}
		}
		if sum > tn.Burst {
			t.Fatalf("case %d: bursts sum to %v, over B %v: %+v", n, sum, tn.Burst, sh)
		}
	}
}

// refBurst is the split, exactly, rounded down: floor each, and the rest
// of B by peak (by the rate shares of rates when no peak is above 0).
func refBurst(tn quota.Tenant, floor quota.Micro, peak map[string]quota.Micro, rates map[string]quota.Share) map[string]quota.Micro {
	w := map[string]*big.Int{}
	sum := new(big.Int)
	for _, reg := range tn.Regions {
		w[reg] = big.NewInt(int64(max(0, peak[reg])))
		sum.Add(sum, w[reg])
	}
	if sum.Sign() == 0 {
		for _, reg := range tn.Regions {
			w[reg] = big.NewInt(int64(rates[reg].Rate))
			sum.Add(sum, w[reg])
		}
	}
	left := big.NewInt(int64(tn.Burst - floor*quota.Micro(len(tn.Regions))))
	out := map[string]quota.Micro{}
	for _, reg := range tn.Regions {
		out[reg] = floor
		if sum.Sign() > 0 {
			x := new(big.Int).Mul(left, w[reg])
			out[reg] += quota.Micro(x.Quo(x, sum).Int64())
		}
	}
	return out
}
