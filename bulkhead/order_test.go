package bulkhead

import (
	"context"
	"errors"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// queuedNow reads the queued field of the state word: what a fast-path
// arrival sees, with no lock.
func queuedNow(b *Bulkhead) int { return int(b.state.Load() & queuedMask >> queuedShift) }

// wantOrder is the order in which the queue's discipline grants waiters
// that queued in the order of prios while nobody else arrives: the highest
// priority first; within it the oldest, or the newest while at least lifo
// wait (0: FIFO always). It is written apart from queue.go, as plainly as
// the docs state it, to check the real queue against.
func wantOrder(prios []Priority, lifo int) []int {
	var tiers [numPriorities][]int
	for i, p := range prios {
		tiers[p] = append(tiers[p], i)
	}
	order := make([]int, 0, len(prios))
	for n := len(prios); n > 0; n-- {
		for p := numPriorities - 1; p >= 0; p-- {
			t := tiers[p]
			if len(t) == 0 {
				continue
			}
			if lifo > 0 && n >= lifo {
				order, tiers[p] = append(order, t[len(t)-1]), t[:len(t)-1]
			} else {
				order, tiers[p] = append(order, t[0]), t[1:]
			}
			break
		}
	}
	return order
}

func TestWantOrder(t *testing.T) {
	for i, tc := range []struct {
		prios []Priority
		lifo  int
		want  []int
	}{
		{[]Priority{1, 1, 1}, 0, []int{0, 1, 2}},
		{[]Priority{1, 0, 2, 1, 3}, 0, []int{4, 2, 0, 3, 1}},
		// Backlog 4 ≥ 3: newest; 3 ≥ 3: newest; then FIFO (TestLIFOUnderBacklog).
		{[]Priority{1, 1, 1, 1}, 3, []int{3, 2, 0, 1}},
		// LIFO within the highest tier, counted over the whole queue.
		{[]Priority{0, 2, 2, 0}, 3, []int{2, 1, 0, 3}},
	} {
		got := wantOrder(tc.prios, tc.lifo)
		if len(got) != len(tc.want) {
			t.Fatalf("step %d: wantOrder(%v, %d) = %v, want %v", i, tc.prios, tc.lifo, got, tc.want)
		}
		for k := range got {
			if got[k] != tc.want[k] {
				t.Errorf("step %d: wantOrder(%v, %d) = %v, want %v", i, tc.prios, tc.lifo, got, tc.want)
				break
			}
		}
	}
}

// TestConcurrentReleasesKeepOrder queues 400 waiters behind a limit of 8
// and lets 8 goroutines release permits at once, the permits of the
// waiters as they are granted included (run with -race): the grants must
// follow the documented order — FIFO within a priority, priorities first,
// LIFO under a backlog when configured — however the releases interleave,
// and a newcomer on the fast path must never get in while anyone waits.
//
// The grant order is read where it is exact: a waiter's callback runs
// after its grant, and the waiters queued then can only be fewer than at
// the grant, so if everyone ahead of waiter i was granted before it, at
// most the waiters behind it are still queued when it hears. More than
// that means some waiter ahead of it is still queued: it lost its turn.
// A correct bulkhead passes every round; one that lets a waiter lose its
// place fails within a few.
func TestConcurrentReleasesKeepOrder(t *testing.T) {
	const limit, waiters, releasers, rounds = 8, 400, 8, 200
	for round := range rounds {
		r := rand.New(rand.NewPCG(uint64(round), 6))
		prios := make([]Priority, waiters)
		lifo := 0
		for i := range prios {
			prios[i] = PriorityNormal
			if round%3 != 0 { // every third round one priority, the others mixed
				prios[i] = Priority(r.IntN(int(numPriorities)))
			}
		}
		if round%3 == 2 {
			lifo = waiters / 2
		}
		order := wantOrder(prios, lifo)
		pos := make([]int, waiters) // place in the grant order, by arrival
		for k, i := range order {
			pos[i] = k
		}

		b, err := New(limit, WithQueue(waiters), WithLIFO(lifo))
		if err != nil {
			t.Fatal(err)
		}
		total := limit + waiters
		held := make(chan Permit, total)
		for range limit {
			p, ok := b.TryAcquire()
			if !ok {
				t.Fatalf("round %d: TryAcquire refused below the limit", round)
			}
			held <- p
		}
		queuedAt := make([]int, waiters) // queued when waiter i heard it was in
		for i := range waiters {
			b.Submit(prios[i], time.Time{}, func(p Permit, err error) {
				if err != nil {
					t.Errorf("round %d: waiter %d refused: %v", round, i, err)
				}
				queuedAt[i] = queuedNow(b)
				held <- p // the zero Permit of a refusal releases nothing
			})
		}
		if q := queuedNow(b); q != waiters {
			t.Fatalf("round %d: %d queued, want %d", round, q, waiters)
		}

		var released atomic.Int64
		var barged atomic.Int64 // queued when a newcomer got in; -1 for never
		barged.Store(-1)
		var wg sync.WaitGroup
		for range releasers {
			wg.Go(func() {
				for p := range held {
					p.Release()
					if released.Add(1) == int64(total) {
						close(held) // every callback has sent: no more permits
					}
				}
			})
		}
		// A newcomer knocking throughout: it may get in only once the
		// queue is empty, and nobody arrives after that, so the queue must
		// still be empty after it got in.
		wg.Go(func() {
			for released.Load() < int64(total) {
				if p, ok := b.TryAcquire(); ok {
					if q := queuedNow(b); q != 0 {
						barged.CompareAndSwap(-1, int64(q))
					}
					p.Release()
				}
				runtime.Gosched()
			}
		})
		wg.Wait()

		if q := barged.Load(); q >= 0 {
			t.Errorf("round %d: a newcomer got in with %d waiting", round, q)
		}
		worst, late := -1, 0
		for i := range waiters {
			if ahead := queuedAt[i] - (waiters - 1 - pos[i]); ahead > 0 {
				late++
				if worst < 0 || ahead > queuedAt[worst]-(waiters-1-pos[worst]) {
					worst = i
				}
			}
		}
		if worst >= 0 {
			t.Fatalf("round %d (lifo %d): %d of %d waiters were granted before someone ahead of them; worst: waiter %d (place %d in the order) heard it was in with %d queued, want at most %d (so at least %d ahead of it lost their turn)",
				round, lifo, late, waiters, worst, pos[worst], queuedAt[worst], waiters-1-pos[worst], queuedAt[worst]-(waiters-1-pos[worst]))
		}
		if st := b.Stats(); st.InFlight != 0 || st.Queued != 0 || st.Waited != waiters {
			t.Fatalf("round %d: stats %+v", round, st)
		}
	}
}

// TestNoBargingDuringHandOff stops a release halfway: its atomic add has
// freed a place in the state word, and it has not yet taken the lock to
// hand the place on. The place belongs to the first waiter: a newcomer by
// TryAcquire, Acquire or Submit must not take it, but queue behind.
func TestNoBargingDuringHandOff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, err := New(1, WithQueue(4))
		if err != nil {
			t.Fatal(err)
		}
		hold, _ := b.TryAcquire()
		var order []string
		first := submit(b, &order, "first", PriorityNormal, time.Time{})

		s := b.state.Add(completedOne - 1) // the first half of hold.Release
		if st := b.Stats(); st.InFlight != 0 || st.Queued != 1 {
			t.Fatalf("halfway through the release: stats %+v, want 0 inside and 1 queued", st)
		}
		if p, ok := b.TryAcquire(); ok {
			p.Release()
			t.Fatal("TryAcquire took the place of a waiter")
		}
		late := submit(b, &order, "late", PriorityNormal, time.Time{})
		if late.done {
			t.Fatalf("Submit answered at once, before the waiter: %+v", late)
		}
		acquired := make(chan Permit, 1)
		go func() {
			p, err := b.Acquire(context.Background())
			if err != nil {
				t.Errorf("Acquire: %v", err)
			}
			acquired <- p
		}()
		synctest.Wait()
		select {
		case <-acquired:
			t.Fatal("Acquire took the place of a waiter")
		default:
		}
		if st := b.Stats(); st.InFlight != 0 || st.Queued != 3 {
			t.Fatalf("after the newcomers: stats %+v, want 0 inside and 3 queued", st)
		}

		hold.release(s) // the second half hands the place on
		if !first.done || first.err != nil || late.done {
			t.Fatalf("after the hand-off: first %+v, late %+v; want first in, late waiting", first, late)
		}
		first.permit.Release()
		if !late.done || late.err != nil {
			t.Fatalf("late %+v: want in after first", late)
		}
		late.permit.Release()
		(<-acquired).Release()
		if st := b.Stats(); st.InFlight != 0 || st.Queued != 0 || st.Waited != 3 {
			t.Fatalf("stats %+v", st)
		}
	})
}

// TestAcquireRefusesDoneContext: a context already done when Acquire is
// called is refused with ErrCanceled, even with room inside and nobody
// queued — on the fast path too — and takes no place.
func TestAcquireRefusesDoneContext(t *testing.T) {
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	expired, cancel := context.WithDeadline(context.Background(), time.Unix(0, 0))
	defer cancel()
	adaptive := []Option{WithAdaptive(AdaptiveConfig{})}
	for i, tc := range []struct {
		name  string
		opts  []Option
		ctx   context.Context
		cause error
	}{
		{"fixed limit, canceled", nil, canceled, context.Canceled},
		{"fixed limit, deadline passed", nil, expired, context.DeadlineExceeded},
		{"fixed limit, canceled, with a priority", nil, WithPriority(canceled, PriorityCritical), context.Canceled},
		{"adaptive limit, canceled", adaptive, canceled, context.Canceled},
		{"adaptive limit, deadline passed", adaptive, expired, context.DeadlineExceeded},
	} {
		b, err := New(2, append([]Option{WithQueue(2)}, tc.opts...)...)
		if err != nil {
			t.Fatal(err)
		}
		p, err := b.Acquire(tc.ctx)
		p.Release()
		if !errors.Is(err, ErrRejected) || !errors.Is(err, ErrCanceled) || !errors.Is(err, tc.cause) {
			t.Errorf("step %d (%s): Acquire = %v, want ErrCanceled wrapping %v", i, tc.name, err, tc.cause)
		}
		if st := b.Stats(); st.Admitted != 0 || st.InFlight != 0 || st.Rejected[ReasonCanceled] != 1 {
			t.Errorf("step %d (%s): stats %+v, want nobody admitted and one refusal for canceled", i, tc.name, st)
		}
	}
}
