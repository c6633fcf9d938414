package chaos

import (
	"strings"
	"testing"
	"time"

	"github.com/afloat/afloat/quota"
)

// TestCheckerTenantShrink: after a shrink the old limits hold while the
// leases granted before it count, the new ones after; an admission over
// the new bound after the transition is a violation, one within the old
// bound during it is not.
func TestCheckerTenantShrink(t *testing.T) {
	s := int64(time.Second)
	run := func(extra int64) Report {
		c := NewChecker()
		evs := []Event{
			{T: 0, Ev: "start", Tenant: "acme", Rate: 100 * quota.One, Burst: 100 * quota.One, N: 1, Why: "hard"},
			{T: 0, Ev: "lease", Tenant: "acme", Region: "eu", ID: 1, Epoch: 1, Rate: 100 * quota.One, Burst: 100 * quota.One, Activates: 0, Expires: 10 * s},
			{T: 0, Ev: "install", Tenant: "acme", Region: "eu", ID: 1},
			{T: 1 * s, Ev: "tenant", Tenant: "acme", Rate: 10 * quota.One, Burst: 10 * quota.One, N: 1, Mode: "hard", Why: "update", By: "alice"},
		}
		// During the transition the old lease is spent at the old R.
		for k := int64(1); k <= 9; k++ {
			evs = append(evs, Event{T: k * s, Ev: "admit", Tenant: "acme", Region: "eu", N: 100})
		}
		evs = append(evs,
			Event{T: 10 * s, Ev: "expire", Tenant: "acme", Region: "eu", ID: 1},
			Event{T: 10 * s, Ev: "lease", Tenant: "acme", Region: "eu", ID: 2, Epoch: 1, Rate: 10 * quota.One, Burst: 10 * quota.One, Activates: 10 * s, Expires: 30 * s},
			Event{T: 10 * s, Ev: "install", Tenant: "acme", Region: "eu", ID: 2})
		// After it, at the new R: [11 s, 20 s] may admit 10·9 + 10 = 100.
		for k := int64(11); k <= 20; k++ {
			n := int64(10)
			if k == 20 {
				n += extra
			}
			evs = append(evs, Event{T: k * s, Ev: "admit", Tenant: "acme", Region: "eu", N: n})
		}
		for _, e := range evs {
			c.Write(&e)
		}
		return c.Finish(21 * s)
	}
	if r := run(0); r.Violations != 0 {
		t.Fatalf("within the bound: %d violations: %v", r.Violations, r.Messages)
	}
	r := run(1)
	if r.Violations == 0 || !strings.Contains(r.Messages[0], "R·Δ + B is 100 ") {
		t.Fatalf("one token over the new bound: %+v", r)
	}
	// Without the old limits' hold the transition's 900 would break the
	// new bound: the hold is what lets it pass, and it ends.
	c := NewChecker()
	for _, e := range []Event{
		{T: 0, Ev: "start", Tenant: "acme", Rate: 100 * quota.One, Burst: 100 * quota.One, N: 1, Why: "hard"},
		{T: 1 * s, Ev: "tenant", Tenant: "acme", Rate: 10 * quota.One, Burst: 10 * quota.One, N: 1, Mode: "hard", Why: "update"},
		{T: 1 * s, Ev: "lease", Tenant: "acme", Region: "eu", ID: 1, Epoch: 1, Rate: 100 * quota.One, Burst: 100 * quota.One, Activates: s, Expires: 10 * s},
	} {
		c.Write(&e)
	}
	if r := c.Finish(11 * s); r.Violations == 0 {
		t.Fatal("a lease of the old R granted after the shrink passed the invariants")
	}
}

// TestCheckerTenantStarts: a start event of a changed tenant is a
// process's config file, not checked; one of an unchanged tenant still
// must match.
func TestCheckerTenantStarts(t *testing.T) {
	c := NewChecker()
	c.Write(&Event{T: 0, Ev: "start", Tenant: "acme", Rate: quota.One, Burst: quota.One, N: 1, Why: "hard"})
	c.Write(&Event{T: 1, Ev: "start", Tenant: "acme", Rate: 2 * quota.One, Burst: quota.One, N: 1, Why: "hard"})
	if r := c.Finish(2); r.Violations != 1 {
		t.Fatalf("a different start of an unchanged tenant: %d violations", r.Violations)
	}
	c = NewChecker()
	c.Write(&Event{T: 0, Ev: "tenant", Tenant: "acme", Rate: quota.One, Burst: quota.One, N: 1, Mode: "hard", Why: "create"})
	c.Write(&Event{T: 1, Ev: "start", Tenant: "acme", Rate: 2 * quota.One, Burst: quota.One, N: 1, Why: "hard"})
	if r := c.Finish(2); r.Violations != 0 {
		t.Fatalf("a config file's start of a changed tenant: %v", r.Messages)
	}
}
