package quota_test

import (
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/afloat/afloat/quota"
)

func seedTenant() quota.Tenant {
	return quota.Tenant{Name: "acme", Rate: 500 * quota.One, Burst: 6000 * quota.One, Regions: []string{"eu", "us", "ap"}}
}

func TestTenantValidate(t *testing.T) {
	for i, tc := range []struct {
		mod  func(*quota.Tenant)
		want string
	}{
		{func(*quota.Tenant) {}, ""},
		{func(t *quota.Tenant) { t.Name = "" }, "tenant name"},
		{func(t *quota.Tenant) { t.Rate = 0 }, "rate 0 tokens a second: want 0.001 to 1e9"},
		// The trap of a rate or burst written in tokens, not millionths.
		{func(t *quota.Tenant) { t.Rate = 100 }, "rate 0.0001 tokens a second: want 0.001 to 1e9 (Rate is in millionths of a token: quota.Tokens(100) is 100 a second)"},
		{func(t *quota.Tenant) { t.Burst = 200 }, "burst 0.0002 tokens: want 0, or 1 to 1e12"},
		{func(t *quota.Tenant) { t.Burst = -1 }, "burst"},
		{func(t *quota.Tenant) { t.Regions = nil }, "0 regions: want 1 to 64"},
		{func(t *quota.Tenant) { t.Regions = []string{"eu", "eu"} }, `regions[1] "eu": listed twice`},
		{func(t *quota.Tenant) { t.Emergency = quota.One }, "emergency allowance 1 in hard mode"},
		{func(t *quota.Tenant) { t.Mode = quota.BestEffort; t.Emergency = 7000 * quota.One }, "want 0 to the burst"},
		{func(t *quota.Tenant) { t.LeaseDuration = time.Millisecond }, "lease duration 1ms: want 100ms to 1h"},
		{func(t *quota.Tenant) { t.SkewMargin = 5 * time.Second }, "skew margin 5s"},
		{func(t *quota.Tenant) { t.Floor = 0.4 }, "floor 0.4"},
		{func(t *quota.Tenant) { t.Costs = map[string]int64{"/search": 0} }, `cost of "/search" 0`},
	} {
		tn := seedTenant()
		tc.mod(&tn)
		err := tn.Validate()
		if tc.want == "" {
			if err != nil {
				t.Errorf("step %d: %v", i, err)
			}
			continue
		}
		if err == nil || !errors.Is(err, quota.ErrConfig) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("step %d: Validate() = %v, want ErrConfig mentioning %q", i, err, tc.want)
		}
	}
}

func TestCostAndMode(t *testing.T) {
	tn := seedTenant()
	tn.Costs = map[string]int64{"/export": 10}
	if tn.Cost("/export") != 10 || tn.Cost("/") != 1 {
		t.Errorf("costs %d %d", tn.Cost("/export"), tn.Cost("/"))
	}
	for _, m := range []quota.Mode{quota.Hard, quota.BestEffort} {
		if got, err := quota.ParseMode(m.String()); err != nil || got != m {
			t.Errorf("ParseMode(%q) = %v, %v", m, got, err)
		}
	}
	if _, err := quota.ParseMode("soft"); err == nil || !strings.Contains(err.Error(), "want hard or best-effort") {
		t.Errorf("ParseMode(soft) = %v", err)
	}
	if quota.Tokens(0.1234567) != 123456 || (1500*quota.One).String() != "1500" {
		t.Errorf("Tokens/String: %v %v", quota.Tokens(0.1234567), (1500 * quota.One).String())
	}
}

// naivePeak evaluates the sums at every interval start, the simple way.
func naivePeak(spans []quota.Span) (rate, burst quota.Micro) {
	for _, at := range spans {
		t := at.From
		best := map[string][2]quota.Micro{}
		for _, s := range spans {
			if s.From <= t && t < s.To {
				b := best[s.Region]
				best[s.Region] = [2]quota.Micro{max(b[0], s.Rate), max(b[1], s.Burst)}
			}
		}
		var r, bu quota.Micro
		for _, b := range best {
			r += b[0]
			bu += b[1]
		}
		rate, burst = max(rate, r), max(burst, bu)
	}
	return rate, burst
}

// TestPeakOfMatchesNaive: the sweep agrees with evaluating every instant.
func TestPeakOfMatchesNaive(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	regions := []string{"a", "b", "c"}
	for n := range 2000 {
		var spans []quota.Span
		for range 1 + r.IntN(12) {
			from := time.Duration(r.IntN(50))
			spans = append(spans, quota.Span{
				Region: regions[r.IntN(3)], Rate: quota.Micro(r.IntN(100)), Burst: quota.Micro(r.IntN(100)),
				From: from, To: from + time.Duration(r.IntN(30)),
			})
		}
		p := quota.PeakOf(spans)
		wr, wb := naivePeak(spans)
		if p.Rate != wr || p.Burst != wb {
			t.Fatalf("case %d: PeakOf = %v/%v, naive %v/%v for %+v", n, p.Rate, p.Burst, wr, wb, spans)
		}
	}
}

// TestCheckCountsOverlapOnce: a region's old and new lease overlap and
// count as their maximum; two regions' shares add up.
func TestCheckCountsOverlapOnce(t *testing.T) {
	tn := seedTenant()
	half := 250 * quota.One
	ok := []quota.Span{
		{Region: "eu", Rate: half, Burst: 3000 * quota.One, From: 0, To: 10},
		{Region: "eu", Rate: half, Burst: 3000 * quota.One, From: 5, To: 15}, // renewal, overlapping
		{Region: "us", Rate: half, Burst: 3000 * quota.One, From: 0, To: 15},
	}
	if err := quota.Check(tn, ok, 0); err != nil {
		t.Errorf("renewal overlap: %v", err)
	}
	if err := quota.Check(tn, ok, quota.One); err == nil {
		t.Error("credit on top of a full burst passed")
	}
	bad := append(ok, quota.Span{Region: "ap", Rate: quota.One, From: 12, To: 13})
	if err := quota.Check(tn, bad, 0); !errors.Is(err, quota.ErrOverCommitted) || !strings.Contains(err.Error(), "rate shares sum to 501") {
		t.Errorf("over-committed rate: %v", err)
	}
}

// TestAllocate: the policy's promises, on the seed's tenant and on random
// demands.
func TestAllocate(t *testing.T) {
	tn := seedTenant()
	sh := quota.Allocate(tn, map[string]quota.Micro{"eu": 360 * quota.One, "us": 180 * quota.One, "ap": 60 * quota.One}, nil)
	if sh["ap"].Rate != 60*quota.One || sh["us"].Rate != 180*quota.One || sh["eu"].Rate != 260*quota.One {
		t.Errorf("60/30/10 of 600: %+v, want ap 60, us 180, eu the other 260", sh)
	}
	sh = quota.Allocate(tn, map[string]quota.Micro{"us": 1000 * quota.One}, map[string]quota.Micro{"us": 1000 * quota.One})
	if sh["eu"].Rate != 5*quota.One || sh["ap"].Rate != 5*quota.One || sh["us"].Rate != 490*quota.One {
		t.Errorf("all traffic in us: %+v, want floors of 5 and us 490", sh)
	}
	ceiling := quota.MaxBurstShare(tn)
	if lone := sh["us"].Burst; ceiling != lone {
		t.Errorf("MaxBurstShare %v: want the burst of a region with all the peak (%v)", ceiling, lone)
	}
	r := rand.New(rand.NewPCG(3, 4))
	for n := range 5000 {
		d, p := map[string]quota.Micro{}, map[string]quota.Micro{}
		for _, reg := range tn.Regions {
			if r.IntN(4) > 0 {
				d[reg] = quota.Micro(r.Int64N(int64(800 * quota.One)))
			}
			if r.IntN(4) > 0 {
				p[reg] = d[reg] + quota.Micro(r.Int64N(int64(800*quota.One)))
			}
		}
		sh := quota.Allocate(tn, d, p)
		var sumR, sumB, sumD quota.Micro
		for _, reg := range tn.Regions {
			s := sh[reg]
			if s.Burst > ceiling {
				t.Fatalf("case %d: %s's burst %v over MaxBurstShare %v: %+v", n, reg, s.Burst, ceiling, sh)
			}
			sumR += s.Rate
			sumB += s.Burst
			sumD += d[reg]
			if s.Rate < 5*quota.One {
				t.Fatalf("case %d: %s below its floor: %+v", n, reg, sh)
			}
		}
		if sumR > tn.Rate || sumB > tn.Burst {
			t.Fatalf("case %d: sums %v/%v over R/B: %+v", n, sumR, sumB, sh)
		}
		if sumR < tn.Rate-3 {
			t.Fatalf("case %d: only %v of R allocated: %+v", n, sumR, sh)
		}
		// Max-min fairness: nobody who wants less than a third of R is cut.
		for _, reg := range tn.Regions {
			if d[reg] <= tn.Rate/3 && sh[reg].Rate+1 < d[reg] {
				t.Fatalf("case %d: %s wants %v ≤ R/3 and gets %v: %+v", n, reg, d[reg], sh[reg].Rate, sh)
			}
		}
	}
}
