package bulkhead

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/afloat/afloat/internal/vclock"
)

// vc adapts the virtual clock to the bulkhead's Clock.
type vc struct{ *vclock.Clock }

func (c vc) AfterFunc(d time.Duration, f func()) Timer { return c.Clock.AfterFunc(d, f) }

func newVirtual(t *testing.T, limit int, opts ...Option) (*Bulkhead, *vclock.Clock) {
	t.Helper()
	c := vclock.New(time.Unix(1000, 0))
	b, err := New(limit, append([]Option{WithClock(vc{c})}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return b, c
}

// ticket records what Submit answered.
type ticket struct {
	name   string
	permit Permit
	err    error
	done   bool
}

func submit(b *Bulkhead, order *[]string, name string, p Priority, deadline time.Time) *ticket {
	t := &ticket{name: name}
	b.Submit(p, deadline, func(pm Permit, err error) {
		t.permit, t.err, t.done = pm, err, true
		if err == nil {
			*order = append(*order, name)
		}
	})
	return t
}

func TestFastPathAndCounts(t *testing.T) {
	b, err := New(3)
	if err != nil {
		t.Fatal(err)
	}
	var ps []Permit
	for i := range 3 {
		p, ok := b.TryAcquire()
		if !ok {
			t.Fatalf("step %d: TryAcquire refused below the limit", i)
		}
		ps = append(ps, p)
	}
	if _, ok := b.TryAcquire(); ok {
		t.Fatal("TryAcquire admitted a fourth request at limit 3")
	}
	if _, err := b.Acquire(context.Background()); !errors.Is(err, ErrQueueFull) || !errors.Is(err, ErrRejected) || ReasonOf(err) != ReasonQueueFull {
		t.Fatalf("Acquire at the limit with no queue: %v", err)
	}
	st := b.Stats()
	if st.InFlight != 3 || st.Queued != 0 || st.Admitted != 3 || st.Completed != 0 || st.Rejected[ReasonQueueFull] != 1 {
		t.Fatalf("stats %+v", st)
	}
	for _, p := range ps {
		p.Release()
	}
	Permit{}.Release() // the zero permit is harmless
	st = b.Stats()
	if st.InFlight != 0 || st.Admitted != 3 || st.Completed != 3 {
		t.Fatalf("stats after release %+v", st)
	}
}

func TestConfigErrors(t *testing.T) {
	for i, tc := range []struct {
		limit int
		opts  []Option
		want  string
	}{
		{0, nil, "limit 0: want 1 to 65535"},
		{MaxLimit + 1, nil, "limit 65536"},
		{1, []Option{WithQueue(-1)}, "queue -1: want 0 to 65535"},
		{1, []Option{WithQueue(MaxQueue + 1)}, "queue 65536"},
		{1, []Option{WithMaxWait(-time.Second)}, "max wait -1s"},
		{1, []Option{WithLIFO(-2)}, "LIFO backlog -2"},
		{1, []Option{WithClock(nil)}, "nil clock"},
		{5, []Option{WithAdaptive(AdaptiveConfig{Min: 10})}, "initial limit 5: want between"},
		{3, []Option{WithAdaptive(AdaptiveConfig{Min: 3, Max: 2})}, "adaptive max 2"},
		{5, []Option{WithAdaptive(AdaptiveConfig{Tolerance: 2})}, "adaptive tolerance 2"},
		{5, []Option{WithAdaptive(AdaptiveConfig{Window: -time.Second})}, "adaptive window"},
	} {
		_, err := New(tc.limit, tc.opts...)
		if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("step %d: New = %v, want ErrConfig mentioning %q", i, err, tc.want)
		}
	}
	b, _ := New(2)
	if err := b.SetLimit(0); !errors.Is(err, ErrConfig) {
		t.Errorf("SetLimit(0) = %v", err)
	}
}

// TestPrioritiesAndOrder: higher tiers first, FIFO within a tier.
func TestPrioritiesAndOrder(t *testing.T) {
	b, _ := newVirtual(t, 1, WithQueue(10))
	var order []string
	hold := submit(b, &order, "first", PriorityNormal, time.Time{})
	for _, s := range []struct {
		name string
		p    Priority
	}{{"n1", PriorityNormal}, {"low", PriorityLow}, {"high", PriorityHigh}, {"n2", PriorityNormal}, {"crit", PriorityCritical}} {
		if tk := submit(b, &order, s.name, s.p, time.Time{}); tk.done {
			t.Fatalf("%s was answered at once at the limit: %+v", s.name, tk)
		}
	}
	if st := b.Stats(); st.Queued != 5 || st.InFlight != 1 {
		t.Fatalf("stats %+v", st)
	}
	// Each release passes the place to the next waiter, in order. (A
	// permit of a fixed bulkhead carries nothing but the bulkhead, so any
	// one releases a place.)
	hold.permit.Release()
	for len(order) < 6 {
		Permit{b: b}.Release()
	}
	want := "first crit high n1 n2 low"
	if got := strings.Join(order, " "); got != want {
		t.Errorf("admission order %q, want %q", got, want)
	}
}

// TestLIFOUnderBacklog: newest first once the backlog reaches the threshold.
func TestLIFOUnderBacklog(t *testing.T) {
	b, _ := newVirtual(t, 1, WithQueue(10), WithLIFO(3))
	var order []string
	submit(b, &order, "first", PriorityNormal, time.Time{})
	for _, n := range []string{"a", "b", "c", "d"} {
		submit(b, &order, n, PriorityNormal, time.Time{})
	}
	for range 4 {
		Permit{b: b}.Release()
	}
	// Backlog 4 ≥ 3: d; then 3 ≥ 3: c; then 2 < 3: FIFO: a, b.
	if got := strings.Join(order, " "); got != "first d c a b" {
		t.Errorf("order %q, want %q", got, "first d c a b")
	}
}

func TestEvictionByHigherPriority(t *testing.T) {
	b, _ := newVirtual(t, 1, WithQueue(2))
	var order []string
	submit(b, &order, "first", PriorityNormal, time.Time{})
	low1 := submit(b, &order, "low1", PriorityLow, time.Time{})
	submit(b, &order, "low2", PriorityLow, time.Time{})
	high := submit(b, &order, "high", PriorityHigh, time.Time{})
	if !low1.done || !errors.Is(low1.err, ErrEvicted) || high.done {
		t.Fatalf("low1 %+v, high %+v: want the oldest low evicted and high queued", low1, high)
	}
	low3 := submit(b, &order, "low3", PriorityLow, time.Time{})
	if !errors.Is(low3.err, ErrQueueFull) {
		t.Fatalf("low3 %+v: want queue full (nobody lower to evict)", low3)
	}
	st := b.Stats()
	if st.Rejected[ReasonEvicted] != 1 || st.Rejected[ReasonQueueFull] != 1 || st.Queued != 2 {
		t.Fatalf("stats %+v", st)
	}
}

// TestMaxWaitExpiresOnOneTimer: waiters leave at their maximum wait; one
// timer serves the whole queue and is stopped when the queue empties.
func TestMaxWaitExpiresOnOneTimer(t *testing.T) {
	b, c := newVirtual(t, 1, WithQueue(5), WithMaxWait(time.Second))
	var order []string
	hold := submit(b, &order, "first", PriorityNormal, time.Time{})
	a := submit(b, &order, "a", PriorityNormal, time.Time{})
	c.Advance(400 * time.Millisecond)
	bb := submit(b, &order, "b", PriorityNormal, time.Time{})
	c.Advance(700 * time.Millisecond) // a has waited 1.1 s, b 0.7 s
	if !a.done || !errors.Is(a.err, ErrMaxWait) || bb.done {
		t.Fatalf("a %+v, b %+v: want a expired and b waiting", a, bb)
	}
	hold.permit.Release()
	if !bb.done || bb.err != nil {
		t.Fatalf("b %+v: want admitted on the release", bb)
	}
	b.mu.Lock()
	armed := b.timer != nil
	b.mu.Unlock()
	if armed {
		t.Error("the expiry timer is still armed with an empty queue")
	}
	bb.permit.Release()
	if st := b.Stats(); st.Rejected[ReasonMaxWait] != 1 || st.InFlight != 0 || st.Waited != 1 {
		t.Fatalf("stats %+v", st)
	}
}

// TestDeadlineRefusedBeforeWaiting: once the queue's speed is known, a
// request whose deadline cannot be met is refused at once; one whose
// deadline passes in the queue leaves then.
func TestDeadlineRefusedBeforeWaiting(t *testing.T) {
	b, c := newVirtual(t, 1, WithQueue(100))
	var order []string
	tk := submit(b, &order, "first", PriorityNormal, time.Time{})
	var queued []*ticket
	for i := range 20 {
		queued = append(queued, submit(b, &order, fmt.Sprint(i), PriorityNormal, time.Time{}))
	}
	// Serve one every 100 ms for a second: the queue moves at 10/s.
	cur := tk
	for i := range 10 {
		c.Advance(100 * time.Millisecond)
		cur.permit.Release()
		cur = queued[i]
	}
	// 10 still wait; a newcomer would wait about 11 × 100 ms.
	if _, ok := b.handoffs.expectedWait(1); !ok {
		t.Fatal("the queue's speed is not known after 10 hand-offs")
	}
	late := submit(b, &order, "late", PriorityNormal, c.Now().Add(500*time.Millisecond))
	if !late.done || !errors.Is(late.err, ErrDeadline) {
		t.Fatalf("late %+v: want refused at once (deadline 0.5 s, expected wait ~1.1 s)", late)
	}
	past := submit(b, &order, "past", PriorityNormal, c.Now().Add(-time.Millisecond))
	if !errors.Is(past.err, ErrDeadline) {
		t.Fatalf("past %+v", past)
	}
	ok := submit(b, &order, "ok", PriorityNormal, c.Now().Add(5*time.Second))
	if ok.done {
		t.Fatalf("ok %+v: want queued (deadline 5 s)", ok)
	}
	// Nobody is served for 6 s: ok's deadline passes in the queue.
	c.Advance(6 * time.Second)
	if !ok.done || !errors.Is(ok.err, ErrDeadline) {
		t.Fatalf("ok %+v: want refused at its deadline", ok)
	}
	if st := b.Stats(); st.Rejected[ReasonDeadline] != 3 {
		t.Fatalf("stats %+v", st)
	}
}

func TestSetLimit(t *testing.T) {
	b, _ := newVirtual(t, 2, WithQueue(10))
	var order []string
	var ts []*ticket
	for i := range 6 {
		ts = append(ts, submit(b, &order, fmt.Sprint(i), PriorityNormal, time.Time{}))
	}
	if st := b.Stats(); st.InFlight != 2 || st.Queued != 4 {
		t.Fatalf("stats %+v", st)
	}
	b.SetLimit(4) // two more admitted at once
	if st := b.Stats(); st.InFlight != 4 || st.Queued != 2 || len(order) != 4 {
		t.Fatalf("after raising: stats %+v, order %v", st, order)
	}
	b.SetLimit(1) // nobody more until the inside is below 1
	for i := range 3 {
		ts[i].permit.Release()
		if st := b.Stats(); st.InFlight != 3-i || len(order) != 4 {
			t.Fatalf("release %d after cutting to 1: stats %+v", i, st)
		}
	}
	ts[3].permit.Release() // inside 0 < 1: one waiter in
	if st := b.Stats(); st.InFlight != 1 || st.Queued != 1 || len(order) != 5 {
		t.Fatalf("stats %+v, order %v", st, order)
	}
}

// TestSetLimitRacesArrival (run with -race): a newcomer arrives at a full
// bulkhead just as the limit is raised. Whichever comes first, once both
// have returned the newcomer must be inside: it either read the new limit,
// or queued in time to be admitted by the raise. An arrival that read the
// old limit, and queued after the raise looked for waiters, would wait
// with room inside until somebody released.
func TestSetLimitRacesArrival(t *testing.T) {
	const iterations = 50000
	b, _ := New(1, WithQueue(1))
	hold, _ := b.TryAcquire()
	defer hold.Release()
	for i := range iterations {
		var order []string
		var tk *ticket
		start := make(chan struct{})
		var wg sync.WaitGroup
		wg.Go(func() {
			<-start
			tk = submit(b, &order, "newcomer", PriorityNormal, time.Time{})
		})
		wg.Go(func() {
			<-start
			if err := b.SetLimit(2); err != nil {
				t.Error(err)
			}
		})
		close(start)
		wg.Wait()
		if !tk.done || tk.err != nil {
			t.Fatalf("step %d: after SetLimit(2) the newcomer is answered %v with %v, stats %+v; want it inside", i, tk.done, tk.err, b.Stats())
		}
		tk.permit.Release()
		if err := b.SetLimit(1); err != nil {
			t.Fatal(err)
		}
	}
}

// TestAcquireBlocking runs real goroutines in a synctest bubble: waiting,
// hand-off, cancellation and the maximum wait, in virtual time.
func TestAcquireBlocking(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, err := New(2, WithQueue(2), WithMaxWait(3*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		p1, _ := b.Acquire(ctx)
		p2, _ := b.Acquire(ctx)

		got := make(chan error, 2)
		go func() {
			p, err := b.Acquire(ctx)
			got <- err
			if err == nil {
				time.Sleep(time.Second) // virtual: holds the place a while
				p.Release()
			}
		}()
		cctx, cancel := context.WithCancel(ctx)
		canceled := make(chan error, 1)
		go func() {
			_, err := b.Acquire(cctx)
			canceled <- err
		}()
		synctest.Wait()
		if st := b.Stats(); st.Queued != 2 {
			t.Fatalf("stats %+v: want 2 queued", st)
		}
		if _, err := b.Acquire(ctx); !errors.Is(err, ErrQueueFull) {
			t.Fatalf("fifth request: %v, want queue full", err)
		}
		cancel()
		if err := <-canceled; !errors.Is(err, ErrCanceled) || !errors.Is(err, context.Canceled) {
			t.Fatalf("canceled waiter: %v", err)
		}
		p1.Release() // hands its place to the first waiter
		if err := <-got; err != nil {
			t.Fatalf("waiter: %v", err)
		}

		// A waiter that nobody serves leaves at the maximum wait.
		time.Sleep(2 * time.Second) // the first waiter has done its second inside
		p3, ok := b.TryAcquire()
		if !ok {
			t.Fatal("no room after the first waiter left")
		}
		expired := make(chan error, 1)
		start := time.Now()
		go func() {
			_, err := b.Acquire(ctx)
			expired <- err
		}()
		if err := <-expired; !errors.Is(err, ErrMaxWait) {
			t.Fatalf("unserved waiter: %v", err)
		}
		if waited := time.Since(start); waited != 3*time.Second {
			t.Fatalf("waited %v, want exactly the 3 s maximum (virtual time)", waited)
		}
		p2.Release()
		p3.Release()
		synctest.Wait()
		st := b.Stats()
		if st.InFlight != 0 || st.Queued != 0 || st.Rejected[ReasonMaxWait] != 1 || st.Rejected[ReasonCanceled] != 1 {
			t.Fatalf("stats %+v", st)
		}
	})
}

// TestDeadlineOfContext: a waiter leaves when its context's deadline
// passes, and an Acquire with a deadline already passed is refused.
func TestDeadlineOfContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, _ := New(1, WithQueue(1))
		p, _ := b.Acquire(context.Background())
		ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		defer cancel()
		_, err := b.Acquire(ctx)
		if !errors.Is(err, ErrCanceled) || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("waiter past its deadline: %v", err)
		}
		if _, err := b.Acquire(ctx); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Acquire with a passed deadline: %v", err)
		}
		p.Release()
	})
}

// TestIdleRunsNothing: after a burst, no goroutine and no timer is left.
func TestIdleRunsNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, _ := New(4, WithQueue(100), WithMaxWait(time.Minute))
		var wg sync.WaitGroup
		for range 50 {
			wg.Go(func() {
				p, err := b.Acquire(context.Background())
				if err == nil {
					time.Sleep(10 * time.Millisecond)
					p.Release()
				}
			})
		}
		wg.Wait()
		synctest.Wait() // every goroutine of the bubble is done or durably blocked
		b.mu.Lock()
		armed := b.timer != nil
		b.mu.Unlock()
		if armed {
			t.Fatal("the expiry timer is armed while idle")
		}
		if st := b.Stats(); st.Admitted != 50 || st.Completed != 50 || st.Waited != 46 {
			t.Fatalf("stats %+v", st)
		}
	})
}

// TestConcurrentInvariants hammers a bulkhead from many goroutines (run
// with -race): the inside never exceeds the limit, and every request is
// accounted for once.
func TestConcurrentInvariants(t *testing.T) {
	const limit, workers, each = 4, 32, 300
	b, _ := New(limit, WithQueue(8), WithMaxWait(50*time.Millisecond), WithLIFO(6))
	var inside, peak atomic.Int64
	var ok, refused atomic.Int64
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(w), 7))
			for range each {
				ctx := WithPriority(context.Background(), Priority(r.IntN(int(numPriorities))))
				var cancel context.CancelFunc = func() {}
				if r.IntN(4) == 0 {
					ctx, cancel = context.WithTimeout(ctx, time.Duration(r.IntN(200))*time.Microsecond)
				}
				p, err := b.Acquire(ctx)
				cancel()
				if err != nil {
					if !errors.Is(err, ErrRejected) {
						t.Errorf("refusal %v does not match ErrRejected", err)
					}
					refused.Add(1)
					continue
				}
				n := inside.Add(1)
				for {
					m := peak.Load()
					if n <= m || peak.CompareAndSwap(m, n) {
						break
					}
				}
				runtime.Gosched()
				inside.Add(-1)
				p.Release()
				ok.Add(1)
			}
		})
	}
	wg.Wait()
	if peak.Load() > limit {
		t.Errorf("%d inside at once, limit %d", peak.Load(), limit)
	}
	st := b.Stats()
	var rejected uint64
	for _, n := range st.Rejected {
		rejected += n
	}
	if st.InFlight != 0 || st.Queued != 0 || st.Admitted != uint64(ok.Load()) || st.Completed != st.Admitted ||
		rejected != uint64(refused.Load()) || st.Admitted+rejected != workers*each {
		t.Fatalf("stats %+v; ok %d, refused %d", st, ok.Load(), refused.Load())
	}
}

// TestCompletedWraps: the completed count goes past 2^32 intact.
func TestCompletedWraps(t *testing.T) {
	b, _ := New(2, WithQueue(1))
	b.state.Store(uint64(math.MaxUint32-1) << completedShift)
	for i := range 4 {
		p, _ := b.TryAcquire()
		p.Release()
		if want := uint64(math.MaxUint32-1) + uint64(i) + 1; b.Stats().Completed != want {
			t.Fatalf("step %d: completed %d, want %d", i, b.Stats().Completed, want)
		}
	}
	// And on the slow path: a hand-off across the wrap.
	var order []string
	p1, _ := b.TryAcquire()
	p2, _ := b.TryAcquire()
	w := submit(b, &order, "w", PriorityNormal, time.Time{})
	b.state.Store(b.state.Load()&(1<<completedShift-1) | uint64(math.MaxUint32)<<completedShift)
	before := b.Stats().Completed
	p1.Release()
	if got := b.Stats().Completed; got != before+1 || !w.done {
		t.Fatalf("completed %d → %d across the wrap, waiter %+v", before, got, w)
	}
	p2.Release()
	w.permit.Release()
}
