package region_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/afloat/afloat/quota"
	"github.com/afloat/afloat/quota/coordinator"
	"github.com/afloat/afloat/quota/region"
)

// holding is a region's calls as an attached agent makes them: each
// request and return carries the incarnation the coordinator issued.
type holding struct {
	srv *coordinator.Server
	inc uint64
}

func (h holding) RenewBatch(ctx context.Context, reqs []quota.Request) ([]quota.Result, error) {
	own := make([]quota.Request, len(reqs))
	for i, q := range reqs {
		q.Incarnation = h.inc
		own[i] = q
	}
	return h.srv.RenewBatch(ctx, own)
}

func (h holding) ReturnBatch(ctx context.Context, rets []quota.Return) ([]error, error) {
	own := make([]quota.Return, len(rets))
	for i, r := range rets {
		r.Incarnation = h.inc
		own[i] = r
	}
	return h.srv.ReturnBatch(ctx, own)
}

// waitLeased steps virtual time (synctest) 10 ms at a time, for a second
// at most, until n of l's tenants hold a lease, and says how many do.
func waitLeased(l *region.Limiter, n int) int {
	for range 100 {
		time.Sleep(10 * time.Millisecond)
		synctest.Wait()
		if got := l.Leases(l.Now(), 0).Leased; got == n {
			return got
		}
	}
	return l.Leases(l.Now(), 0).Leased
}

// attachedTenants is manyTenants with region eu attached, as an agent
// attaches it: the incarnation its calls carry (holding).
func attachedTenants(t *testing.T, n int) (names []string, srv *coordinator.Server, inc uint64, stop func()) {
	t.Helper()
	names, srv, stop = manyTenants(t, n)
	inc, err := srv.Attach(context.Background(), "eu", "test")
	if err != nil {
		stop()
		t.Fatal(err)
	}
	return names, srv, inc, stop
}

// TestExitEndsTheLeasesAtOnce: WithExit, a region that shuts down ends
// its 5,000 leases with one call (the detach) and sends no return, and
// its journal records every one given back; the coordinator then counts
// none, and the region is free for the next agent at once. When the exit
// fails, the leases count until they end, and RunStats says they were
// not given back. Virtual time (synctest).
func TestExitEndsTheLeasesAtOnce(t *testing.T) {
	const n = 5_000
	for _, failing := range []bool{false, true} {
		synctest.Test(t, func(t *testing.T) {
			names, srv, inc, stop := attachedTenants(t, n)
			defer stop()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			rec := &recorder{Coordinator: holding{srv, inc}, start: time.Now()}
			l, err := region.New(region.DefaultConfig("eu", names...))
			if err != nil {
				t.Fatal(err)
			}
			var exits atomic.Int32
			errGone := errors.New("coordinator out of reach")
			exit := func(ctx context.Context) error {
				exits.Add(1)
				if failing {
					return errGone
				}
				return srv.Detach(ctx, "eu", inc)
			}
			j := &journal{}
			rctx, rcancel := context.WithCancel(ctx)
			var wg sync.WaitGroup
			wg.Go(func() { l.Run(rctx, rec, region.WithJournal(j), region.WithExit(exit)) })
			if got := waitLeased(l, n); got != n {
				t.Fatalf("failing %v: %d of %d tenants leased after a second", failing, got, n)
			}
			time.Sleep(7 * time.Second) // renewals, and leases they replaced given back
			synctest.Wait()
			returnsBefore := l.RunStats().Returns
			callsBefore := len(rec.snapshot())
			rcancel()
			wg.Wait()

			st := l.RunStats()
			if got := exits.Load(); got != 1 {
				t.Errorf("failing %v: exit called %d times, want once", failing, got)
			}
			for _, c := range rec.snapshot()[callsBefore:] {
				if !c.renew {
					t.Errorf("failing %v: a return call of %d at the shutdown: want the exit alone", failing, c.n)
				}
			}
			if got := len(j.returns); got < n {
				t.Errorf("failing %v: the journal recorded %d returns, want every lease (%d) and the replaced ones", failing, got, n)
			}
			if got := l.Leases(l.Now(), 0).Leased; got != 0 {
				t.Errorf("failing %v: %d tenants still spend under a lease after Run ended", failing, got)
			}
			live := len(srv.LiveIDs())
			if failing {
				if st.ReturnFailures < n || live == 0 {
					t.Errorf("failing %v: %d return failures and %d leases counting at the coordinator; want the %d leases not given back, counting", failing, st.ReturnFailures, live, n)
				}
				return
			}
			if st.Returns-returnsBefore != n || st.ReturnFailures != 0 || live != 0 {
				t.Errorf("failing %v: %d leases given back at the end, %d failures, %d still counting at the coordinator; want %d, 0, 0",
					failing, st.Returns-returnsBefore, st.ReturnFailures, live, n)
			}
			if _, err := srv.Attach(ctx, "eu", "the next agent"); err != nil {
				t.Errorf("failing %v: the next agent's attach: %v, want it at once", failing, err)
			}
		})
	}
}
