package region_test

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/afloat/afloat/quota"
	"github.com/afloat/afloat/quota/coordinator"
	"github.com/afloat/afloat/quota/region"
)

// system is a coordinator and three regions in one process.
type system struct {
	srv  *coordinator.Server
	lims map[string]*region.Limiter
}

func newSystem(t *testing.T, ctx context.Context) *system {
	t.Helper()
	tn := quota.Tenant{Name: "acme", Rate: 500 * quota.One, Burst: 6000 * quota.One, Regions: []string{"eu", "us", "ap"}}
	s := &system{lims: map[string]*region.Limiter{}}
	for _, r := range tn.Regions {
		l, err := region.New(region.DefaultConfig(r, "acme"))
		if err != nil {
			t.Fatal(err)
		}
		s.lims[r] = l
	}
	srv, err := coordinator.NewServer(ctx, coordinator.Config{Tenants: []quota.Tenant{tn}}, coordinator.NewMemLedger(),
		coordinator.WithNudges(func(n quota.Nudge) { s.lims[n.Region].Nudge(n) }))
	if err != nil {
		t.Fatal(err)
	}
	s.srv = srv
	return s
}

// TestRunnersInProcess: three regions renew through an in-process
// coordinator on their own runners; traffic moves from eu to us; the
// admissions stay within R·T + B and us gets most of R after the move.
// Virtual time (synctest): a minute of traffic in milliseconds.
func TestRunnersInProcess(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		s := newSystem(t, ctx)
		var wg sync.WaitGroup
		wg.Go(func() { s.srv.Run(ctx) })
		for _, l := range s.lims {
			wg.Go(func() { l.Run(ctx, s.srv) })
		}
		// Offer 800 tokens a second: to eu for 30 s, then to us for 30 s.
		var mu sync.Mutex
		admitted := map[string]int{}
		offer := func(region string, from, to time.Duration) {
			time.Sleep(from)
			for range int((to - from) / (5 * time.Millisecond)) {
				for range 4 {
					if s.lims[region].Allow("acme", 1) {
						mu.Lock()
						admitted[region]++
						mu.Unlock()
					}
				}
				time.Sleep(5 * time.Millisecond)
			}
		}
		var traffic sync.WaitGroup
		traffic.Go(func() { offer("eu", 0, 30*time.Second) })
		traffic.Go(func() { offer("us", 30*time.Second, 40*time.Second) })
		traffic.Wait()
		usLast := admitted["us"]
		total := admitted["eu"] + admitted["us"]
		if limit := 500*40 + 6000; total > limit {
			t.Errorf("%d admitted in 40 s, over R·T + B = %d", total, limit)
		}
		if admitted["eu"] < 500*25 {
			t.Errorf("eu admitted %d in 30 s at 800/s offered, want most of R", admitted["eu"])
		}
		if usLast < 450*8 {
			t.Errorf("us admitted %d in the 10 s after the move, want at least 90 %% of R for 8 s", usLast)
		}
		cancel()
		wg.Wait()
		t.Logf("admitted %v", admitted)
		// The metrics' counts: admissions as counted, less at most a few
		// that raced a renewal; every grant by its outcome.
		for name, l := range s.lims {
			c, _ := l.Counts("acme")
			if want := int64(admitted[name]); c.Admitted > want || c.Admitted < want*99/100 {
				t.Errorf("%s: Counts().Admitted = %d, want %d (or up to 1 %% fewer)", name, c.Admitted, want)
			}
			st := l.RunStats()
			var all int64
			for _, o := range region.Outcomes() {
				all += l.Grants(o)
			}
			if l.Grants(region.Accepted) != st.Installed || l.Grants(region.Kept) != st.Kept || all != st.Installed+st.Kept+st.Ignored || st.Installed == 0 {
				t.Errorf("%s: %d grants accepted, %d kept and %d in all, want %d installed, %d kept and %d ignored",
					name, l.Grants(region.Accepted), l.Grants(region.Kept), all, st.Installed, st.Kept, st.Ignored)
			}
		}
	})
}
