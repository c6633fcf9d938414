package region_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/afloat/afloat/quota"
	"github.com/afloat/afloat/quota/region"
)

var errDiskFull = errors.New("disk full")

// journal keeps the records Run writes, and fails them while failing is
// set.
type journal struct {
	mu       sync.Mutex
	failing  bool
	installs []region.Installed
	expired  []quota.Lease
	returns  []quota.Return
}

func (j *journal) Expired(_ int64, l quota.Lease) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.failing {
		return errDiskFull
	}
	j.expired = append(j.expired, l)
	return nil
}

func (j *journal) Installed(_ int64, in region.Installed) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.failing {
		return errDiskFull
	}
	j.installs = append(j.installs, in)
	return nil
}

func (j *journal) Returned(_ int64, ret quota.Return) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.failing {
		return errDiskFull
	}
	j.returns = append(j.returns, ret)
	return nil
}

func (j *journal) fail(on bool) {
	j.mu.Lock()
	j.failing = on
	j.mu.Unlock()
}

// hasReturn says whether the journal holds the return of lease id.
func (j *journal) hasReturn(id uint64) bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	for _, r := range j.returns {
		if r.LeaseID == id {
			return true
		}
	}
	return false
}

func (j *journal) installed() []region.Installed {
	j.mu.Lock()
	defer j.mu.Unlock()
	return append([]region.Installed(nil), j.installs...)
}

// auditing passes calls to a coordinator, and notes every return that
// reaches it before the journal has recorded it.
type auditing struct {
	region.Coordinator
	j *journal

	mu        sync.Mutex
	returns   int
	unjournal []uint64 // returns sent before their record
}

func (a *auditing) ReturnBatch(ctx context.Context, rets []quota.Return) ([]error, error) {
	a.mu.Lock()
	for _, ret := range rets {
		a.returns++
		if !a.j.hasReturn(ret.LeaseID) {
			a.unjournal = append(a.unjournal, ret.LeaseID)
		}
	}
	a.mu.Unlock()
	return a.Coordinator.ReturnBatch(ctx, rets)
}

func (a *auditing) sent() (int, []uint64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.returns, append([]uint64(nil), a.unjournal...)
}

// shrinking passes renewals to a coordinator and answers each grant with
// a burst a token smaller than the last: every renewal then releases
// share, and the region gives the replaced lease back (a renewal of the
// same shares gives nothing back). The coordinator counts the larger
// burst it granted: spending less is safe.
type shrinking struct {
	region.Coordinator
	mu sync.Mutex
	n  quota.Micro
}

func (s *shrinking) RenewBatch(ctx context.Context, reqs []quota.Request) ([]quota.Result, error) {
	res, err := s.Coordinator.RenewBatch(ctx, reqs)
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range res {
		if res[i].Err == nil {
			s.n += quota.One
			res[i].Grant.Lease.Burst = max(quota.One, res[i].Grant.Lease.Burst-s.n)
		}
	}
	return res, err
}

// TestJournal: a return reaches the coordinator only after the journal
// has recorded it; while the journal fails, installed leases stay in use,
// returns are not sent, the failures are counted, logged once at level
// Error, and Run's error wraps ErrJournal. Virtual time (synctest): 10 s
// leases, renewed at half.
func TestJournal(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv, stopSrv := runAcmeAndBeta(t)
		defer stopSrv()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		l, err := region.New(region.DefaultConfig("eu", "acme"))
		if err != nil {
			t.Fatal(err)
		}
		j := &journal{}
		c := &auditing{Coordinator: &shrinking{Coordinator: srv}, j: j}
		var logs strings.Builder
		var logMu sync.Mutex
		logger := slog.New(slog.NewTextHandler(writerFunc(func(p []byte) (int, error) {
			logMu.Lock()
			defer logMu.Unlock()
			return logs.Write(p)
		}), nil))
		logged := func() string {
			logMu.Lock()
			defer logMu.Unlock()
			return logs.String()
		}
		var runErr error
		var wg sync.WaitGroup
		wg.Go(func() { runErr = l.Run(ctx, c, region.WithJournal(j), region.WithLogger(logger)) })

		// step waits until acme's lease is another than was, up to a
		// lease's length. The test names the lease it waits to see
		// replaced: read from the limiter, the first step could start
		// after the first lease was installed and wait for the second.
		step := func(i int, was uint64) quota.Lease {
			t.Helper()
			for range 100 {
				time.Sleep(100 * time.Millisecond)
				synctest.Wait()
				if st := l.Status(l.Now(), "acme"); st.Valid && st.Lease.ID != was {
					// The return of the lease replaced goes with Run's
					// next pass, within a tick.
					time.Sleep(100 * time.Millisecond)
					synctest.Wait()
					return st.Lease
				}
			}
			t.Fatalf("step %d: acme's lease %d not renewed in 10 s", i, was)
			return quota.Lease{}
		}

		// Two renewals: each install recorded, the lease replaced given
		// back after its record.
		first := step(0, 0)
		second := step(1, first.ID)
		if in := j.installed(); len(in) != 2 || in[0].Lease.ID != first.ID || in[1].Lease.ID != second.ID || in[1].Dropped.ID != first.ID {
			t.Fatalf("installs recorded %+v, want leases %d then %d, replacing it", in, first.ID, second.ID)
		}
		if n, early := c.sent(); n != 1 || len(early) != 0 || !j.hasReturn(first.ID) {
			t.Fatalf("%d returns sent, %v before their record; lease %d's recorded: %v; want one, after", n, early, first.ID, j.hasReturn(first.ID))
		}

		// The journal fails for two renewals: the leases are used all the
		// same, the ones they replace not given back.
		j.fail(true)
		third := step(2, second.ID)
		fourth := step(3, third.ID)
		if !l.Allow("acme", 1) {
			t.Fatal("acme refused under a lease whose record failed")
		}
		if in := j.installed(); len(in) != 2 {
			t.Fatalf("%d installs recorded while the journal failed, want none", len(in)-2)
		}
		if n, _ := c.sent(); n != 1 {
			t.Fatalf("%d returns sent while the journal failed (leases %d, %d), want none", n-1, second.ID, third.ID)
		}
		// Two installs and the return of each replaced lease.
		if st := l.RunStats(); st.JournalFailures != 4 {
			t.Fatalf("RunStats().JournalFailures = %d, want 4", st.JournalFailures)
		}
		if n := strings.Count(logged(), "level=ERROR"); n != 1 {
			t.Fatalf("%d errors logged for one spell of failures, want 1:\n%s", n, logged())
		}

		// It writes again: so does Run, and says so.
		j.fail(false)
		fifth := step(4, fourth.ID)
		if in := j.installed(); len(in) != 3 || in[2].Lease.ID != fifth.ID || in[2].Dropped.ID != fourth.ID {
			t.Fatalf("installs recorded %+v, want lease %d last, replacing %d", in, fifth.ID, fourth.ID)
		}
		if n, early := c.sent(); n != 2 || len(early) != 0 || !j.hasReturn(fourth.ID) {
			t.Fatalf("%d returns sent, %v before their record, want two, after", n, early)
		}
		if !strings.Contains(logged(), "journal writes again") {
			t.Fatalf("no word that the journal writes again:\n%s", logged())
		}

		// It fails at shutdown: the last lease is not given back, and Run
		// says why.
		j.fail(true)
		cancel()
		wg.Wait()
		if n, _ := c.sent(); n != 2 {
			t.Fatalf("%d returns sent at shutdown with a failing journal, want none", n-2)
		}
		if !errors.Is(runErr, region.ErrJournal) || !errors.Is(runErr, errDiskFull) || !errors.Is(runErr, context.Canceled) {
			t.Fatalf("Run returned %v, want ErrJournal wrapping the journal's error, and context.Canceled", runErr)
		}
		if want := fmt.Sprintf("%d records not written", 5); !strings.Contains(runErr.Error(), want) {
			t.Fatalf("Run returned %q, want it to say %q", runErr, want)
		}
		stopSrv()
	})
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// cutOff passes calls to a coordinator until cut, then fails them all: a
// region cut off from its coordinators.
type cutOff struct {
	region.Coordinator
	cut atomic.Bool
}

func (c *cutOff) RenewBatch(ctx context.Context, reqs []quota.Request) ([]quota.Result, error) {
	if c.cut.Load() {
		return nil, errors.New("cut off")
	}
	return c.Coordinator.RenewBatch(ctx, reqs)
}

// TestJournalSaysLeasesRunOut: a region cut off from its coordinator
// keeps its lease to the end and no further; Run's journal is told it ran
// out — once, at the lease's end on the limiter's clock — by the limiter,
// with no copy of the lease kept beside it. Virtual time (synctest).
func TestJournalSaysLeasesRunOut(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv, stopSrv := runAcmeAndBeta(t)
		defer stopSrv()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		l, err := region.New(region.DefaultConfig("eu", "acme"))
		if err != nil {
			t.Fatal(err)
		}
		j := &journal{}
		c := &cutOff{Coordinator: srv}
		var wg sync.WaitGroup
		wg.Go(func() { l.Run(ctx, c, region.WithJournal(j)) })
		var first region.Status
		for range 20 {
			time.Sleep(100 * time.Millisecond)
			synctest.Wait()
			if first = l.Status(l.Now(), "acme"); first.Valid {
				break
			}
		}
		if !first.Valid {
			t.Fatal("no lease in 2 s")
		}
		c.cut.Store(true)
		// Past any lease's end (10 s), with retries failing meanwhile.
		time.Sleep(15 * time.Second)
		synctest.Wait()
		j.mu.Lock()
		expired := append([]quota.Lease(nil), j.expired...)
		installs := len(j.installs)
		j.mu.Unlock()
		last := j.installed()[installs-1].Lease
		if len(expired) != 1 || expired[0].ID != last.ID {
			t.Fatalf("leases said to have run out: %+v; want the last one installed, %d, once", expired, last.ID)
		}
		if st := l.Status(l.Now(), "acme"); st.Valid {
			t.Fatalf("the lease is valid 15 s after the cut: %+v", st)
		}
		cancel()
		wg.Wait()
	})
}
