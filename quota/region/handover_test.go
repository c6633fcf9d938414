package region_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/afloat/afloat/quota"
	"github.com/afloat/afloat/quota/region"
)

// TestHandoverResumesWithoutWrites: a region of 5,000 tenants stops
// WithHandover — every lease taken out of use and recorded given back,
// no return or exit sent, the coordinator still counting them — and the
// next limiter of the region, resuming the handover as the same
// incarnation, has every tenant leased again in a second with almost no
// ledger writes: its first requests name the leases handed over
// (quota.Request.Resumed) and are answered with covered leases — after 7
// s of renewals, when the leases handed over are covered ones, and right
// after the first leases, when they are young written ones, which a
// request that did not say Resumed would get back unchanged, a lease the
// new limiter cannot install (it never measured its end). Without
// the handover (a limiter that starts afresh) the same start writes a
// lease for every tenant. Virtual time (synctest).
func TestHandoverResumesWithoutWrites(t *testing.T) {
	const n = 5_000
	for _, c := range []struct {
		resume bool
		after  time.Duration // from the first leases to the handover
	}{{true, 7 * time.Second}, {true, 500 * time.Millisecond}, {false, 7 * time.Second}} {
		resume := c.resume
		synctest.Test(t, func(t *testing.T) {
			names, srv, inc, stop := attachedTenants(t, n)
			defer stop()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			run := func(l *region.Limiter, opts ...region.RunOption) (stopRun func(), rec *recorder) {
				rec = &recorder{Coordinator: holding{srv, inc}, start: time.Now()}
				rctx, rcancel := context.WithCancel(ctx)
				var wg sync.WaitGroup
				wg.Go(func() { l.Run(rctx, rec, opts...) })
				if got := waitLeased(l, n); got != n {
					t.Fatalf("resume %v: %d of %d tenants leased after a second", resume, got, n)
				}
				return func() { rcancel(); wg.Wait() }, rec
			}

			first, err := region.New(region.DefaultConfig("eu", names...))
			if err != nil {
				t.Fatal(err)
			}
			var h region.Handover
			j := &journal{}
			stopFirst, rec := run(first, region.WithJournal(j), region.WithHandover(&h))
			time.Sleep(c.after) // 7 s: renewals, covered leases
			synctest.Wait()
			callsBefore := len(rec.snapshot())
			stopFirst()
			for _, c := range rec.snapshot()[callsBefore:] {
				if !c.renew {
					t.Errorf("a return call of %d at the handover: want none", c.n)
				}
			}
			if h.Region != "eu" || len(h.Leases) != n {
				t.Fatalf("the handover holds %d leases of region %q, want %d of eu", len(h.Leases), h.Region, n)
			}
			for _, hl := range h.Leases {
				if hl.Left <= 0 || hl.Left > 10*time.Second {
					t.Fatalf("lease %d of %s handed over with %v left: want what it had, within a lease", hl.Lease, hl.Tenant, hl.Left)
				}
			}
			if got := len(j.returns); got < n {
				t.Errorf("the journal recorded %d leases given back, want every one (%d)", got, n)
			}
			if got := first.Leases(first.Now(), 0).Leased; got != 0 {
				t.Errorf("%d tenants still spend under a lease after the handover", got)
			}
			if live := len(srv.LiveIDs()); live < n {
				t.Errorf("%d leases count at the coordinator after the handover, want the %d handed over", live, n)
			}

			next, err := region.New(region.DefaultConfig("eu", names...))
			if err != nil {
				t.Fatal(err)
			}
			if resume {
				if got, err := next.Resume(h); got != n || err != nil {
					t.Fatalf("Resume: %d, %v; want %d", got, err, n)
				}
			}
			opsBefore := srv.Stats().Ops
			stopNext, _ := run(next)
			written := srv.Stats().Ops - opsBefore
			stopNext()
			st := next.RunStats()
			t.Logf("resume %v after %v: %d operations written for %d tenants leased again", resume, c.after, written, n)
			if resume && (st.Ignored != 0 || st.Renewals != n) {
				t.Errorf("resumed: %d answers not installed, %d grants; want every tenant's first answer a lease to install", st.Ignored, st.Renewals)
			}
			if resume && written > n/10 {
				t.Errorf("resumed: %d operations written to lease %d tenants again, want almost none (covered leases)", written, n)
			}
			if !resume && written < n {
				t.Errorf("afresh: %d operations written to lease %d tenants, want one a tenant at least (the test tells the two apart)", written, n)
			}
		})
	}
}

// TestResumeRefuses: a handover of another region, or one given to a
// limiter already running, is refused; tenants not served are skipped.
func TestResumeRefuses(t *testing.T) {
	l, err := region.New(region.DefaultConfig("eu", "a", "b"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Resume(region.Handover{Region: "us"}); err == nil {
		t.Error("a handover of us resumed in eu")
	}
	got, err := l.Resume(region.Handover{Region: "eu", Leases: []region.HandedLease{{Tenant: "a", Lease: 7, Epoch: 1}, {Tenant: "zz", Lease: 8, Epoch: 1}}})
	if got != 1 || err != nil {
		t.Fatalf("Resume: %d, %v; want 1 (zz is not served)", got, err)
	}
	q, err := l.Request(0, "a")
	if err != nil || q.Holding != 7 || !q.Resumed {
		t.Errorf("a's request after the resume: %+v, %v; want holding 7, resumed", q, err)
	}
	q, err = l.Request(0, "b")
	if err != nil || q.Holding != 0 || q.Resumed {
		t.Errorf("b's request: %+v, %v; want none held", q, err)
	}
}

// slowAnswers passes renewals to the coordinator at once but, while slow,
// holds each answer until gate is closed or the call's ctx ends — as an
// HTTP client cancelled mid-call loses an answer the coordinator gave.
type slowAnswers struct {
	holding
	slow    atomic.Bool
	gate    chan struct{}
	waiting atomic.Int32
}

func (s *slowAnswers) RenewBatch(ctx context.Context, reqs []quota.Request) ([]quota.Result, error) {
	res, err := s.holding.RenewBatch(ctx, reqs)
	if !s.slow.Load() {
		return res, err
	}
	s.waiting.Add(1)
	select {
	case <-s.gate:
		return res, err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// TestHandoverWaitsForCallsUnderWay: a limiter stopped WithHandover while
// a call of renewals is under way lets it be answered and installs its
// grants before it hands over, so that every lease handed over is the
// newest the coordinator answered the region. Cancelled, the call's
// tenants handed over the leases they held before it, and their next
// requests named leases older than the coordinator's newest — which, in
// a cluster whose writes are queued, needed writes of their own.
// Virtual time (synctest).
func TestHandoverWaitsForCallsUnderWay(t *testing.T) {
	const n = 500
	synctest.Test(t, func(t *testing.T) {
		names, srv, inc, stop := attachedTenants(t, n)
		defer stop()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		coord := &slowAnswers{holding: holding{srv, inc}, gate: make(chan struct{})}
		l, err := region.New(region.DefaultConfig("eu", names...))
		if err != nil {
			t.Fatal(err)
		}
		var h region.Handover
		rctx, rcancel := context.WithCancel(ctx)
		var wg sync.WaitGroup
		wg.Go(func() { l.Run(rctx, coord, region.WithHandover(&h)) })
		time.Sleep(7 * time.Second) // leased, and renewing
		synctest.Wait()
		if got := l.Leases(l.Now(), 0).Leased; got != n {
			t.Fatalf("%d of %d tenants leased", got, n)
		}
		coord.slow.Store(true)
		for range 1000 {
			if coord.waiting.Load() > 0 {
				break
			}
			time.Sleep(10 * time.Millisecond)
			synctest.Wait()
		}
		if coord.waiting.Load() == 0 {
			t.Fatal("no call of renewals under way in 10 s")
		}
		rcancel()
		time.Sleep(100 * time.Millisecond) // the answer is on its way
		close(coord.gate)
		wg.Wait()
		older := 0
		for _, hl := range h.Leases {
			newest := uint64(0)
			for _, ls := range srv.Live(hl.Tenant) {
				if ls.Region == "eu" {
					newest = max(newest, ls.ID)
				}
			}
			if hl.Lease < newest {
				older++
			}
		}
		if older > 0 || len(h.Leases) != n {
			t.Errorf("%d of %d leases handed over are older than the newest the coordinator answered: want every one the newest", older, len(h.Leases))
		}
	})
}
