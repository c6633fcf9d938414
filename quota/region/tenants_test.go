package region

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/afloat/afloat/quota"
)

// grantFor asks for tenant at now and installs a grant of rate and burst,
// filled with burst tokens, at now.
func grantFor(t *testing.T, l *Limiter, now int64, tenant string, rate, burst float64) Installed {
	t.Helper()
	req, err := l.Request(now, tenant)
	if err != nil {
		t.Fatal(err)
	}
	nextID++
	in := l.Install(now, quota.Grant{
		Lease: quota.Lease{ID: nextID, Tenant: tenant, Region: "eu", Epoch: 1, Rate: quota.Tokens(rate),
			Burst: quota.Tokens(burst), Transfer: quota.Tokens(burst)},
		Seq: req.Seq, ValidFor: 10 * time.Second, Margin: 500 * time.Millisecond,
	})
	if !in.OK() {
		t.Fatalf("grant for %s: %v", tenant, in.Outcome)
	}
	return in
}

// TestSetTenants: an added tenant is refused until its first grant, then
// admitted; a removed one is refused at once, its lease invalidated and
// queued for Run to give back with its balance; one added again numbers
// its requests after every earlier one and starts with no lease.
func TestSetTenants(t *testing.T) {
	l := newLimiter(t)
	acme := grantFor(t, l, 0, "acme", 10, 100)
	if got := admitN(l, 0, 30); got != 30 {
		t.Fatalf("acme admitted %d of 30, want 30", got)
	}

	added, removed, err := l.SetTenants(0, []string{"acme", "beta"})
	if err != nil || !slices.Equal(added, []string{"beta"}) || removed != nil {
		t.Fatalf("SetTenants: added %v removed %v err %v; want [beta] [] nil", added, removed, err)
	}
	if got := l.Tenants(); !slices.Equal(got, []string{"acme", "beta"}) {
		t.Fatalf("Tenants %v, want [acme beta]", got)
	}
	if l.AllowAt(0, "beta", 1) {
		t.Fatal("beta admitted before its first grant")
	}
	if c, ok := l.Counts("beta"); !ok || c.NoLease != 1 {
		t.Fatalf("beta counts %+v %v: want one refusal for no lease", c, ok)
	}
	if !l.Due(0, "beta") {
		t.Fatal("beta not due at once")
	}
	grantFor(t, l, ms, "beta", 10, 5)
	for i := range 5 {
		if !l.AllowAt(ms, "beta", 1) {
			t.Fatalf("beta refused token %d of its burst of 5", i+1)
		}
	}
	if l.AllowAt(ms, "beta", 1) {
		t.Fatal("beta admitted a sixth token at once from a burst of 5")
	}
	if _, _, err := l.SetTenants(ms, []string{"acme", "beta"}); err != nil {
		t.Fatal(err)
	}
	if got := l.takeLeaving(); got != nil {
		t.Fatalf("returns %v queued by a call that changed nothing", got)
	}

	lastSeq := l.idx.Load().buckets["acme"].seq
	added, removed, err = l.SetTenants(2*ms, []string{"beta"})
	if err != nil || added != nil || !slices.Equal(removed, []string{"acme"}) {
		t.Fatalf("SetTenants: added %v removed %v err %v; want [] [acme] nil", added, removed, err)
	}
	unknown := l.UnknownTenant()
	if l.AllowAt(2*ms, "acme", 1) || l.UnknownTenant() != unknown+1 {
		t.Fatalf("removed acme admitted, or not counted as unknown (%d → %d)", unknown, l.UnknownTenant())
	}
	if _, err := l.Request(2*ms, "acme"); !errors.Is(err, quota.ErrUnknownTenant) {
		t.Fatalf("Request for removed acme: %v, want ErrUnknownTenant", err)
	}
	if l.Due(2*ms, "acme") {
		t.Fatal("removed acme still due for renewal")
	}
	if _, ok := l.Counts("acme"); ok {
		t.Fatal("Counts still has removed acme")
	}
	// 100 filled, 30 spent, 2 ms at 10/s refilled 0.02: 70.02 back.
	rets := l.takeLeaving()
	want := quota.Return{Tenant: "acme", Region: "eu", LeaseID: acme.Lease.ID, Epoch: 1, Balance: quota.Tokens(70.02)}
	if len(rets) != 1 || rets[0] != want {
		t.Fatalf("queued returns %+v, want [%+v]", rets, want)
	}
	if l.takeLeaving() != nil {
		t.Fatal("a return queued twice")
	}

	// Added again: no lease, request numbers after the old ones.
	if _, _, err := l.SetTenants(3*ms, []string{"beta", "acme"}); err != nil {
		t.Fatal(err)
	}
	if l.AllowAt(3*ms, "acme", 1) {
		t.Fatal("acme admitted again before a new grant")
	}
	req, err := l.Request(3*ms, "acme")
	if err != nil || req.Seq <= lastSeq || req.Epoch != 1 {
		t.Fatalf("request after re-adding: seq %d (old %d), epoch %d, err %v; want seq above, epoch 1", req.Seq, lastSeq, req.Epoch, err)
	}
}

// TestSetTenantsRefusesBadSets: a bad set changes nothing, and the error
// names the entry and the allowed range.
func TestSetTenantsRefusesBadSets(t *testing.T) {
	l := newLimiter(t)
	for _, tc := range []struct {
		set  []string
		want string
	}{
		{[]string{"acme", "acme"}, `tenants[1] "acme": listed twice`},
		{[]string{"beta", ""}, `tenants[1] "": want 1 to 128 bytes`},
		{[]string{strings.Repeat("x", 129)}, "want 1 to 128 bytes"},
		{make([]string, MaxTenants+1), "100001 tenants: want 0 to 100000"},
	} {
		if _, _, err := l.SetTenants(0, tc.set); !errors.Is(err, quota.ErrConfig) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("SetTenants(%d names): %v, want ErrConfig with %q", len(tc.set), err, tc.want)
		}
	}
	if got := l.Tenants(); !slices.Equal(got, []string{"acme"}) {
		t.Fatalf("Tenants %v after refused sets, want [acme]", got)
	}
	// The empty set is allowed: every tenant of a region may be deleted.
	if _, removed, err := l.SetTenants(0, nil); err != nil || !slices.Equal(removed, []string{"acme"}) {
		t.Fatalf("SetTenants(nil): removed %v, err %v", removed, err)
	}
	if l.AllowAt(0, "acme", 1) || len(l.Tenants()) != 0 {
		t.Fatal("an empty limiter admitted, or lists tenants")
	}
}

// TestSetTenantsUnderAllow: goroutines spend acme's lease and ask for
// tenants that come and go, while the set changes back and forth across
// the linear-scan bound (run with -race). acme is never refused: its
// bucket is the same through every change; the tenants that come and go
// never get a grant, so they are never admitted.
func TestSetTenantsUnderAllow(t *testing.T) {
	l := withCaches(t, -1)
	grantFor(t, l, 0, "acme", 1, 1e6)
	small := []string{"acme", "t0", "t1"}
	big := []string{"acme"}
	for i := range 2 * fewTenants {
		big = append(big, fmt.Sprintf("t%d", i))
	}
	var attempts, admitted, others atomic.Int64
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for w := range 4 {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				attempts.Add(1)
				if l.AllowAt(0, "acme", 1) {
					admitted.Add(1)
				}
				if l.AllowAt(0, fmt.Sprintf("t%d", (i+w)%(2*fewTenants)), 1) {
					others.Add(1)
				}
			}
		})
	}
	const changes = 400
	for i := range changes {
		set := small
		if i%2 == 1 {
			set = big
		}
		added, removed, err := l.SetTenants(0, set)
		if err != nil || len(added)+len(removed) == 0 {
			t.Fatalf("change %d: added %v removed %v err %v", i, added, removed, err)
		}
	}
	close(stop)
	wg.Wait()
	if admitted.Load() != attempts.Load() || others.Load() != 0 {
		t.Fatalf("acme admitted %d of %d; others admitted %d, want 0 (over %d changes)", admitted.Load(), attempts.Load(), others.Load(), changes)
	}
	if got := l.Tenants(); !slices.Equal(got, big) {
		t.Fatalf("Tenants %v, want %v", got, big)
	}
}

// TestNoTenantsAtFirst: a limiter may start with no tenant (a region
// waiting for the coordinator's list); it refuses everything until
// SetTenants and a grant.
func TestNoTenantsAtFirst(t *testing.T) {
	l, err := New(DefaultConfig("eu"))
	if err != nil {
		t.Fatal(err)
	}
	if l.AllowAt(0, "acme", 1) || len(l.Tenants()) != 0 || l.UnknownTenant() != 1 {
		t.Fatalf("an empty limiter: tenants %v, unknown %d", l.Tenants(), l.UnknownTenant())
	}
	if added, _, err := l.SetTenants(0, []string{"acme"}); err != nil || !slices.Equal(added, []string{"acme"}) {
		t.Fatalf("SetTenants: added %v, err %v", added, err)
	}
	l.cfg.MaxDrift = 0
	grantFor(t, l, 0, "acme", 10, 3)
	if got := admitN(l, 0, 5); got != 3 {
		t.Fatalf("admitted %d of 5 from a burst of 3, want 3", got)
	}
}
