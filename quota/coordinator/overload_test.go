package coordinator

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/afloat/afloat/quota"
)

// manyTenants is n tenants of R 100 and B 200 in eu, us and ap.
func manyTenants(n int) []quota.Tenant {
	out := make([]quota.Tenant, n)
	for i := range out {
		out[i] = quota.Tenant{Name: fmt.Sprintf("t%05d", i), Rate: 100 * quota.One, Burst: 200 * quota.One,
			Regions: []string{"eu", "us", "ap"}}
	}
	return out
}

// slowLedger is a MemLedger each of whose writes takes per op, as an etcd
// on a loaded machine; it records the size of every write it was given.
type slowLedger struct {
	*MemLedger
	per    time.Duration
	maxOps int // refuse a write of more ops than this (ErrTxnTooLarge); 0: none
	mu     sync.Mutex
	sizes  []int
}

func (l *slowLedger) Commit(ctx context.Context, epoch uint64, ops ...Op) error {
	l.mu.Lock()
	l.sizes = append(l.sizes, len(ops))
	per := l.per
	l.mu.Unlock()
	if l.maxOps > 0 && len(ops) > l.maxOps {
		return fmt.Errorf("slow ledger: %d ops: %w", len(ops), ErrTxnTooLarge)
	}
	time.Sleep(time.Duration(len(ops)) * per)
	return l.MemLedger.Commit(ctx, epoch, ops...)
}

// TestGivenUpWorkIsDropped is the retry storm's cure: a region asks for
// the first leases of 2,000 tenants with a patience of 200 ms, and the
// ledger takes 100 µs an op, so that a batch's writes take 200 ms and
// more. What the committer could not write before the caller's deadline
// — by its estimate when the call comes (the request is refused busy),
// or when the write's turn comes (it is taken back) — is never written,
// and counts nowhere: every lease the
// coordinator counts afterwards was answered to the caller, and the
// ledger holds no other. The region asks again for the rest, and all are
// granted in a few rounds. (Before, every grant was written and counted
// whatever its caller had done meanwhile: leases nobody held, each
// counting against its tenant until it expired.)
func TestGivenUpWorkIsDropped(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		tenants := manyTenants(2000)
		l := &slowLedger{MemLedger: NewMemLedger(), per: 100 * time.Microsecond}
		srv, err := NewServer(ctx, Config{Tenants: tenants}, l)
		if err != nil {
			t.Fatal(err)
		}
		go srv.Run(ctx)
		time.Sleep(2 * time.Second) // the seeding's writes
		granted := map[uint64]bool{}
		refusedWhole, refusedOne := 0, 0
		want := map[string]bool{}
		for _, tn := range tenants {
			want[tn.Name] = true
		}
		for round := 0; len(want) > 0; round++ {
			if round == 20 {
				t.Fatalf("%d tenants still without a lease after 20 rounds", len(want))
			}
			var reqs []quota.Request
			for name := range want {
				reqs = append(reqs, quota.Request{Tenant: name, Region: "eu", Seq: seq(), Demand: -1})
			}
			rctx, rcancel := context.WithTimeout(ctx, 200*time.Millisecond)
			res, err := srv.RenewBatch(rctx, reqs)
			rcancel()
			var busy *quota.BusyError
			switch {
			case errors.As(err, &busy):
				// Nothing of it could be written in time: refused whole.
				if busy.Need <= 0 {
					t.Fatalf("round %d: %v: says not how long a call needs", round, err)
				}
				refusedWhole++
			case err != nil:
				t.Fatalf("round %d: %v", round, err)
			}
			for i, r := range res {
				switch {
				case r.Err == nil:
					granted[r.Grant.Lease.ID] = true
					delete(want, reqs[i].Tenant)
				case errors.Is(r.Err, quota.ErrBusy):
					refusedOne++
				}
			}
			time.Sleep(50 * time.Millisecond)
		}
		synctest.Wait()
		for _, id := range srv.LiveIDs() {
			if !granted[id] {
				t.Errorf("lease %d counts, but no caller was answered with it", id)
			}
		}
		b := l.Backup()
		for _, ls := range b.snap.Leases {
			if !granted[ls.ID] {
				t.Errorf("the ledger holds lease %d, which no caller was answered with", ls.ID)
			}
		}
		st := srv.Stats()
		if st.Abandoned+int64(refusedOne) == 0 {
			t.Fatalf("nothing taken back nor refused (%+v): the test shows nothing", st)
		}
		t.Logf("%d granted, %d requests refused busy (the writes ahead too long), %d calls refused whole, %d taken back, %d txns",
			len(granted), refusedOne, refusedWhole, st.Abandoned, st.Txns)
	})
}

// TestLateStepsTakenBack: a ledger that slows down after a call was
// admitted — its writes had been quick, so the whole call seemed to fit
// before its deadline — still writes nothing its caller has given up on:
// when a step's turn comes too near the deadline it is taken back, and
// every lease counted or held in the ledger afterwards was answered.
func TestLateStepsTakenBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		tenants := manyTenants(1000)
		l := &slowLedger{MemLedger: NewMemLedger()}
		srv, err := NewServer(ctx, Config{Tenants: tenants}, l)
		if err != nil {
			t.Fatal(err)
		}
		go srv.Run(ctx)
		time.Sleep(time.Second) // the seeding's writes, instant
		l.mu.Lock()
		l.per = time.Millisecond // from now on, 128 ms a full write
		l.mu.Unlock()
		reqs := make([]quota.Request, len(tenants))
		for i, tn := range tenants {
			reqs[i] = quota.Request{Tenant: tn.Name, Region: "eu", Seq: seq(), Demand: -1}
		}
		rctx, rcancel := context.WithTimeout(ctx, 300*time.Millisecond)
		res, err := srv.RenewBatch(rctx, reqs)
		rcancel()
		if err != nil {
			t.Fatal(err)
		}
		granted := map[uint64]bool{}
		for _, r := range res {
			if r.Err == nil {
				granted[r.Grant.Lease.ID] = true
			} else if !errors.Is(r.Err, ErrAbandoned) {
				t.Fatalf("a renewal refused with %v, want ErrAbandoned or a grant", r.Err)
			}
		}
		time.Sleep(time.Second)
		synctest.Wait()
		st := srv.Stats()
		if st.Abandoned == 0 || len(granted) == 0 {
			t.Fatalf("%d granted, %d taken back: want both", len(granted), st.Abandoned)
		}
		for _, id := range srv.LiveIDs() {
			if !granted[id] {
				t.Errorf("lease %d counts, but no caller was answered with it", id)
			}
		}
		for _, ls := range l.Backup().snap.Leases {
			if !granted[ls.ID] {
				t.Errorf("the ledger holds lease %d, which no caller was answered with", ls.ID)
			}
		}
	})
}

// TestAdmissionBounds: with one call in flight and one queued, a third
// call at once is refused whole with a *quota.BusyError that says how
// long to wait; the two admitted are answered.
func TestAdmissionBounds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		g := &gate{MemLedger: NewMemLedger(), open: make(chan struct{})}
		srv, err := NewServer(ctx, Config{Tenants: []quota.Tenant{seedTenant()}}, g, WithAdmission(1, 1), WithSmallAdmission(1, 1))
		if err != nil {
			t.Fatal(err)
		}
		go srv.Run(ctx)
		errs := make(chan error, 3)
		call := func(region string) {
			_, err := srv.RenewBatch(ctx, []quota.Request{{Tenant: "acme", Region: region, Seq: seq(), Demand: -1}})
			errs <- err
		}
		go call("eu")
		synctest.Wait() // in flight, its write held at the gate (after the seeding's)
		go call("us")
		synctest.Wait() // queued
		go call("ap")
		synctest.Wait()
		var busy *quota.BusyError
		select {
		case err := <-errs:
			if !errors.As(err, &busy) || !errors.Is(err, quota.ErrBusy) || busy.Wait <= 0 {
				t.Fatalf("the third call: %v; want a *quota.BusyError with a wait", err)
			}
		default:
			t.Fatal("the third call waits: want it refused at once")
		}
		close(g.open)
		for range 2 {
			if err := <-errs; err != nil {
				t.Fatalf("an admitted call: %v", err)
			}
		}
		if st := srv.Stats(); st.Busy != 1 {
			t.Fatalf("%d busy refusals counted, want 1", st.Busy)
		}
	})
}

// TestSmallCallsHavePlacesOfTheirOwn: with the one place for large calls
// taken and its one queue place too, a third large call is refused at
// once, but a call of one renewal is admitted — it brings one step, not
// a batch's — and answered once the ledger writes again. (Counted in the
// same places, it was refused: sixteen places capped a coordinator at
// 3,100 single renewals a second.)
func TestSmallCallsHavePlacesOfTheirOwn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		tenants := manyTenants(3*(SmallCall+1) + 1)
		g := &gate{MemLedger: NewMemLedger(), open: make(chan struct{})}
		srv, err := NewServer(ctx, Config{Tenants: tenants}, g, WithAdmission(1, 1))
		if err != nil {
			t.Fatal(err)
		}
		go srv.Run(ctx)
		batch := func(from, n int) []quota.Request {
			reqs := make([]quota.Request, n)
			for i := range reqs {
				reqs[i] = quota.Request{Tenant: tenants[from+i].Name, Region: "eu", Seq: seq(), Demand: -1}
			}
			return reqs
		}
		large := make(chan error, 3)
		for i := range 3 {
			go func() {
				_, err := srv.RenewBatch(ctx, batch(i*(SmallCall+1), SmallCall+1))
				large <- err
			}()
			synctest.Wait() // in flight; queued; refused
		}
		select {
		case err := <-large:
			if !errors.Is(err, quota.ErrBusy) {
				t.Fatalf("the third large call: %v; want refused busy", err)
			}
		default:
			t.Fatal("the third large call waits: want it refused at once")
		}
		small := make(chan error, 1)
		go func() {
			_, err := srv.RenewBatch(ctx, batch(3*(SmallCall+1), 1))
			small <- err
		}()
		synctest.Wait()
		select {
		case err := <-small:
			t.Fatalf("a call of one renewal, with the large calls' places full: %v; want it admitted and waiting for the ledger", err)
		default:
		}
		close(g.open)
		for _, ch := range []chan error{large, large, small} {
			if err := <-ch; err != nil {
				t.Fatalf("an admitted call: %v", err)
			}
		}
	})
}

// TestWritesFitTheLedger: a ledger that refuses a write of more than 8
// ops as too large (etcd's --max-txn-ops, set low) though the server was
// told nothing of it, and a detach that ends 40 leases in one step. Every
// call is answered, and after each refusal every write is smaller than
// the one refused: the server halves its transactions until they fit,
// splitting the steps (the detach's over several transactions), instead
// of writing the refused transaction again as it was.
func TestWritesFitTheLedger(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		tenants := manyTenants(40)
		l := &slowLedger{MemLedger: NewMemLedger(), maxOps: 8}
		srv, err := NewServer(ctx, Config{Tenants: tenants}, l)
		if err != nil {
			t.Fatal(err)
		}
		go srv.Run(ctx)
		inc, err := srv.Attach(ctx, "eu", "test:1")
		if err != nil {
			t.Fatal(err)
		}
		reqs := make([]quota.Request, len(tenants))
		for i, tn := range tenants {
			reqs[i] = quota.Request{Tenant: tn.Name, Region: "eu", Seq: seq(), Demand: -1, Incarnation: inc}
		}
		res, err := srv.RenewBatch(ctx, reqs)
		if err != nil {
			t.Fatal(err)
		}
		for i, r := range res {
			if r.Err != nil {
				t.Fatalf("request %d: %v", i, r.Err)
			}
		}
		if err := srv.Detach(ctx, "eu", inc); err != nil {
			t.Fatalf("detach: %v", err)
		}
		if live := srv.LiveIDs(); len(live) != 0 {
			t.Fatalf("%d leases count after the detach", len(live))
		}
		// The detach's ends are written in the background (Step.Background),
		// after the answer: the ledger is empty once they are, within a few
		// writes of virtual time.
		for range 100 {
			if len(l.Backup().snap.Leases) == 0 {
				break
			}
			time.Sleep(10 * time.Millisecond)
			synctest.Wait()
		}
		if n := len(l.Backup().snap.Leases); n != 0 {
			t.Fatalf("the ledger holds %d leases a second after the detach", n)
		}
		l.mu.Lock()
		sizes := append([]int(nil), l.sizes...)
		l.mu.Unlock()
		for i, n := range sizes {
			if n <= 8 {
				continue
			}
			for _, m := range sizes[i+1:] {
				if m >= n {
					t.Fatalf("writes of %v ops: %d refused as too large, then %d sent", sizes, n, m)
				}
			}
		}
		if st := srv.Stats(); st.Split == 0 || st.MaxOps > 8 {
			t.Fatalf("stats %+v: want a split and at most 8 ops a write", st)
		}
	})
}

// TestHopelessCallRefused: a call admitted with less time to its deadline
// than a write takes is refused whole, busy, with nothing proposed: the
// caller waits and asks again rather than time out on work done too late.
func TestHopelessCallRefused(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		srv, err := NewServer(ctx, Config{Tenants: []quota.Tenant{seedTenant()}}, NewMemLedger())
		if err != nil {
			t.Fatal(err)
		}
		go srv.Run(ctx)
		synctest.Wait()
		rctx, rcancel := context.WithTimeout(ctx, time.Microsecond)
		defer rcancel()
		_, err = srv.RenewBatch(rctx, []quota.Request{{Tenant: "acme", Region: "eu", Seq: seq(), Demand: -1}})
		if !errors.Is(err, quota.ErrBusy) {
			t.Fatalf("a call with a microsecond to go: %v, want quota.ErrBusy", err)
		}
		if live := srv.LiveIDs(); len(live) != 0 {
			t.Fatalf("leases %v count after a refused call", live)
		}
	})
}

// opsLedger is a MemLedger that keeps every write's ops, in order.
type opsLedger struct {
	*MemLedger
	slow   atomic.Bool // each write takes a millisecond an op
	mu     sync.Mutex
	writes [][]Op
}

func (l *opsLedger) Commit(ctx context.Context, epoch uint64, ops ...Op) error {
	l.mu.Lock()
	l.writes = append(l.writes, ops)
	l.mu.Unlock()
	if l.slow.Load() {
		time.Sleep(time.Duration(len(ops)) * time.Millisecond)
	}
	return l.MemLedger.Commit(ctx, epoch, ops...)
}

// leasedRegion runs a server of 200 tenants on l, with an agent attached
// to eu (its incarnation inc) and every tenant leased there; called in a
// synctest bubble, it returns once the server is idle.
func leasedRegion(t *testing.T, ctx context.Context, l Ledger, opts ...ServerOption) (srv *Server, tenants []quota.Tenant, inc uint64) {
	t.Helper()
	tenants = manyTenants(200)
	srv, err := NewServer(ctx, Config{Tenants: tenants}, l, opts...)
	if err != nil {
		t.Fatal(err)
	}
	go srv.Run(ctx)
	if inc, err = srv.Attach(ctx, "eu", "test:1"); err != nil {
		t.Fatal(err)
	}
	reqs := make([]quota.Request, len(tenants))
	for i, tn := range tenants {
		reqs[i] = quota.Request{Tenant: tn.Name, Region: "eu", Seq: seq(), Demand: -1, Incarnation: inc}
	}
	if _, err := srv.RenewBatch(ctx, reqs); err != nil {
		t.Fatal(err)
	}
	synctest.Wait()
	return srv, tenants, inc
}

// TestDetachEndsInTheBackground: an agent's detach ends every lease of
// its region at once; its answer waits only for the holder's record, and
// the leases' records go when the ledger has nothing else to write — a
// renewal of another region asked for meanwhile is written first — but
// they all go, and the events of the ends come with the detach.
func TestDetachEndsInTheBackground(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		l := &opsLedger{MemLedger: NewMemLedger()}
		j := &coverJournal{}
		srv, tenants, inc := leasedRegion(t, ctx, l, WithJournal(j))
		l.mu.Lock()
		before := len(l.writes)
		l.mu.Unlock()
		// The detach, then another region's first lease while the
		// detach's write is under way (each write takes a millisecond an
		// op here).
		l.slow.Store(true)
		done := make(chan error, 2)
		go func() { done <- srv.Detach(ctx, "eu", inc) }()
		time.Sleep(500 * time.Microsecond)
		go func() {
			_, err := srv.Renew(ctx, quota.Request{Tenant: tenants[0].Name, Region: "us", Seq: seq(), Demand: -1})
			done <- err
		}()
		for range 2 {
			if err := <-done; err != nil {
				t.Fatal(err)
			}
		}
		// The background writes are still under way (a slow write is a
		// durable sleep, which synctest.Wait does not wait out).
		time.Sleep(time.Second)
		synctest.Wait()
		l.mu.Lock()
		writes := l.writes[before:]
		l.mu.Unlock()
		firstEnd, lastGrant := -1, -1
		for i, w := range writes {
			for _, op := range w {
				switch {
				case op.Kind == EndLease && firstEnd < 0:
					firstEnd = i
				case op.Kind == PutLease && op.Lease.Region == "us":
					lastGrant = i
				}
			}
		}
		if firstEnd < 0 || lastGrant < 0 || firstEnd < lastGrant {
			t.Fatalf("writes after the renewals: the first end in write %d, us's grant in write %d: want the grant first", firstEnd, lastGrant)
		}
		if n := len(l.Backup().snap.Leases); n != 1 {
			t.Fatalf("the ledger holds %d leases once idle: want us's one", n)
		}
	})
}

// TestBackgroundWaitsForAPause: the records of a detach's 200 ends wait
// while another region's calls keep the ledger writing, even with the
// queue empty between them (a call every 50 ms, each a write of a few
// milliseconds), and go once the calls pause. When every region
// restarted at once at 100,000 tenants, background writes slipped in
// between the calls of first leases and each call waited for one: twice
// the time to lease every tenant again.
func TestBackgroundWaitsForAPause(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		l := &opsLedger{MemLedger: NewMemLedger()}
		srv, tenants, inc := leasedRegion(t, ctx, l)
		l.slow.Store(true)
		l.mu.Lock()
		before := len(l.writes)
		l.mu.Unlock()
		if err := srv.Detach(ctx, "eu", inc); err != nil {
			t.Fatal(err)
		}
		for i := range 20 {
			time.Sleep(50 * time.Millisecond)
			if _, err := srv.Renew(ctx, quota.Request{Tenant: tenants[i].Name, Region: "us", Seq: seq(), Demand: -1}); err != nil {
				t.Fatal(err)
			}
		}
		l.mu.Lock()
		during := l.writes[before:]
		l.mu.Unlock()
		for i, w := range during {
			for _, op := range w {
				if op.Kind == EndLease {
					t.Fatalf("write %d after the detach ends a lease while us's calls come every 50 ms: want the background to wait for a pause", i)
				}
			}
		}
		time.Sleep(2 * time.Second) // a pause: the background's turn
		synctest.Wait()
		if n := len(l.Backup().snap.Leases); n != 20 {
			t.Fatalf("the ledger holds %d leases after a pause: want us's 20 (eu's ended records deleted)", n)
		}
	})
}

// TestLateRenewalKeepsItsShares: a renewal that asks for other shares
// — a write — when the write cannot land by its call's deadline is
// answered with a covered lease at the shares the region holds (no
// write, Core.Keep), not refused busy; one with nothing to stand on (a
// first lease) is refused as before. Refused, such renewals (a tenant
// with traffic) asked again behind the same queue and were refused again
// until their leases lapsed.
func TestLateRenewalKeepsItsShares(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		tn := quota.Tenant{Name: "acme", Rate: 100 * quota.One, Burst: 200 * quota.One, Regions: []string{"eu", "us"}}
		l := &slowLedger{MemLedger: NewMemLedger(), per: 10 * time.Millisecond}
		srv, err := NewServer(ctx, Config{Tenants: []quota.Tenant{tn}}, l)
		if err != nil {
			t.Fatal(err)
		}
		go srv.Run(ctx)
		held, err := srv.Renew(ctx, quota.Request{Tenant: "acme", Region: "eu", Seq: seq(), Demand: 5 * quota.One})
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Second)
		synctest.Wait()
		late, lcancel := context.WithTimeout(ctx, 5*time.Millisecond)
		defer lcancel()
		g, err := srv.Renew(late, quota.Request{Tenant: "acme", Region: "eu", Seq: seq(), Demand: 95 * quota.One, Holding: held.Lease.ID})
		if err != nil {
			t.Fatalf("a renewal whose write cannot land in time: %v, want a covered lease at the shares held", err)
		}
		if g.Lease.ID == held.Lease.ID || g.Lease.Rate != held.Lease.Rate || g.Lease.Burst != held.Lease.Burst {
			t.Fatalf("grant %+v after %+v: want a new lease at the same shares", g.Lease, held.Lease)
		}
		if st := srv.Stats(); st.Kept != 1 {
			t.Fatalf("stats %+v: want one renewal kept at its shares", st)
		}
		// Once the write can land, the shares move.
		moved, err := srv.Renew(ctx, quota.Request{Tenant: "acme", Region: "eu", Seq: seq(), Demand: 95 * quota.One, Holding: g.Lease.ID})
		if err != nil || moved.Lease.Rate == held.Lease.Rate {
			t.Fatalf("the next renewal, with time for its write: %+v, %v: want the shares moved", moved.Lease, err)
		}
		first, fcancel := context.WithTimeout(ctx, 5*time.Millisecond)
		defer fcancel()
		if _, err := srv.Renew(first, quota.Request{Tenant: "acme", Region: "us", Seq: seq(), Demand: 5 * quota.One}); !errors.Is(err, quota.ErrBusy) {
			t.Fatalf("a first lease whose write cannot land in time: %v, want busy", err)
		}
	})
}
