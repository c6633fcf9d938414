package coordinator

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/afloat/afloat/quota"
)

// shortTenant has 100 ms leases, as the etcd election test's probe: a
// renewal every 50 ms moves the lease's end each time.
func shortTenant() quota.Tenant {
	return quota.Tenant{Name: "acme", Rate: 500 * quota.One, Burst: 6000 * quota.One, Regions: []string{"eu", "us", "ap"},
		LeaseDuration: 100 * time.Millisecond, SkewMargin: 10 * time.Millisecond}.WithDefaults()
}

// covering is a core and its ledger, the runner at its simplest: each
// step written then acknowledged, the deferred ones after the call's,
// and leadership proven for good (Led) unless a test says otherwise.
type covering struct {
	*Core
	l    *MemLedger
	puts int // lease records written
}

// forever is a proof of leadership that never lapses, for the tests
// that are not about it.
const forever = time.Duration(1 << 62)

func newCovering(t *testing.T, l *MemLedger, now time.Duration) *covering {
	t.Helper()
	c, err := Open(context.Background(), Config{Tenants: []quota.Tenant{shortTenant()}}, l, now)
	if err != nil {
		t.Fatal(err)
	}
	c.Led(now, forever)
	return &covering{Core: c, l: l}
}

// run writes a step (none if it is covered) and acknowledges it, then the
// deferred steps; it returns the call's answer.
func (c *covering) run(t *testing.T, x Step) Answer {
	t.Helper()
	var err error
	if x.Covered && len(x.Ops) > 0 {
		t.Fatalf("a covered step with %d ops", len(x.Ops))
	}
	if len(x.Ops) > 0 {
		err = c.l.Commit(context.Background(), c.Epoch(), x.Ops...)
		c.puts += putsOf(x.Ops)
	}
	a, err := c.Advance(x, err)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range c.Deferred() {
		if err := c.l.Commit(context.Background(), c.Epoch(), d.Ops...); err != nil {
			t.Fatal(err)
		}
		c.puts += putsOf(d.Ops)
		if _, err := c.Advance(d, nil); err != nil {
			t.Fatal(err)
		}
	}
	return a
}

// record is the ledger's record of lease id, and the ledger's next ID.
func record(l *MemLedger, id uint64) (quota.Lease, bool, uint64) {
	b := l.Backup()
	for _, ls := range b.snap.Leases {
		if ls.ID == id {
			return ls, true, b.snap.NextID
		}
	}
	return quota.Lease{}, false, b.snap.NextID
}

// TestCoveredRenewals: a region renewing a 100 ms lease every 50 ms for
// ten seconds. After the first grant every renewal is answered with a new
// lease that is not written (Covered, no ops), standing on the first one,
// whose record stays in the ledger and counts in the core until the
// newest covered lease ends; one lease record is written in all, and the
// ledger's next ID stays above every lease granted.
func TestCoveredRenewals(t *testing.T) {
	l := NewMemLedger()
	c := newCovering(t, l, 0)
	ms := time.Millisecond
	var held, lastID uint64
	var covered, written, calls int
	for now := time.Duration(0); now < 10*time.Second; now += 50 * ms {
		x, err := c.Core.Renew(now, quota.Request{Tenant: "acme", Region: "eu", Seq: seq(), Holding: held, Epoch: c.Epoch(), Demand: quota.Tokens(100)})
		if err != nil {
			t.Fatal(err)
		}
		calls++
		a := c.run(t, x)
		g := a.Grant
		if g.Unchanged {
			continue
		}
		if g.Lease.ID <= lastID {
			t.Fatalf("at %v: lease %d after %d", now, g.Lease.ID, lastID)
		}
		lastID = g.Lease.ID
		if x.Covered {
			covered++
			rec, ok, next := record(l, x.Cover)
			if !ok || rec.Rate != g.Lease.Rate || rec.Burst != g.Lease.Burst {
				t.Fatalf("at %v: covered lease %d by %d: the ledger holds %+v (%v)", now, g.Lease.ID, x.Cover, rec, ok)
			}
			if next <= g.Lease.ID {
				t.Fatalf("at %v: covered lease %d, the ledger's next ID is %d", now, g.Lease.ID, next)
			}
			// The cover counts here until the covered lease ends.
			var until time.Duration
			for _, lv := range c.tenants["acme"].regionOf("eu").live {
				if lv.ID == x.Cover {
					until = lv.until
				}
			}
			if until < g.Lease.Expires {
				t.Fatalf("at %v: the cover %d counts until %v, the covered lease %d until %v", now, x.Cover, until, g.Lease.ID, g.Lease.Expires)
			}
		} else {
			written++
		}
		// The region returns the lease it replaced, as it does.
		if held != 0 {
			rx, err := c.Core.Return(now, quota.Return{Tenant: "acme", Region: "eu", LeaseID: held, Epoch: c.Epoch()})
			if err != nil {
				t.Fatal(err)
			}
			c.run(t, rx)
		}
		held = g.Lease.ID
		live := c.Live("acme")
		if len(live) > 3 {
			t.Fatalf("at %v: %d live leases: %+v", now, len(live), live)
		}
	}
	t.Logf("%d calls: %d covered, %d written; %d lease records written", calls, covered, written, c.puts)
	if written != 1 || covered < calls-10 {
		t.Fatalf("%d calls: %d covered, %d written: want every renewal after the first covered", calls, covered, written)
	}
	if c.puts != 1 {
		t.Fatalf("%d lease records written in 10 s: want the first one only", c.puts)
	}
}

// TestCoveredAfterLostAnswers: covered answers the region never got (it
// gave up on their calls) leave it holding an older lease on the same
// cover; its next renewals are covered all the same — no write — and
// every lease that counts has the cover's shares, so the region counts
// for them once. On the code before, each renewal after a lost answer
// was written: a strained coordinator's timeouts became writes.
func TestCoveredAfterLostAnswers(t *testing.T) {
	l := NewMemLedger()
	c := newCovering(t, l, 0)
	ms := time.Millisecond
	renew := func(now time.Duration, held uint64) (Step, Answer) {
		t.Helper()
		x, err := c.Core.Renew(now, quota.Request{Tenant: "acme", Region: "eu", Seq: seq(), Holding: held, Epoch: c.Epoch(), Demand: quota.Tokens(100)})
		if err != nil {
			t.Fatal(err)
		}
		return x, c.run(t, x)
	}
	_, a := renew(0, 0)
	held := a.Grant.Lease.ID
	var now time.Duration
	for round := range 20 {
		// Two answers lost, then one the region installs, all within
		// the lease it holds.
		for k := range 3 {
			now += 30 * ms
			x, a := renew(now, held)
			if !x.Covered {
				t.Fatalf("round %d, renewal %d holding %d: written (%+v), want covered", round, k, held, a.Grant.Lease)
			}
			if k == 2 {
				held = a.Grant.Lease.ID
			}
		}
		rs := c.tenants["acme"].regionOf("eu")
		rate, burst := peak(rs)
		for _, lv := range rs.live {
			if lv.Rate != rate || lv.Burst != burst {
				t.Fatalf("round %d: lease %d counts %d/%d beside %d/%d", round, lv.ID, lv.Rate, lv.Burst, rate, burst)
			}
		}
	}
	if c.puts != 1 {
		t.Fatalf("%d lease records written: want the first one only", c.puts)
	}
}

// TestCoveredNeedsProof: an answer without a write — a covered lease, an
// unchanged one — is given only for a step taken while leadership was
// proven (Core.Led): at or before the newest proof's asking, or before
// its end. Advance refuses it otherwise (ErrUnproven), and the lease it
// proposed is never answered; a new proof lets the next one through.
func TestCoveredNeedsProof(t *testing.T) {
	ms := time.Millisecond
	for step, tc := range []struct {
		at     time.Duration
		led    [2]time.Duration // a proof taken after the first grant, if any
		proven bool
	}{
		{at: 50 * ms, proven: true},   // within the first proof
		{at: 150 * ms, proven: false}, // the proof has lapsed
		{at: 200 * ms, led: [2]time.Duration{200 * ms, 200 * ms}, proven: true},  // asked at the step's instant
		{at: 300 * ms, led: [2]time.Duration{250 * ms, 280 * ms}, proven: false}, // asked before, and lapsed
		{at: 400 * ms, led: [2]time.Duration{350 * ms, 500 * ms}, proven: true},
	} {
		l := NewMemLedger()
		tenant := shortTenant()
		tenant.LeaseDuration = time.Second // unchanged up to 250 ms, covered after
		c, err := Open(context.Background(), Config{Tenants: []quota.Tenant{tenant}}, l, 0)
		if err != nil {
			t.Fatal(err)
		}
		c.Led(0, 100*ms) // asked at 0: no successor before 100 ms
		x, err := c.Renew(0, quota.Request{Tenant: "acme", Region: "eu", Seq: seq(), Demand: quota.Tokens(100)})
		if err != nil {
			t.Fatal(err)
		}
		g := (&covering{Core: c, l: l}).run(t, x).Grant // written: needs no proof
		if tc.led != [2]time.Duration{} {
			c.Led(tc.led[0], tc.led[1])
		}
		// Unchanged (the same lease) before a quarter lease, covered after:
		// neither writes.
		x, err = c.Renew(tc.at, quota.Request{Tenant: "acme", Region: "eu", Seq: seq(), Holding: g.Lease.ID, Epoch: c.Epoch(), Demand: quota.Tokens(100)})
		if err != nil {
			t.Fatal(err)
		}
		if !x.Unwritten() {
			t.Fatalf("step %d: the renewal writes %+v: want an answer without a write", step, x.Ops)
		}
		a, err := c.Advance(x, nil)
		switch {
		case tc.proven && err != nil:
			t.Fatalf("step %d: taken at %v under a proof: %v", step, tc.at, err)
		case !tc.proven && !errors.Is(err, ErrUnproven):
			t.Fatalf("step %d: taken at %v with the proof lapsed: answer %+v, err %v; want ErrUnproven", step, tc.at, a.Grant, err)
		}
	}
}

func putsOf(ops []Op) int {
	n := 0
	for _, op := range ops {
		if op.Kind == PutLease {
			n++
		}
	}
	return n
}

// TestCoverSurvivesFailover: after covered renewals, a successor fenced
// on the same ledger counts the cover's record past the newest covered
// lease's end, a request holding that lease (unknown to it) ends nothing,
// and its own leases' IDs are above every covered lease's.
func TestCoverSurvivesFailover(t *testing.T) {
	l := NewMemLedger()
	c := newCovering(t, l, 0)
	ms := time.Millisecond
	var held uint64
	var last quota.Lease
	for now := time.Duration(0); now < 2*time.Second; now += 50 * ms {
		x, err := c.Core.Renew(now, quota.Request{Tenant: "acme", Region: "eu", Seq: seq(), Holding: held, Epoch: c.Epoch(), Demand: quota.Tokens(100)})
		if err != nil {
			t.Fatal(err)
		}
		if g := c.run(t, x).Grant; !g.Unchanged {
			held, last = g.Lease.ID, g.Lease
		}
	}
	if _, ok, _ := record(l, held); ok {
		t.Fatalf("the newest lease %d is in the ledger: want it covered, not written", held)
	}
	// The successor takes over at once, on a clock that reads 0 (its own
	// monotonic clock): it counts the cover's record whole from there.
	s := newCovering(t, l, 0)
	rs := s.tenants["acme"].regionOf("eu")
	var until time.Duration
	for _, lv := range rs.live {
		until = max(until, lv.until)
	}
	if until < last.Expires-last.Activates {
		t.Fatalf("the successor counts eu's share for %v: the covered lease %d lasts %v", until, held, last.Expires-last.Activates)
	}
	before := len(rs.live)
	x, err := s.Core.Renew(10*ms, quota.Request{Tenant: "acme", Region: "eu", Seq: seq(), Holding: held, Epoch: c.Epoch(), Demand: quota.Tokens(100)})
	if err != nil {
		t.Fatal(err)
	}
	if len(x.Ended) != 0 {
		t.Fatalf("a request holding covered lease %d ended %+v at the successor: want nothing ended", held, x.Ended)
	}
	g := s.run(t, x).Grant
	if g.Lease.ID <= held || x.Covered {
		t.Fatalf("the successor granted lease %d (covered %v) to a region holding %d: want a written lease above it", g.Lease.ID, x.Covered, held)
	}
	if len(rs.live) != before+1 {
		t.Fatalf("the successor has %d live leases for eu, want %d", len(rs.live), before+1)
	}
	// The region gives back the cover itself, as a region installing a
	// covered lease would (the predecessor's, which the successor cannot
	// know): the cover counts on. Once the region holds the successor's
	// lease, it ends.
	cover := rs.live[0].ID
	rx, err := s.Core.Return(20*ms, quota.Return{Tenant: "acme", Region: "eu", LeaseID: cover, Epoch: c.Epoch()})
	if err != nil {
		t.Fatal(err)
	}
	if len(rx.Ended) != 0 {
		t.Fatalf("the return of the predecessor's cover %d ended %+v at the successor: want it kept", cover, rx.Ended)
	}
	s.run(t, rx)
	x, err = s.Core.Renew(30*ms, quota.Request{Tenant: "acme", Region: "eu", Seq: seq(), Holding: g.Lease.ID, Epoch: s.Epoch(), Demand: quota.Tokens(100)})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(x.Ended, func(e Ended) bool { return e.Lease.ID == cover }) {
		t.Fatalf("the region holds the successor's lease %d: ended %+v, want the cover %d among them", g.Lease.ID, x.Ended, cover)
	}
	s.run(t, x)
}

// TestCoverOutlivesItsReturn: a region installing a covered lease gives
// the lease it replaced back — the cover itself, the first time. The
// cover counts on (its record stands for the lease in use), nothing is
// written, and the return is answered without waiting for the ledger.
func TestCoverOutlivesItsReturn(t *testing.T) {
	l := NewMemLedger()
	c := newCovering(t, l, 0)
	ms := time.Millisecond
	req := func(now time.Duration, held uint64) (Step, quota.Grant) {
		x, err := c.Core.Renew(now, quota.Request{Tenant: "acme", Region: "eu", Seq: seq(), Holding: held, Epoch: c.Epoch(), Demand: quota.Tokens(100)})
		if err != nil {
			t.Fatal(err)
		}
		return x, c.run(t, x).Grant
	}
	_, g0 := req(0, 0)
	x1, g1 := req(50*ms, g0.Lease.ID)
	if !x1.Covered || x1.Cover != g0.Lease.ID {
		t.Fatalf("second renewal: covered %v by %d, want covered by %d", x1.Covered, x1.Cover, g0.Lease.ID)
	}
	rx, err := c.Core.Return(50*ms, quota.Return{Tenant: "acme", Region: "eu", LeaseID: g0.Lease.ID, Epoch: c.Epoch(), Balance: quota.Tokens(5)})
	if err != nil {
		t.Fatal(err)
	}
	if !rx.Covered || len(rx.Ops) != 0 || len(rx.Ended) != 0 {
		t.Fatalf("the cover's return: covered %v, ops %+v, ended %+v: want nothing ended or written", rx.Covered, rx.Ops, rx.Ended)
	}
	c.run(t, rx)
	if _, ok, _ := record(l, g0.Lease.ID); !ok {
		t.Fatal("the cover's record left the ledger")
	}
	// Returning the covered lease itself ends it; the cover still stands
	// for the next one.
	x2, g2 := req(100*ms, g1.Lease.ID)
	if !x2.Covered {
		t.Fatal("third renewal not covered")
	}
	rx, err = c.Core.Return(100*ms, quota.Return{Tenant: "acme", Region: "eu", LeaseID: g1.Lease.ID, Epoch: c.Epoch()})
	if err != nil {
		t.Fatal(err)
	}
	if len(rx.Ended) != 1 || rx.Ended[0].Lease.ID != g1.Lease.ID || len(rx.Ops) != 0 {
		t.Fatalf("returning covered lease %d: ended %+v, ops %+v", g1.Lease.ID, rx.Ended, rx.Ops)
	}
	c.run(t, rx)
	// A share change is written, and once the region holds the new lease
	// the cover ends in the ledger.
	x3, err := c.Core.Renew(150*ms, quota.Request{Tenant: "acme", Region: "eu", Seq: seq(), Holding: g2.Lease.ID, Epoch: c.Epoch(), Demand: quota.Tokens(1)})
	if err != nil {
		t.Fatal(err)
	}
	g3 := c.run(t, x3).Grant
	if x3.Covered && g3.Lease.Rate == g2.Lease.Rate {
		t.Skip("the share did not change with the demand")
	}
	x4, err := c.Core.Renew(200*ms, quota.Request{Tenant: "acme", Region: "eu", Seq: seq(), Holding: g3.Lease.ID, Epoch: c.Epoch(), Demand: quota.Tokens(1)})
	if err != nil {
		t.Fatal(err)
	}
	c.run(t, x4)
	if _, ok, _ := record(l, g0.Lease.ID); ok && !x3.Covered {
		t.Fatalf("the cover %d is still in the ledger after the region moved on to written lease %d", g0.Lease.ID, g3.Lease.ID)
	}
}

// stallLedger is a MemLedger whose writes, while stalled, wait until it
// is released: etcd without a leader.
type stallLedger struct {
	*MemLedger
	mu      sync.Mutex
	gate    chan struct{} // nil: not stalled
	waiting int
}

func (s *stallLedger) stall() { s.mu.Lock(); s.gate = make(chan struct{}); s.mu.Unlock() }

func (s *stallLedger) release() {
	s.mu.Lock()
	close(s.gate)
	s.gate = nil
	s.mu.Unlock()
}

func (s *stallLedger) Commit(ctx context.Context, epoch uint64, ops ...Op) error {
	s.mu.Lock()
	g := s.gate
	if g != nil {
		s.waiting++
	}
	s.mu.Unlock()
	if g != nil {
		select {
		case <-g:
		case <-ctx.Done():
			return errors.Join(ErrOutcomeUnknown, ctx.Err())
		}
	}
	return s.MemLedger.Commit(ctx, epoch, ops...)
}

// coverJournal records the leases its entries granted.
type coverJournal struct {
	mu     sync.Mutex
	leases []uint64
}

func (j *coverJournal) Append(entries []Entry) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	for _, e := range entries {
		if id := e.Step.Granted.ID; id != 0 {
			j.leases = append(j.leases, id)
		}
	}
	return nil
}

func (j *coverJournal) has(id uint64) bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	for _, l := range j.leases {
		if l == id {
			return true
		}
	}
	return false
}

// TestServerRenewsThroughLedgerOutage: the ledger stalls (etcd holding an
// election) for two seconds while a region renews a 100 ms lease every
// 50 ms through a Server whose ledger still proves its leadership: every
// renewal is answered, journalled first, and none waits for the ledger;
// the writes the renewals left go through once the ledger is back.
func TestServerRenewsThroughLedgerOutage(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		l := &stallLedger{MemLedger: NewMemLedger()}
		j := &coverJournal{}
		srv, err := NewServer(ctx, Config{Tenants: []quota.Tenant{shortTenant()}}, l, WithJournal(j))
		if err != nil {
			t.Fatal(err)
		}
		go srv.Run(ctx)
		synctest.Wait()
		var held uint64
		failed := 0
		renew := func() (quota.Grant, time.Duration) {
			start := time.Now()
			// A region waits a while for an answer, then asks again.
			rctx, rcancel := context.WithTimeout(ctx, 250*time.Millisecond)
			defer rcancel()
			g, err := srv.Renew(rctx, quota.Request{Tenant: "acme", Region: "eu", Seq: seq(), Holding: held, Demand: quota.Tokens(100)})
			if err != nil {
				failed++
				return g, time.Since(start)
			}
			if !g.Unchanged {
				if !j.has(g.Lease.ID) {
					t.Fatalf("lease %d answered before the journal had it", g.Lease.ID)
				}
				if held != 0 {
					if err := srv.Return(rctx, quota.Return{Tenant: "acme", Region: "eu", LeaseID: held}); err != nil {
						failed++
					}
				}
				held = g.Lease.ID
			}
			return g, time.Since(start)
		}
		for range 20 {
			renew()
			time.Sleep(50 * time.Millisecond)
		}
		l.stall()
		var longest time.Duration
		for range 40 {
			_, took := renew()
			longest = max(longest, took)
			time.Sleep(50 * time.Millisecond)
		}
		l.release()
		synctest.Wait()
		if longest > 0 || failed > 0 {
			t.Fatalf("a renewal waited %v for the stalled ledger; %d calls failed", longest, failed)
		}
		if st := srv.Stats(); st.Covered < 40 {
			t.Fatalf("%d covered answers, want the 40 renewals of the stall among them", st.Covered)
		}
	})
}

// deposedLedger is a MemLedger whose proof of leadership lapsed at a
// moment the test sets — a leader paused, or cut off from etcd, for
// longer than its session's window — and whose Confirm answers as etcd
// would once a successor had deposed it: stale.
type deposedLedger struct {
	*MemLedger
	mu       sync.Mutex
	until    time.Time // the proof's end; zero: the MemLedger's own proof
	deposed  bool
	confirms int
}

func (d *deposedLedger) Proof(epoch uint64, now time.Time) (time.Time, time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.until.IsZero() {
		return d.MemLedger.Proof(epoch, now)
	}
	return d.until.Add(-time.Second), d.until
}

func (d *deposedLedger) Commit(ctx context.Context, epoch uint64, ops ...Op) error {
	d.mu.Lock()
	deposed := d.deposed
	d.mu.Unlock()
	if deposed {
		return fmt.Errorf("%w: a successor fenced the ledger", quota.ErrStaleEpoch)
	}
	return d.MemLedger.Commit(ctx, epoch, ops...)
}

func (d *deposedLedger) Confirm(ctx context.Context, epoch uint64) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.confirms++
	if d.deposed {
		return fmt.Errorf("%w: the session's lease is gone", quota.ErrStaleEpoch)
	}
	return d.MemLedger.Confirm(ctx, epoch)
}

// TestPausedLeaderAnswersNothingUnwritten is the report's case: a leader
// paused past its proof of leadership while a successor took over wakes
// up and is asked for renewals that change nothing (which would be
// covered) and for ones that need a write. It answers none: the covered
// ones wait for a proof, its ledger says it was deposed, and the server
// stops, fenced; the journal records no step of it after the pause. (The
// code before this check answered the covered renewals at once from the
// woken leader, and journalled them.)
func TestPausedLeaderAnswersNothingUnwritten(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		l := &deposedLedger{MemLedger: NewMemLedger()}
		j := &coverJournal{}
		tenant := shortTenant()
		tenant.LeaseDuration = 10 * time.Second // outlives the pause: the renewal after it is covered
		srv, err := NewServer(ctx, Config{Tenants: []quota.Tenant{tenant}}, l, WithJournal(j))
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- srv.Run(ctx) }()
		held := map[string]uint64{}
		g, err := srv.Renew(ctx, quota.Request{Tenant: "acme", Region: "eu", Seq: seq(), Demand: quota.Tokens(100)})
		if err != nil {
			t.Fatal(err)
		}
		held["eu"] = g.Lease.ID
		time.Sleep(3 * time.Second)
		// Settled: a renewal now changes nothing but the lease's end.
		x, err := srv.Renew(ctx, quota.Request{Tenant: "acme", Region: "eu", Seq: seq(), Holding: held["eu"], Epoch: srv.Epoch(), Demand: quota.Tokens(100)})
		if err != nil {
			t.Fatal(err)
		}
		if srv.Stats().Covered != 1 {
			t.Fatalf("the renewal before the pause: lease %d, stats %+v; want it covered", x.Lease.ID, srv.Stats())
		}
		held["eu"] = x.Lease.ID
		// The pause: the proof lapses now, and a successor deposes it.
		l.mu.Lock()
		l.until, l.deposed = time.Now(), true
		l.mu.Unlock()
		before := len(j.leases)
		time.Sleep(3 * time.Second) // paused
		rctx, rcancel := context.WithTimeout(ctx, 250*time.Millisecond)
		defer rcancel()
		g, err = srv.Renew(rctx, quota.Request{Tenant: "acme", Region: "eu", Seq: seq(), Holding: held["eu"], Epoch: srv.Epoch(), Demand: quota.Tokens(100)})
		if err == nil {
			t.Fatalf("the woken leader answered a renewal with lease %d (unchanged %v)", g.Lease.ID, g.Unchanged)
		}
		if !errors.Is(err, ErrNotWritten) {
			t.Fatalf("the woken leader's refusal: %v, want it to wrap ErrNotWritten", err)
		}
		select {
		case err := <-done:
			if !errors.Is(err, quota.ErrStaleEpoch) {
				t.Fatalf("Run ended with %v, want quota.ErrStaleEpoch", err)
			}
		case <-time.After(time.Second):
			t.Fatal("the deposed leader's Run goes on")
		}
		if n := len(j.leases); n != before {
			t.Fatalf("the journal recorded %d leases after the pause", n-before)
		}
		if l.confirms == 0 {
			t.Fatal("the woken leader never asked its ledger")
		}
	})
}

// TestSuccessorCoversOnRestoredRecords: after a take-over, a region that
// holds its predecessor's covered lease and asks for the same shares is
// answered with a covered lease of the successor's, standing on the
// predecessor's written record — no write, where it used to cost one per
// region and tenant. The record then counts as long as the new lease; the
// invariants hold; a renewal of other shares is written as ever.
func TestSuccessorCoversOnRestoredRecords(t *testing.T) {
	l := NewMemLedger()
	c := newCovering(t, l, 0)
	ms := time.Millisecond
	var held uint64
	for now := time.Duration(0); now < time.Second; now += 50 * ms {
		x, err := c.Core.Renew(now, quota.Request{Tenant: "acme", Region: "eu", Seq: seq(), Holding: held, Epoch: c.Epoch(), Demand: quota.Tokens(100)})
		if err != nil {
			t.Fatal(err)
		}
		if g := c.run(t, x).Grant; !g.Unchanged {
			held = g.Lease.ID
		}
	}
	if _, ok, _ := record(l, held); ok {
		t.Fatalf("eu holds lease %d, written: want a covered one", held)
	}
	s := newCovering(t, l, 0)
	s.run(t, Step{}) // the successor's first reservation of IDs
	puts := s.puts
	x, err := s.Core.Renew(10*ms, quota.Request{Tenant: "acme", Region: "eu", Seq: seq(), Holding: held, Epoch: c.Epoch(), Demand: quota.Tokens(100)})
	if err != nil {
		t.Fatal(err)
	}
	if !x.Covered || len(x.Ops) != 0 {
		t.Fatalf("the successor's answer to eu holding %d: covered %v, ops %+v; want a covered lease", held, x.Covered, x.Ops)
	}
	rec, ok, _ := record(l, x.Cover)
	if !ok || rec.Epoch >= s.Epoch() {
		t.Fatalf("covered by %d (%+v, in the ledger: %v): want the predecessor's record", x.Cover, rec, ok)
	}
	g := s.run(t, x).Grant
	if g.Lease.Epoch != s.Epoch() || g.Lease.ID <= held || s.puts != puts {
		t.Fatalf("granted %+v with %d records written: want a lease of the successor's above %d, nothing written", g.Lease, s.puts-puts, held)
	}
	var until time.Duration
	for _, lv := range s.tenants["acme"].regionOf("eu").live {
		if lv.ID == x.Cover {
			until = lv.until
		}
	}
	if until < g.Lease.Expires {
		t.Fatalf("the record %d counts until %v, the lease it covers until %v", x.Cover, until, g.Lease.Expires)
	}
	invariants(t, &ledgered{s.Core, l})
	// Other shares: written.
	x, err = s.Core.Renew(20*ms, quota.Request{Tenant: "acme", Region: "eu", Seq: seq(), Holding: g.Lease.ID, Epoch: s.Epoch(), Demand: quota.Tokens(1)})
	if err != nil {
		t.Fatal(err)
	}
	if g2 := s.run(t, x).Grant; x.Covered && g2.Lease.Rate != g.Lease.Rate {
		t.Fatalf("a renewal of other shares covered: %+v", g2.Lease)
	}
}
