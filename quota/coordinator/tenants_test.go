package coordinator

import (
	"errors"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/afloat/afloat/quota"
)

// sums is the sum of the regions' largest live rate and burst shares.
func sums(c *Core, tenant string) (rate, burst quota.Micro) {
	var spans []quota.Span
	for _, l := range c.Live(tenant) {
		spans = append(spans, quota.SpanOf(l, 0))
	}
	p := quota.PeakOf(spans)
	return p.Rate, p.Burst
}

// TestShrinkRule: after a shrink no grant raises the live sums; once the
// old leases have ended the sums are within the new R and B, and the new
// shares are the new R and B split by demand, exactly.
func TestShrinkRule(t *testing.T) {
	l := NewMemLedger()
	c := newCore(t, l, 0)
	if err := c.write(c.Seeding()[0]); err != nil {
		t.Fatal(err)
	}
	big := 1000 * quota.One
	// Two rounds: the second, with every demand known and the first
	// leases superseded, splits R and B in thirds.
	held := map[string]uint64{}
	for round := range 2 {
		for i, r := range []string{"eu", "us", "ap"} {
			g, _, err := c.Renew(ctx, time.Duration(round)*100*time.Millisecond,
				quota.Request{Tenant: "acme", Region: r, Seq: uint64(3*round + i + 1), Demand: big, Holding: held[r]})
			if err != nil {
				t.Fatal(err)
			}
			held[r] = g.Lease.ID
		}
	}
	if r, b := sums(c.Core, "acme"); r < 499*quota.One || b < 5999*quota.One {
		t.Fatalf("before the shrink: sums %v, %v: want R 500 and B 6000 all leased", r, b)
	}
	shrunk := seedTenant()
	shrunk.Rate, shrunk.Burst = 150*quota.One, 300*quota.One
	rec, step, err := c.PutTenant(time.Second, shrunk, "alice", false, 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.write(step); err != nil {
		t.Fatal(err)
	}
	if rec.Version != 2 || rec.By != "alice" || step.Tenant.Old.Rate != 500*quota.One || step.Tenant.New.Rate != 150*quota.One {
		t.Fatalf("record %+v, change %+v", rec, step.Tenant)
	}
	// Every region renews during the old leases: a grant only fills the
	// room the new R and B leave beside the others' live leases, so the
	// sums, above the new limits, never rise.
	for i, r := range []string{"eu", "us", "ap"} {
		r0, b0 := sums(c.Core, "acme")
		var otherRate, otherBurst quota.Micro
		peakRate, peakBurst := map[string]quota.Micro{}, map[string]quota.Micro{}
		for _, l := range c.Live("acme") {
			peakRate[l.Region], peakBurst[l.Region] = max(peakRate[l.Region], l.Rate), max(peakBurst[l.Region], l.Burst)
		}
		for reg := range peakRate {
			if reg != r {
				otherRate, otherBurst = otherRate+peakRate[reg], otherBurst+peakBurst[reg]
			}
		}
		g, _, err := c.Renew(ctx, 2*time.Second, quota.Request{Tenant: "acme", Region: r, Seq: uint64(10 + i), Demand: big, Holding: held[r]})
		if err != nil {
			t.Fatal(err)
		}
		if g.Lease.Rate > max(0, shrunk.Rate-otherRate) || g.Lease.Burst > max(0, shrunk.Burst-otherBurst) {
			t.Fatalf("%s: granted rate %v burst %v beside others' %v, %v: over the new limits' room", r, g.Lease.Rate, g.Lease.Burst, otherRate, otherBurst)
		}
		if r1, b1 := sums(c.Core, "acme"); r1 > r0 || b1 > b0 {
			t.Fatalf("%s: sums rose from %v, %v to %v, %v above the new limits", r, r0, b0, r1, b1)
		}
	}
	// The old leases counted until 10.6 s; at 11 s each region gets its
	// third of the new R and B: exactly 50/s and 100.
	for i, r := range []string{"eu", "us", "ap"} {
		g, _, err := c.Renew(ctx, 11*time.Second, quota.Request{Tenant: "acme", Region: r, Seq: uint64(20 + i), Demand: big})
		if err != nil {
			t.Fatal(err)
		}
		if g.Lease.Rate != 50*quota.One || g.Lease.Burst != 100*quota.One {
			t.Fatalf("%s after the old leases: rate %v burst %v, want 50 and 100", r, g.Lease.Rate, g.Lease.Burst)
		}
	}
	if r, b := sums(c.Core, "acme"); r != 150*quota.One || b != 300*quota.One {
		t.Fatalf("after the old leases: sums %v, %v: want exactly the new R 150 and B 300", r, b)
	}
	// The ledger holds the new configuration; a successor serves it,
	// not the config's seed.
	c2 := newCore(t, l, 12*time.Second)
	if tt, ok := c2.Tenant("acme"); !ok || tt.Rate != 150*quota.One {
		t.Fatalf("successor's tenant %+v: want the shrunk one from the ledger", tt)
	}
	if len(c2.Seeding()) != 0 {
		t.Fatal("a seeded ledger was seeded again")
	}
}

// TestShrinkUnderLoad: renewals, returns and changes of R and B at
// random; at every instant the live sums stay within the largest of the
// new limits and what was live at the change, and one lease duration
// after the last change within the new limits.
func TestShrinkUnderLoad(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 13))
	l := NewMemLedger()
	c := newCore(t, l, 0)
	regions := []string{"eu", "us", "ap"}
	cur := seedTenant()
	capR, capB := cur.Rate, cur.Burst
	var seq uint64
	holding := map[string]uint64{}
	changes := 0
	for step := range 20000 {
		now := time.Duration(step) * 5 * time.Millisecond
		switch x := rng.IntN(100); {
		case x < 2:
			next := cur
			next.Rate = quota.Micro(rng.IntN(1000)+1) * quota.One
			next.Burst = quota.Micro(rng.IntN(12000)) * quota.One
			r, b := sums(c.Core, "acme")
			b += c.Credit("acme")
			_, st, err := c.PutTenant(now, next, "load", false, 0)
			if err != nil {
				t.Fatal(err)
			}
			if err := c.write(st); err != nil {
				t.Fatal(err)
			}
			capR, capB = max(next.Rate, r), max(next.Burst, b)
			cur = next
			changes++
		case x < 10:
			reg := regions[rng.IntN(3)]
			if id := holding[reg]; id != 0 {
				if err := c.Return(ctx, now, quota.Return{Tenant: "acme", Region: reg, LeaseID: id, Balance: quota.Micro(rng.IntN(100)) * quota.One}); err != nil {
					t.Fatal(err)
				}
				holding[reg] = 0
			}
		default:
			reg := regions[rng.IntN(3)]
			seq++
			g, _, err := c.Renew(ctx, now, quota.Request{Tenant: "acme", Region: reg, Seq: seq, Holding: holding[reg],
				Demand: quota.Micro(rng.IntN(600)) * quota.One})
			if err != nil {
				t.Fatal(err)
			}
			holding[reg] = g.Lease.ID
		}
		r, b := sums(c.Core, "acme")
		b += c.Credit("acme")
		if r > capR || b > capB {
			t.Fatalf("step %d at %v: sums %v, %v over %v, %v (R %v, B %v)", step, now, r, b, capR, capB, cur.Rate, cur.Burst)
		}
		// The caps fall to the new limits as the old leases end: only what
		// is live now can hold them up.
		capR, capB = max(cur.Rate, r), max(cur.Burst, b)
	}
	if changes < 100 {
		t.Fatalf("%d changes: the test did not exercise shrinks", changes)
	}
}

// TestTenantOps: create, update with a version, delete, and each refusal.
func TestTenantOps(t *testing.T) {
	c := newCore(t, NewMemLedger(), 0)
	beta := quota.Tenant{Name: "beta", Rate: 10 * quota.One, Burst: 100 * quota.One, Regions: []string{"eu"}}
	if _, _, err := c.PutTenant(0, beta, "bob", false, 0); !errors.Is(err, quota.ErrUnknownTenant) {
		t.Fatalf("update of a missing tenant: %v", err)
	}
	if _, _, err := c.PutTenant(0, beta, "bob", true, 0); err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.PutTenant(0, beta, "bob", true, 0); !errors.Is(err, ErrTenantExists) {
		t.Fatalf("duplicate create: %v", err)
	}
	if _, _, err := c.PutTenant(0, beta, "bob", false, 7); !errors.Is(err, ErrVersionMismatch) {
		t.Fatalf("stale version: %v", err)
	}
	bad := beta
	bad.Rate = 0
	if _, _, err := c.PutTenant(0, bad, "bob", false, 0); !errors.Is(err, quota.ErrConfig) {
		t.Fatalf("rate 0: %v", err)
	}
	g, _, err := c.Renew(ctx, 0, quota.Request{Tenant: "beta", Region: "eu", Seq: 1, Demand: quota.One})
	if err != nil || g.Lease.Rate == 0 {
		t.Fatalf("renew: %+v %v", g, err)
	}
	if _, err := c.DeleteTenant(time.Second, "beta", "bob", 0); err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.Renew(ctx, time.Second, quota.Request{Tenant: "beta", Region: "eu", Seq: 2}); !errors.Is(err, quota.ErrUnknownTenant) {
		t.Fatalf("renew of a deleted tenant: %v", err)
	}
	if _, err := c.DeleteTenant(time.Second, "beta", "bob", 0); !errors.Is(err, quota.ErrUnknownTenant) {
		t.Fatalf("second delete: %v", err)
	}
	// Created again at once: the deleted tenant's lease still counts.
	if _, _, err := c.PutTenant(2*time.Second, beta, "bob", true, 0); err != nil {
		t.Fatal(err)
	}
	if n := len(c.Live("beta")); n != 1 {
		t.Fatalf("%d live leases after delete and create: want the old one still counting", n)
	}
	g2, _, err := c.Renew(ctx, 2*time.Second, quota.Request{Tenant: "beta", Region: "eu", Seq: 3, Demand: quota.One})
	if err != nil {
		t.Fatal(err)
	}
	if r, _ := sums(c.Core, "beta"); r > beta.Rate || g2.Lease.Rate > beta.Rate {
		t.Fatalf("sum %v over R %v", r, beta.Rate)
	}
	if got := len(c.Tenants()); got != 2 {
		t.Fatalf("%d tenants listed, want 2", got)
	}
	// A region taken out: refused at once, its lease counts until it ends.
	g3, _, err := c.Renew(ctx, 2*time.Second, quota.Request{Tenant: "acme", Region: "us", Seq: 9, Demand: quota.One})
	if err != nil {
		t.Fatal(err)
	}
	acme := seedTenant()
	acme.Regions = []string{"eu", "ap"}
	if _, _, err := c.PutTenant(3*time.Second, acme, "bob", false, 0); err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.Renew(ctx, 3*time.Second, quota.Request{Tenant: "acme", Region: "us", Seq: 10}); !errors.Is(err, quota.ErrUnknownRegion) {
		t.Fatalf("renew in a removed region: %v", err)
	}
	if !slices.ContainsFunc(c.Live("acme"), func(l quota.Lease) bool { return l.ID == g3.Lease.ID }) {
		t.Fatal("the removed region's lease stopped counting before it ended")
	}
	if _, err := c.Expire(g3.Lease.Expires); err != nil {
		t.Fatal(err)
	}
	if slices.ContainsFunc(c.Live("acme"), func(l quota.Lease) bool { return l.Region == "us" }) {
		t.Fatal("the removed region's lease counts after its end")
	}
}

// TestShares: Shares visits the tenants served in name order, a chunk at
// a time from the name after which the last chunk stopped, each once,
// with every region's share as the core counts it (the largest of its
// live leases there, and how many); a deleted tenant is not visited, and
// one created between two chunks is, if its name comes later.
func TestShares(t *testing.T) {
	c := newCore(t, NewMemLedger(), 0) // acme, in ap, eu and us
	for _, name := range []string{"x1", "x2", "x3", "x4", "x5"} {
		tn := quota.Tenant{Name: name, Rate: 10 * quota.One, Burst: 100 * quota.One, Regions: []string{"eu", "us"}}
		if _, _, err := c.PutTenant(0, tn, "bob", true, 0); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := c.Renew(ctx, 0, quota.Request{Tenant: "x2", Region: "eu", Seq: 1, Demand: quota.One}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.DeleteTenant(0, "x3", "bob", 0); err != nil {
		t.Fatal(err)
	}
	var seen []string
	visit := func(tn *quota.Tenant, shares []RegionShare) {
		seen = append(seen, tn.Name)
		if tn.Name == "acme" {
			if len(shares) != 3 {
				t.Errorf("acme: shares %+v, want ap, eu and us", shares)
			}
			return
		}
		if len(shares) != 2 || shares[0].Region != "eu" || shares[1].Region != "us" {
			t.Errorf("%s: shares %+v, want eu and us", tn.Name, shares)
			return
		}
		want := 0
		if tn.Name == "x2" {
			want = 1
		}
		if shares[0].Leases != want || (want == 1) != (shares[0].Rate > 0 && shares[0].Burst > 0) || shares[1].Leases != 0 {
			t.Errorf("%s: shares %+v, want %d lease in eu with its rate and burst, none in us", tn.Name, shares, want)
		}
	}
	last, more := c.Shares("", 2, visit)
	if last != "x1" || !more {
		t.Fatalf("the first chunk ends at %q (more %v), want x1 and more", last, more)
	}
	if _, _, err := c.PutTenant(0, quota.Tenant{Name: "x2b", Rate: quota.One, Burst: quota.One, Regions: []string{"eu", "us"}}, "bob", true, 0); err != nil {
		t.Fatal(err)
	}
	last, more = c.Shares(last, 2, visit)
	if last != "x2b" || !more {
		t.Fatalf("the second chunk ends at %q (more %v), want x2b and more", last, more)
	}
	if last, more = c.Shares(last, 2, visit); last != "x5" || more {
		t.Fatalf("the third chunk ends at %q (more %v), want x5 and no more", last, more)
	}
	if got := strings.Join(seen, " "); got != "acme x1 x2 x2b x4 x5" {
		t.Errorf("visited %s, want acme x1 x2 x2b x4 x5: in name order, each once, the deleted x3 left out", got)
	}
}
