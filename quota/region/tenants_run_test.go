package region_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/afloat/afloat/quota"
	"github.com/afloat/afloat/quota/coordinator"
	"github.com/afloat/afloat/quota/region"
)

// counting passes calls to a coordinator, counts renewals by tenant, and
// keeps the returns it passed, with the coordinator's answers.
type counting struct {
	region.Coordinator
	mu      sync.Mutex
	renews  map[string]int
	returns []answeredReturn
}

type answeredReturn struct {
	ret quota.Return
	err error
}

func (c *counting) ReturnBatch(ctx context.Context, rets []quota.Return) ([]error, error) {
	errs, err := c.Coordinator.ReturnBatch(ctx, rets)
	c.mu.Lock()
	for i, ret := range rets {
		e := err
		if e == nil {
			e = errs[i]
		}
		c.returns = append(c.returns, answeredReturn{ret, e})
	}
	c.mu.Unlock()
	return errs, err
}

// returnsOf are the returns of tenant's leases the coordinator answered.
func (c *counting) returnsOf(tenant string) []answeredReturn {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []answeredReturn
	for _, r := range c.returns {
		if r.ret.Tenant == tenant {
			out = append(out, r)
		}
	}
	return out
}

func (c *counting) RenewBatch(ctx context.Context, reqs []quota.Request) ([]quota.Result, error) {
	c.mu.Lock()
	for _, req := range reqs {
		c.renews[req.Tenant]++
	}
	c.mu.Unlock()
	return c.Coordinator.RenewBatch(ctx, reqs)
}

func (c *counting) count(tenant string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.renews[tenant]
}

// TestRunFollowsSetTenants: Run asks for a tenant added while it runs at
// once (its first grant within a pass, in virtual time), stops renewing a
// removed one, and gives the removed one's lease back to the coordinator
// with its balance. Virtual time (synctest).
func TestRunFollowsSetTenants(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv, stopSrv := runAcmeAndBeta(t)
		defer stopSrv()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		l, err := region.New(region.DefaultConfig("eu", "acme"))
		if err != nil {
			t.Fatal(err)
		}
		c := &counting{Coordinator: srv, renews: map[string]int{}}
		var wg sync.WaitGroup
		wg.Go(func() { l.Run(ctx, c) })
		time.Sleep(time.Second)
		synctest.Wait()
		if !l.Status(l.Now(), "acme").Valid || l.Allow("beta", 1) {
			t.Fatal("acme without a lease after 1 s, or beta admitted before it was added")
		}

		if _, _, err := l.SetTenants(l.Now(), []string{"acme", "beta"}); err != nil {
			t.Fatal(err)
		}
		synctest.Wait() // Run woke, asked and installed: no time passed
		if st := l.Status(l.Now(), "beta"); !st.Valid || st.Lease.Rate != 50*quota.One {
			t.Fatalf("beta without its lease right after it was added: %+v", st)
		}
		// A new lease starts empty: 101 ms at 50/s (derated by MaxDrift)
		// refills 5.05 tokens.
		time.Sleep(101 * time.Millisecond)
		if got := admitted(l, "beta", 10); got != 5 {
			t.Fatalf("beta admitted %d of 10 after 101 ms at 50/s, want 5", got)
		}

		time.Sleep(time.Second)
		synctest.Wait()
		acme := l.Status(l.Now(), "acme")
		if _, _, err := l.SetTenants(l.Now(), []string{"beta"}); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		got := c.returnsOf("acme") // beta's renewals give back the leases they replace
		if len(got) != 1 || got[0].err != nil || got[0].ret.LeaseID != acme.Lease.ID || got[0].ret.Balance != acme.Balance {
			t.Fatalf("returns %+v, want acme's lease %d with its balance %v, acknowledged", got, acme.Lease.ID, acme.Balance)
		}
		if l.Allow("acme", 1) {
			t.Fatal("removed acme admitted")
		}
		n, nb := c.count("acme"), c.count("beta")
		time.Sleep(time.Minute)
		synctest.Wait()
		if c.count("acme") != n {
			t.Fatalf("acme renewed %d times after it was removed", c.count("acme")-n)
		}
		if c.count("beta") < nb+10 || !l.Allow("beta", 1) {
			t.Fatalf("beta renewed %d times in a minute of 10 s leases, or refused", c.count("beta")-nb)
		}
		cancel()
		wg.Wait()
		stopSrv()
	})
}

// runAcmeAndBeta runs a coordinator in memory with two tenants in eu;
// stop ends it and waits for it.
func runAcmeAndBeta(t *testing.T) (srv *coordinator.Server, stop func()) {
	t.Helper()
	tenants := []quota.Tenant{
		{Name: "acme", Rate: 100 * quota.One, Burst: 1000 * quota.One, Regions: []string{"eu"}},
		{Name: "beta", Rate: 50 * quota.One, Burst: 500 * quota.One, Regions: []string{"eu"}},
	}
	ctx, cancel := context.WithCancel(context.Background())
	srv, err := coordinator.NewServer(ctx, coordinator.Config{Tenants: tenants}, coordinator.NewMemLedger())
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Go(func() { srv.Run(ctx) })
	return srv, func() { cancel(); wg.Wait() }
}

func admitted(l *region.Limiter, tenant string, n int) int {
	got := 0
	for range n {
		if l.Allow(tenant, 1) {
			got++
		}
	}
	return got
}

// TestReturnOfADeletedTenant: the usual order when an operator deletes a
// tenant is coordinator first, regions after (they learn it from the
// tenant list); the region's return then finds the tenant gone, and its
// leases with it. That return is done, not lost: no failure counted, no
// warning that the coordinator still counts the lease.
func TestReturnOfADeletedTenant(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv, stopSrv := runAcmeAndBeta(t)
		defer stopSrv()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		l, err := region.New(region.DefaultConfig("eu", "acme", "beta"))
		if err != nil {
			t.Fatal(err)
		}
		var logs strings.Builder
		logger := slog.New(slog.NewTextHandler(&logs, nil))
		c := &counting{Coordinator: srv, renews: map[string]int{}}
		var wg sync.WaitGroup
		wg.Go(func() { l.Run(ctx, c, region.WithLogger(logger)) })
		time.Sleep(time.Second)
		synctest.Wait()
		if !l.Status(l.Now(), "beta").Valid {
			t.Fatal("beta without a lease after 1 s")
		}
		before := l.RunStats()
		if err := srv.DeleteTenant(ctx, "beta", "ops", 0); err != nil {
			t.Fatal(err)
		}
		if _, _, err := l.SetTenants(l.Now(), []string{"acme"}); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if got := c.returnsOf("beta"); len(got) != 1 || !errors.Is(got[0].err, quota.ErrUnknownTenant) {
			t.Fatalf("beta's returns after its deletion: %+v, want one, answered unknown tenant", got)
		}
		after := l.RunStats()
		if after.ReturnFailures != before.ReturnFailures || after.Returns != before.Returns+1 {
			t.Fatalf("%d return failures and %d returns counted, want none and one, done", after.ReturnFailures-before.ReturnFailures, after.Returns-before.Returns)
		}
		if strings.Contains(logs.String(), "return lost") {
			t.Fatalf("a return of a deleted tenant logged as lost:\n%s", logs.String())
		}
		cancel()
		wg.Wait()
		stopSrv()
	})
}
