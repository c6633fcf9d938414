package coordinator

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/afloat/afloat/quota"
)

// The answers' durability: an answer exists only once its step is written
// to the ledger and recorded in the journal, and acknowledged (Advance);
// a failed write or append fails the call, and nothing it proposed is
// answered later as if it had been written.

var (
	errLedgerDown  = errors.New("test: the ledger is down")
	errJournalDown = errors.New("test: the journal's disk is full")
)

// flaky is a ledger that refuses its next fails commits, applying nothing;
// it keeps every commit tried and the leases it holds.
type flaky struct {
	*MemLedger
	mu    sync.Mutex
	fails int
	tried [][]Op
	held  map[uint64]bool
}

func newFlaky() *flaky { return &flaky{MemLedger: NewMemLedger(), held: map[uint64]bool{}} }

func (f *flaky) Commit(ctx context.Context, epoch uint64, ops ...Op) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.tried = append(f.tried, ops)
	if f.fails > 0 {
		f.fails--
		return errLedgerDown
	}
	if err := f.MemLedger.Commit(ctx, epoch, ops...); err != nil {
		return err
	}
	for _, op := range ops {
		switch op.Kind {
		case PutLease:
			f.held[op.Lease.ID] = true
		case EndLease:
			delete(f.held, op.ID)
		}
	}
	return nil
}

func (f *flaky) failNext(n int) { f.mu.Lock(); f.fails = n; f.mu.Unlock() }

func (f *flaky) holds(id uint64) bool { f.mu.Lock(); defer f.mu.Unlock(); return f.held[id] }

// lastPut is the lease ID of the last commit tried that put one.
func (f *flaky) lastPut(t *testing.T) uint64 {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	for i := len(f.tried) - 1; i >= 0; i-- {
		for _, op := range f.tried[i] {
			if op.Kind == PutLease {
				return op.Lease.ID
			}
		}
	}
	t.Fatal("no commit put a lease")
	return 0
}

// journal is a Journal that refuses its next fails appends; it keeps the
// leases its steps granted, and checks that each was written to ledger
// first.
type journal struct {
	t      *testing.T
	ledger *flaky
	mu     sync.Mutex
	fails  int
	leases map[uint64]bool
}

func (j *journal) Append(entries []Entry) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.fails > 0 {
		j.fails--
		return errJournalDown
	}
	for _, e := range entries {
		if id := e.Step.Granted.ID; id != 0 {
			if !j.ledger.holds(id) {
				j.t.Errorf("lease %d reached the journal before the ledger", id)
			}
			j.leases[id] = true
		}
	}
	return nil
}

func (j *journal) failNext(n int) { j.mu.Lock(); j.fails = n; j.mu.Unlock() }

func (j *journal) has(id uint64) bool { j.mu.Lock(); defer j.mu.Unlock(); return j.leases[id] }

// startServer starts a server on ledger and journal, and waits until it
// has seeded the ledger with its tenant: the committer is idle.
func startServer(t *testing.T, ctx context.Context, l *flaky, j *journal) *Server {
	t.Helper()
	srv, err := NewServer(ctx, Config{Tenants: []quota.Tenant{seedTenant()}}, l, WithJournal(j))
	if err != nil {
		t.Fatal(err)
	}
	go srv.Run(ctx)
	synctest.Wait()
	return srv
}

// TestServerFailedWriteAnswersAfresh: the ledger refuses a renewal's
// write once. The call fails; the region's retry of the same request (the
// same Seq) gets a fresh grant, written and recorded before it is
// answered — not the lease proposed for the failed write, which was not
// written when the retry came. (The old core kept that proposal as the
// request's answer, and the retry got it; only the committer's queue
// order had it written first.)
func TestServerFailedWriteAnswersAfresh(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		l := newFlaky()
		j := &journal{t: t, ledger: l, leases: map[uint64]bool{}}
		srv := startServer(t, ctx, l, j)
		req := quota.Request{Tenant: "acme", Region: "eu", Seq: 1, Demand: 100 * quota.One}

		l.failNext(1)
		if g, err := srv.Renew(ctx, req); !errors.Is(err, ErrNotWritten) || !errors.Is(err, errLedgerDown) {
			t.Fatalf("a renewal whose write failed: %+v, %v; want an error wrapping ErrNotWritten and the ledger's", g, err)
		}
		failed := l.lastPut(t)
		if l.holds(failed) || j.has(failed) {
			t.Fatalf("lease %d of the failed write is held: ledger %v, journal %v", failed, l.holds(failed), j.has(failed))
		}
		g, err := srv.Renew(ctx, req)
		if err != nil {
			t.Fatalf("the retry: %v", err)
		}
		if g.Lease.ID == failed || g.Seq != req.Seq {
			t.Fatalf("the retry got lease %d (seq %d); want a fresh one, not %d, proposed for the failed write", g.Lease.ID, g.Seq, failed)
		}
		if !l.holds(g.Lease.ID) || !j.has(g.Lease.ID) {
			t.Fatalf("lease %d answered: in the ledger %v, in the journal %v; want both", g.Lease.ID, l.holds(g.Lease.ID), j.has(g.Lease.ID))
		}
		// The failed step was written again, for the ledger to catch up,
		// and so recorded: what the ledger holds, the journal has.
		if !l.holds(failed) || !j.has(failed) {
			t.Fatalf("the failed step's lease %d: ledger %v, journal %v; want it written and recorded again", failed, l.holds(failed), j.has(failed))
		}
		// A third copy of the request gets the retry's grant, acknowledged.
		if again, err := srv.Renew(ctx, req); err != nil || again.Lease.ID != g.Lease.ID {
			t.Fatalf("a repeat of the answered request: lease %d, %v; want %d", again.Lease.ID, err, g.Lease.ID)
		}
		if st := srv.Stats(); st.Failures != 1 {
			t.Fatalf("stats %+v: want 1 failure", st)
		}
	})
}

// TestServerJournalFailureFailsTheCall: the journal refuses to record a
// renewal once (its ledger write went through). The call fails — no grant
// is sent that the log lacks — and the retry of the same request gets a
// fresh grant, recorded before it is answered. (The old server's
// WithCommitted hook could not fail: the call was answered with its line
// missing from the log.)
func TestServerJournalFailureFailsTheCall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		l := newFlaky()
		j := &journal{t: t, ledger: l, leases: map[uint64]bool{}}
		srv := startServer(t, ctx, l, j)
		req := quota.Request{Tenant: "acme", Region: "us", Seq: 7, Demand: 100 * quota.One}

		j.failNext(1)
		if g, err := srv.Renew(ctx, req); !errors.Is(err, ErrNotWritten) || !errors.Is(err, errJournalDown) {
			t.Fatalf("a renewal whose log line failed: %+v, %v; want an error wrapping ErrNotWritten and the journal's", g, err)
		}
		unlogged := l.lastPut(t)
		if !l.holds(unlogged) || j.has(unlogged) {
			t.Fatalf("lease %d: in the ledger %v, in the journal %v; want the ledger's write done and the line not", unlogged, l.holds(unlogged), j.has(unlogged))
		}
		g, err := srv.Renew(ctx, req)
		if err != nil {
			t.Fatalf("the retry: %v", err)
		}
		if g.Lease.ID == unlogged || !j.has(g.Lease.ID) || !l.holds(g.Lease.ID) {
			t.Fatalf("the retry got lease %d (the unlogged one is %d): journal %v, ledger %v; want a fresh one in both",
				g.Lease.ID, unlogged, j.has(g.Lease.ID), l.holds(g.Lease.ID))
		}
		// The unlogged lease still counts (the ledger holds it) and is
		// now in the log too: the check of the log counts what a successor
		// would restore.
		if !j.has(unlogged) {
			t.Fatalf("lease %d, which the ledger holds, never reached the journal", unlogged)
		}
		live := srv.Live("acme")
		if len(live) != 2 {
			t.Fatalf("live leases %+v: want the unlogged one and the retry's, both counting", live)
		}
	})
}

// TestServerAnswersOnlyOnceLogged: while the journal holds a transaction
// (its disk is slow), the ledger has the grant but the call is not
// answered; it is answered once the journal returns.
func TestServerAnswersOnlyOnceLogged(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		l := newFlaky()
		slow := &slowJournal{open: make(chan struct{})}
		srv, err := NewServer(ctx, Config{Tenants: []quota.Tenant{seedTenant()}}, l, WithJournal(slow))
		if err != nil {
			t.Fatal(err)
		}
		go srv.Run(ctx)
		synctest.Wait() // the seeding goes through
		slow.held.Store(true)
		answered := make(chan quota.Grant, 1)
		go func() {
			g, _ := srv.Renew(ctx, quota.Request{Tenant: "acme", Region: "ap", Seq: 1, Demand: -1})
			answered <- g
		}()
		synctest.Wait()
		if id := l.lastPut(t); !l.holds(id) {
			t.Fatalf("lease %d is not in the ledger while the journal waits", id)
		}
		select {
		case g := <-answered:
			t.Fatalf("answered lease %d before the journal recorded it", g.Lease.ID)
		default:
		}
		close(slow.open)
		if g := <-answered; g.Lease.ID != l.lastPut(t) {
			t.Fatalf("answered lease %d, want %d", g.Lease.ID, l.lastPut(t))
		}
	})
}

// slowJournal is a Journal whose appends, once held, wait until open is
// closed.
type slowJournal struct {
	held atomic.Bool
	open chan struct{}
}

func (s *slowJournal) Append([]Entry) error {
	if s.held.Load() {
		<-s.open
	}
	return nil
}

// TestRetryAnsweredOnlyFromAcknowledged drives the core on explicit steps:
// a retry of a request whose grant is proposed and not yet acknowledged
// proposes nothing, and is answered with that grant only if it was
// acknowledged written; if its write failed, the retry is refused (the
// region asks again) and the next copy of the request gets a fresh lease.
// (The old core answered the retry at once with the proposal.)
func TestRetryAnsweredOnlyFromAcknowledged(t *testing.T) {
	for _, written := range []bool{true, false} {
		c := newCore(t, NewMemLedger(), 0)
		c.Led(0, forever) // the retry's answer writes nothing: leadership proven
		req := quota.Request{Tenant: "acme", Region: "eu", Seq: 42, Demand: 100 * quota.One}
		first, err := c.Core.Renew(0, req)
		if err != nil {
			t.Fatal(err)
		}
		retry, err := c.Core.Renew(time.Millisecond, req)
		if err != nil {
			t.Fatal(err)
		}
		if retry.Granted.ID != 0 || len(retry.Ops) != 0 {
			t.Fatalf("written %v: the retry proposed %+v; want nothing", written, retry)
		}
		var persisted error
		if !written {
			persisted = errLedgerDown
		} else if err := c.l.Commit(ctx, c.Epoch(), first.Ops...); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Advance(first, persisted); (err == nil) != written {
			t.Fatalf("written %v: the first copy's answer: %v", written, err)
		}
		a, err := c.Advance(retry, nil)
		switch {
		case written && (err != nil || a.Grant.Lease.ID != first.Granted.ID):
			t.Fatalf("the retry of a written grant: lease %d, %v; want %d", a.Grant.Lease.ID, err, first.Granted.ID)
		case !written && (!errors.Is(err, ErrNotWritten) || a.Grant.Lease.ID != 0):
			t.Fatalf("the retry of a grant whose write failed: lease %d, %v; want none, ErrNotWritten", a.Grant.Lease.ID, err)
		}
		again, err := c.Core.Renew(2*time.Millisecond, req)
		if err != nil {
			t.Fatal(err)
		}
		fresh := again.Granted.ID != 0
		if fresh == written {
			t.Fatalf("written %v: the next copy proposed lease %d; want a fresh one only after a failed write", written, again.Granted.ID)
		}
	}
}
