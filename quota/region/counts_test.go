package region

import (
	"sync"
	"sync/atomic"
	"testing"

	"github.com/afloat/afloat/quota"
)

// TestCountsMatchDecisions: Counts against a tally of AllowAt's answers,
// step by step — before a lease, under one (word and caches), across
// renewals and a lease that ends, in hard and best-effort mode.
func TestCountsMatchDecisions(t *testing.T) {
	for _, caches := range []int{-1, 4} {
		l := withCaches(t, caches)
		be := func(g *quota.Grant) { g.Mode = quota.BestEffort; g.Emergency = 3 * quota.One }
		var want Counts
		allow := func(now int64, n int, cost int64, reason *int64, refused *int64) {
			for range n {
				if l.AllowAt(now, "acme", cost) {
					*reason += cost
				} else {
					*refused += cost
				}
			}
		}
		check := func(step int) {
			t.Helper()
			got, ok := l.Counts("acme")
			if !ok || got != want {
				t.Fatalf("caches %d, step %d: Counts = %+v, want %+v", caches, step, got, want)
			}
		}
		// Before any lease: refused, no lease.
		allow(0, 5, 1, &want.Admitted, &want.NoLease)
		check(1)
		// A lease of 1,000/s with a burst of 10,000 (large enough for
		// caches), half transferred: admissions, then exhaustion.
		grantAt(t, l, 0, 0, 1000, 10000, func(g *quota.Grant) { g.Lease.Transfer = 5000 * quota.One })
		allow(ms, 4000, 1, &want.Admitted, &want.Exhausted)
		check(2)
		allow(ms, 400, 7, &want.Admitted, &want.Exhausted)
		check(3)
		// A renewal (Request resets the demand counters; Counts keeps on).
		grantAt(t, l, 2*sec, 2*sec, 1000, 10000, nil)
		allow(3*sec, 3000, 1, &want.Admitted, &want.Exhausted)
		check(4)
		// The lease ends: refused, no lease.
		allow(20*sec, 10, 1, &want.Admitted, &want.NoLease)
		check(5)
		// Best effort: the lease, then the allowance, then the allowance spent.
		grantAt(t, l, 21*sec, 21*sec, 1000, 10000, be)
		allow(21*sec+ms, 100, 1, &want.Admitted, &want.Exhausted)
		check(6)
		allow(40*sec, 10, 1, &want.Emergency, &want.AllowanceSpent)
		if want.Emergency != 3 || want.AllowanceSpent != 7 {
			t.Fatalf("caches %d: the allowance admitted %d and refused %d, want 3 and 7", caches, want.Emergency, want.AllowanceSpent)
		}
		check(7)
		// A grant that says the quota holds at most 20 here (E is 3):
		// 21 and up are refused as too large, not counted as demand.
		grantAt(t, l, 42*sec, 42*sec, 1000, 10000, func(g *quota.Grant) { be(g); g.Ceiling = 20*quota.One + quota.One/2 })
		allow(42*sec+ms, 3, 21, &want.Admitted, &want.TooLarge)
		allow(42*sec+ms, 1, 20, &want.Admitted, &want.Exhausted)
		check(9)
		// Unknown tenants and costs below 1 change no tenant's counts.
		l.AllowAt(43*sec, "mallory", 1)
		l.AllowAt(43*sec, "acme", 0)
		check(8)
		if got := l.UnknownTenant(); got != 1 {
			t.Fatalf("caches %d: UnknownTenant = %d, want 1", caches, got)
		}
		if _, ok := l.Counts("mallory"); ok {
			t.Fatal("Counts of a tenant not served: ok")
		}
	}
}

// TestCountsConcurrent: goroutines on every core admit through the
// caches; once they stop, Counts equals what they were told, exactly.
func TestCountsConcurrent(t *testing.T) {
	l := withCaches(t, 0)
	grantAt(t, l, 0, 0, 1000, 100000, func(g *quota.Grant) { g.Lease.Transfer = 100000 * quota.One })
	var admitted, refused atomic.Int64
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 20000 {
				if l.AllowAt(ms, "acme", 1) {
					admitted.Add(1)
				} else {
					refused.Add(1)
				}
			}
		})
	}
	wg.Wait()
	got, _ := l.Counts("acme")
	if got.Admitted != admitted.Load() || got.Exhausted != refused.Load() {
		t.Fatalf("Counts = %+v, want %d admitted and %d refused", got, admitted.Load(), refused.Load())
	}
	if admitted.Load() == 0 || refused.Load() == 0 {
		t.Fatalf("%d admitted, %d refused: want both", admitted.Load(), refused.Load())
	}
}
