package coordinator

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/afloat/afloat/quota"
)

// regions renews every region of acme at now, each holding its lease and
// reporting demand[region], and returns the grants.
func regions(t *testing.T, c *ledgered, now time.Duration, held map[string]uint64, demand map[string]float64) map[string]quota.Grant {
	t.Helper()
	out := map[string]quota.Grant{}
	for _, r := range []string{"eu", "us", "ap"} {
		_, g := ask(t, c, now, r, held[r], demand[r])
		held[r], out[r] = g.Lease.ID, g
	}
	invariants(t, c)
	return out
}

func near(got quota.Micro, want, tol float64) bool {
	return got.Float() >= want-tol && got.Float() <= want+tol
}

// TestBurstFollowsPeaks: the burst is sized from each region's recent
// peak, apart from its rate. A region whose traffic spikes takes the
// larger burst at once, keeps it while its traffic is back down for the
// hold (its rate follows its demand meanwhile), and gives it back once
// its peak has decayed. Steps 4 s apart, so every region renews well
// within its lease.
func TestBurstFollowsPeaks(t *testing.T) {
	c := newCore(t, NewMemLedger(), 0)
	s := time.Second
	held := map[string]uint64{}
	even := map[string]float64{"eu": 100, "us": 100, "ap": 100}
	var g map[string]quota.Grant
	now := time.Duration(0)
	for range 3 {
		g = regions(t, c, now, held, even)
		now += 4 * s
	}
	for r, gr := range g {
		if !near(gr.Lease.Burst, 2000, 1) {
			t.Fatalf("step 1: even peaks: %s's burst %v, want 2000", r, gr.Lease.Burst)
		}
	}
	// eu spikes to 900 a second for one report: its burst target becomes
	// 60 + 5820·900/1100 ≈ 4822, the others' 60 + 5820·100/1100 ≈ 589.
	spike := map[string]float64{"eu": 900, "us": 100, "ap": 100}
	for range 3 {
		g = regions(t, c, now, held, spike)
		now += 4 * s
	}
	if !near(g["eu"].Lease.Burst, 4822, 2) || !near(g["us"].Lease.Burst, 589, 2) {
		t.Fatalf("step 2: after eu's spike: bursts eu %v, us %v; want about 4822 and 589", g["eu"].Lease.Burst, g["us"].Lease.Burst)
	}
	spikeEnd := now
	// Back to even demand: rates even again at once, the burst stays with
	// eu for the hold (six leases: 60 s).
	for now < spikeEnd+50*s {
		g = regions(t, c, now, held, even)
		now += 4 * s
	}
	if !near(g["eu"].Lease.Rate, g["us"].Lease.Rate.Float(), 1) || !near(g["eu"].Lease.Burst, 4822, 2) {
		t.Fatalf("step 3: 50 s after the spike: eu rate %v (us %v), burst %v; want even rates and eu's burst about 4822",
			g["eu"].Lease.Rate, g["us"].Lease.Rate, g["eu"].Lease.Burst)
	}
	// Then the peak halves every minute: after the hold and five minutes,
	// 900 → 28 < 100: the split is even again (within the slack, B/32).
	for now < spikeEnd+(60+300)*s {
		g = regions(t, c, now, held, even)
		now += 4 * s
	}
	for r, gr := range g {
		if !near(gr.Lease.Burst, 2000, 6000.0/splitSlack) {
			t.Fatalf("step 4: six minutes after the spike: %s's burst %v, want about 2000", r, gr.Lease.Burst)
		}
	}
}

// TestSilentRegionsPeakLapses: a region not heard from for a whole lease
// is not spending; its peak holds no share, and once its lease has ended
// the others share B less its floor by their peaks.
func TestSilentRegionsPeakLapses(t *testing.T) {
	c := newCore(t, NewMemLedger(), 0)
	s := time.Second
	held := map[string]uint64{}
	d := map[string]float64{"eu": 100, "us": 300, "ap": 900}
	for i := range 3 {
		regions(t, c, time.Duration(i)*4*s, held, d)
	}
	// ap falls silent at 8 s; its lease counts until 18.5 s at most.
	var eu, us quota.Grant
	for now := 12 * s; now <= 24*s; now += 4 * s {
		_, eu = ask(t, c, now, "eu", held["eu"], 100)
		held["eu"] = eu.Lease.ID
		_, us = ask(t, c, now, "us", held["us"], 300)
		held["us"] = us.Lease.ID
		invariants(t, c)
	}
	// 60 for ap's floor; 5820 by peaks 100 and 300, and the floors.
	if !near(eu.Lease.Burst, 60+1455, 2) || !near(us.Lease.Burst, 60+4365, 2) {
		t.Fatalf("with ap silent: bursts eu %v, us %v; want about 1515 and 4425", eu.Lease.Burst, us.Lease.Burst)
	}
}

// TestSteadySplitCostsNoWrites: a tenant over its limit everywhere holds
// steady rates, and its regions' reports jitter. Each report a little
// above a region's peak moves the split a little; kept within the slack
// (stickySplit) it changes no lease, so a region that asks early — its
// lease younger than a quarter lease, the rate the same — is answered
// Unchanged and costs no write: a write per renewal that must move the
// lease's end, not one per ask.
func TestSteadySplitCostsNoWrites(t *testing.T) {
	c := newCore(t, NewMemLedger(), 0)
	ms := time.Millisecond
	rng := rand.New(rand.NewPCG(23, 5))
	base := map[string]float64{"eu": 1200, "us": 800, "ap": 400}
	held := map[string]quota.Grant{}
	jitter := func() map[string]float64 {
		d := map[string]float64{}
		for _, r := range []string{"eu", "us", "ap"} { // in order: the same draws every run
			d[r] = base[r] * (0.97 + 0.06*rng.Float64())
		}
		return d
	}
	young := c.tenants["acme"].t.LeaseDuration / keepFor
	now := time.Duration(0)
	asks, writes, early := 0, 0, 0
	for end := 60 * time.Second; now < end; now += 500 * ms {
		d := jitter()
		for _, r := range []string{"eu", "us", "ap"} {
			h := held[r]
			step, g := ask(t, c, now, r, h.Lease.ID, d[r])
			held[r] = g
			if now < 4*time.Second {
				continue // settling: the first leases, the first peaks
			}
			asks++
			writes += puts(step)
			if now-h.Lease.Activates < young && g.Lease.Rate == h.Lease.Rate && puts(step) > 0 {
				early++
				t.Logf("at %v: %s: burst %v → %v, a write though nothing moved", now, r, h.Lease.Burst, g.Lease.Burst)
			}
		}
		invariants(t, c)
	}
	if early > 0 {
		t.Fatalf("%d writes of %d for %d asks were early: the split's jitter writes leases", early, writes, asks)
	}
	t.Logf("%d writes for %d asks", writes, asks)
}

// TestShortReportIsNoPeak: a region that asks again a few milliseconds
// after its last request (nudged, or retrying) reports the few requests
// of those milliseconds as a rate — noise, not a peak. Reports are
// averaged over a tenth of a lease at least before they make one.
func TestShortReportIsNoPeak(t *testing.T) {
	c := newCore(t, NewMemLedger(), 0)
	s, ms := time.Second, time.Millisecond
	held := map[string]uint64{}
	even := map[string]float64{"eu": 100, "us": 100, "ap": 100}
	now := time.Duration(0)
	for range 3 {
		regions(t, c, now, held, even)
		now += 4 * s
	}
	// eu, nudged 10 ms after its request of now−4 s+…: three requests of 5
	// tokens in 10 ms, 1,500 a second; then its ordinary renewals.
	_, g := ask(t, c, now-4*s+10*ms, "eu", held["eu"], 1500)
	held["eu"] = g.Lease.ID
	var gs map[string]quota.Grant
	for range 3 {
		gs = regions(t, c, now, held, even)
		now += 4 * s
	}
	for r, gr := range gs {
		if !near(gr.Lease.Burst, 2000, 6000.0/splitSlack) {
			t.Fatalf("%s's burst %v after eu's 10 ms report of 1,500 a second: want about 2000, as before", r, gr.Lease.Burst)
		}
	}
}
