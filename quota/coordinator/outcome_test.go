package coordinator

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/afloat/afloat/quota"
)

// Writes of unknown outcome (ErrOutcomeUnknown), settled by reading the
// ledger back, and the graceful stop that finishes the writes in flight.

// lying is a real in-memory ledger whose next writes come back as etcd's
// do when their context is cancelled halfway: context.Canceled, wrapped
// in ErrOutcomeUnknown. landed says whether the write reaches the ledger
// first (etcd committed it) or is refused there (it never did).
type lying struct {
	*MemLedger
	mu     sync.Mutex
	lies   []bool // the next writes' fates: landed or not
	landed int    // lies told about writes that landed
}

func (l *lying) Commit(ctx context.Context, epoch uint64, ops ...Op) error {
	l.mu.Lock()
	if len(l.lies) == 0 {
		l.mu.Unlock()
		return l.MemLedger.Commit(ctx, epoch, ops...)
	}
	landed := l.lies[0]
	l.lies = l.lies[1:]
	if landed {
		l.landed++
	}
	l.mu.Unlock()
	if landed {
		if err := l.MemLedger.Commit(ctx, epoch, ops...); err != nil {
			return err
		}
	} else {
		// It reaches the ledger, too late: refused, nothing applied.
		late, cancel := context.WithCancel(ctx)
		cancel()
		l.MemLedger.Commit(late, epoch, ops...) //nolint:errcheck // refused, as wanted
	}
	return fmt.Errorf("test: writing %d ops: %w: %w", len(ops), ErrOutcomeUnknown, context.Canceled)
}

func (l *lying) lie(landed ...bool) { l.mu.Lock(); l.lies = append(l.lies, landed...); l.mu.Unlock() }

// book is a journal that keeps, per lease, how often it was recorded, and
// the tokens moved: credited by returns, transferred by grants.
type book struct {
	mu         sync.Mutex
	grants     map[uint64]int
	ends       map[uint64]int
	credited   quota.Micro
	transfered quota.Micro
}

func newBook() *book { return &book{grants: map[uint64]int{}, ends: map[uint64]int{}} }

func (b *book) Append(entries []Entry) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, e := range entries {
		if l := e.Step.Granted; l.ID != 0 {
			b.grants[l.ID]++
			b.transfered += l.Transfer
		}
		for _, en := range e.Step.Ended {
			b.ends[en.Lease.ID]++
		}
		b.credited += e.Step.Credit
	}
	return nil
}

func (b *book) counts(id uint64) (grants, ends int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.grants[id], b.ends[id]
}

func (b *book) moved() (credited, transfered quota.Micro) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.credited, b.transfered
}

// TestUnknownOutcomeSettled: a renewal's and a return's writes land and
// come back cancelled; a third never lands and comes back cancelled too.
// The first two are answered as written, and their lines recorded once;
// the third fails its call. A successor restores the ledger: the returned
// tokens are granted once — to the region that asks next — and not again
// by the successor, and none is lost: what was credited is what was
// transferred plus what the ledger still holds. (Taken as failed, the
// return's call failed and its credit line was never recorded, while the
// ledger held the credit: the successor granted tokens the log never saw
// returned.)
func TestUnknownOutcomeSettled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		l := &lying{MemLedger: NewMemLedger()}
		b := newBook()
		srv, err := NewServer(ctx, Config{Tenants: []quota.Tenant{seedTenant()}}, l, WithJournal(b))
		if err != nil {
			t.Fatal(err)
		}
		go srv.Run(ctx)
		synctest.Wait()

		// 1. A grant that landed is answered, not failed.
		l.lie(true)
		g, err := srv.Renew(ctx, quota.Request{Tenant: "acme", Region: "eu", Seq: 1, Demand: 400 * quota.One})
		if err != nil {
			t.Fatalf("step 1: a renewal whose write landed and came back cancelled: %v; want its grant", err)
		}
		if n, _ := b.counts(g.Lease.ID); n != 1 {
			t.Fatalf("step 1: lease %d recorded %d times; want once", g.Lease.ID, n)
		}

		// 2. A return that landed: its credit is recorded, its call succeeds.
		l.lie(true)
		ret := quota.Return{Tenant: "acme", Region: "eu", LeaseID: g.Lease.ID, Balance: g.Lease.Burst / 2}
		if err := srv.Return(ctx, ret); err != nil {
			t.Fatalf("step 2: a return whose write landed and came back cancelled: %v; want it done", err)
		}
		credited, _ := b.moved()
		if credited != ret.Balance {
			t.Fatalf("step 2: %v tokens credited in the journal; want the return's %v", credited, ret.Balance)
		}
		if _, ends := b.counts(g.Lease.ID); ends != 1 {
			t.Fatalf("step 2: the end of lease %d recorded %d times; want once", g.Lease.ID, ends)
		}

		// 3. A write that never landed fails its call.
		l.lie(false)
		if g3, err := srv.Renew(ctx, quota.Request{Tenant: "acme", Region: "ap", Seq: 3, Demand: 50 * quota.One}); !errors.Is(err, ErrNotWritten) || !errors.Is(err, ErrOutcomeUnknown) {
			t.Fatalf("step 3: a renewal whose write never landed: %+v, %v; want ErrNotWritten wrapping ErrOutcomeUnknown", g3, err)
		}

		// 4. The returned tokens go to the next region that asks.
		us, err := srv.Renew(ctx, quota.Request{Tenant: "acme", Region: "us", Seq: 4, Demand: 400 * quota.One})
		if err != nil {
			t.Fatal(err)
		}
		if us.Lease.Transfer == 0 {
			t.Fatalf("step 4: us's lease %+v transfers nothing; want the returned tokens", us.Lease)
		}
		if st := srv.Stats(); st.Unknown != 3 || st.Landed != 2 {
			t.Fatalf("step 4: stats %+v: want 3 writes of unknown outcome, 2 of them landed", st)
		}

		// 5. A successor restores the ledger and grants what is left once.
		cancel()
		synctest.Wait()
		ctx2, cancel2 := context.WithCancel(context.Background())
		defer cancel2()
		succ, err := NewServer(ctx2, Config{Tenants: []quota.Tenant{seedTenant()}}, l, WithJournal(b))
		if err != nil {
			t.Fatal(err)
		}
		go succ.Run(ctx2)
		synctest.Wait()
		time.Sleep(time.Minute) // every lease the successor restored has ended
		for i, r := range []string{"eu", "ap", "us"} {
			if _, err := succ.Renew(ctx2, quota.Request{Tenant: "acme", Region: r, Seq: uint64(10 + i), Demand: 100 * quota.One}); err != nil {
				t.Fatal(err)
			}
		}
		credited, transfered := b.moved()
		held := succ.core.Credit("acme")
		if transfered+held != credited {
			t.Fatalf("step 5: %v tokens credited, %v transferred and %v still held: want transferred + held = credited (none granted twice, none lost)",
				credited, transfered, held)
		}
		for id, n := range b.grants {
			if n != 1 {
				t.Errorf("step 5: lease %d recorded %d times", id, n)
			}
		}
		cancel2()
	})
}

// stuck is a ledger whose writes wait at the gate, as an etcd transaction
// waits for its quorum; a write whose context ends there comes back with
// an unknown outcome, and applies nothing.
type stuck struct {
	*MemLedger
	gate    chan struct{}
	waiting chan struct{} // a write reached the gate
}

func (s *stuck) Commit(ctx context.Context, epoch uint64, ops ...Op) error {
	select {
	case s.waiting <- struct{}{}:
	default:
	}
	select {
	case <-s.gate:
		return s.MemLedger.Commit(ctx, epoch, ops...)
	case <-ctx.Done():
		return fmt.Errorf("test: %w: %w", ErrOutcomeUnknown, ctx.Err())
	}
}

// TestGracefulStopFinishesWrites: Run's context ends (SIGTERM) while a
// renewal's write waits on the ledger. The write is not cancelled: it
// completes and the call gets its grant; a call that comes once the stop
// has begun is refused (ErrStopping); Run returns once the write is done.
// A write that never completes is given up after the drain time.
func TestGracefulStopFinishesWrites(t *testing.T) {
	for _, completes := range []bool{true, false} {
		t.Run(fmt.Sprintf("completes=%v", completes), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				l := &stuck{MemLedger: NewMemLedger(), gate: make(chan struct{}), waiting: make(chan struct{}, 1)}
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				b := newBook()
				srv, err := NewServer(ctx, Config{Tenants: []quota.Tenant{seedTenant()}}, l, WithJournal(b))
				if err != nil {
					t.Fatal(err)
				}
				ran := make(chan error, 1)
				go func() { ran <- srv.Run(ctx) }()
				<-l.waiting // the seeding's write
				l.gate <- struct{}{}
				synctest.Wait()

				type result struct {
					g   quota.Grant
					err error
				}
				answered := make(chan result, 1)
				go func() {
					g, err := srv.Renew(context.Background(), quota.Request{Tenant: "acme", Region: "eu", Seq: 1, Demand: 100 * quota.One})
					answered <- result{g, err}
				}()
				<-l.waiting
				began := time.Now()
				cancel() // SIGTERM
				synctest.Wait()
				if _, err := srv.Renew(context.Background(), quota.Request{Tenant: "acme", Region: "us", Seq: 2, Demand: 1}); !errors.Is(err, ErrStopping) {
					t.Fatalf("a call during the stop: %v; want ErrStopping", err)
				}
				if completes {
					time.Sleep(time.Second) // the quorum is slow
					l.gate <- struct{}{}
				}
				r := <-answered
				err = <-ran
				took := time.Since(began)
				switch {
				case !errors.Is(err, context.Canceled):
					t.Fatalf("Run returned %v; want context.Canceled", err)
				case completes && (r.err != nil || r.g.Lease.ID == 0):
					t.Fatalf("the call in flight at the stop: %+v, %v; want its grant", r.g, r.err)
				case completes && took != time.Second:
					t.Fatalf("Run returned %v after the stop; want as soon as the write was done (1s)", took)
				case !completes && !errors.Is(r.err, ErrNotWritten):
					t.Fatalf("the call whose write never completed: %+v, %v; want ErrNotWritten", r.g, r.err)
				case !completes && took != DefaultDrain:
					t.Fatalf("Run gave up %v after the stop; want the drain time, %v", took, DefaultDrain)
				}
				if completes {
					if n, _ := b.counts(r.g.Lease.ID); n != 1 {
						t.Fatalf("lease %d recorded %d times; want once", r.g.Lease.ID, n)
					}
				}
			})
		})
	}
}
