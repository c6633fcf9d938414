package region

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/afloat/afloat/quota"
)

// TestWithoutALease: what a tenant gets before its first lease, and once
// a lease has lapsed. Before the first grant the region knows neither the
// tenant's mode nor its allowance E (both come with grants), so every
// tenant is refused, best effort too (Counts.NoLease). Once a grant has
// said so, a best-effort tenant whose lease lapsed spends its allowance,
// and a hard one is refused.
func TestWithoutALease(t *testing.T) {
	be := func(g *quota.Grant) { g.Mode = quota.BestEffort; g.Emergency = 3 * quota.One }
	for _, tc := range []struct {
		name string
		mut  func(*quota.Grant)
		// admitted of 10 after the lease lapsed
		lapsed int
	}{
		{"hard", nil, 0},
		{"best effort", be, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := newLimiter(t)
			if got := admitN(l, 0, 10); got != 0 {
				t.Fatalf("before the first grant: %d admitted of 10, want none", got)
			}
			if c, _ := l.Counts("acme"); c.NoLease != 10 || c.Emergency != 0 {
				t.Fatalf("before the first grant: %+v, want 10 refused for no lease", c)
			}
			grantAt(t, l, sec, sec, 10, 5, tc.mut)
			if got := admitN(l, 30*sec, 10); got != tc.lapsed {
				t.Fatalf("the lease lapsed: %d admitted of 10, want %d", got, tc.lapsed)
			}
		})
	}
}

// TestLostRequestIsDueAgain: a request whose call failed as a whole
// waits for no answer: the tenant is due again by the ordinary rules
// (without a lease, the retry interval after its last request), not
// after its own retry interval doubled by each request left unanswered —
// the region's backoff decides when it asks.
func TestLostRequestIsDueAgain(t *testing.T) {
	l := newLimiter(t)
	now := int64(0)
	for i := range 4 {
		req, _ := l.Request(now, "acme")
		l.lose("acme", req.Seq)
		if l.Due(now+400*ms, "acme") || !l.Due(now+500*ms, "acme") {
			t.Fatalf("step %d: lost request %d: due 400 ms after it, or not 500 ms after it", i, req.Seq)
		}
		now += 500 * ms
	}
	// Unanswered but not lost: its own retry interval, doubled by each
	// request before it left unanswered (4 of them now: 8 s, the most).
	l.Request(now, "acme")
	if l.Due(now+7*sec, "acme") || !l.Due(now+8*sec, "acme") {
		t.Fatalf("a request waiting for its answer after 4 unanswered: due within 7 s, or not after 8 s")
	}
	// A newer request is not lost by an old one's failure.
	req, _ := l.Request(now+8*sec, "acme")
	l.lose("acme", req.Seq-1)
	if l.Due(now+8*sec+500*ms, "acme") {
		t.Fatalf("due while request %d waits for its answer (%d was lost)", req.Seq, req.Seq-1)
	}
}

// TestNextLookNeverLate: Run asks Due only when nextLook says; so the
// first instant Due turns true, by the passing of time alone, is never
// before nextLook's. Checked against Due itself, asked every 5 ms, from
// the states a tenant goes through.
func TestNextLookNeverLate(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	checked := 0
	for i := range 3000 {
		l := newLimiter(t)
		l.cfg.Spread = 0.4
		now := int64(0)
		// A history: grants, Kept answers, refusals, requests left
		// unanswered or lost, demand reported.
		for range rng.IntN(6) {
			switch rng.IntN(5) {
			case 0, 1:
				arrive := now + int64(rng.IntN(50))*ms
				in := grantAt(t, l, now, arrive, 100, 100, nil)
				now = arrive + int64(rng.IntN(50))*ms
				if in.OK() && rng.IntN(2) == 0 {
					l.spreadLease("acme", in.Lease.ID)
				}
			case 2:
				admitN(l, now, rng.IntN(300))
			case 3:
				req, _ := l.Request(now, "acme")
				if rng.IntN(2) == 0 {
					l.lose("acme", req.Seq)
				}
			case 4:
				now += int64(rng.IntN(6000)) * ms
			}
		}
		if l.Due(now, "acme") {
			continue
		}
		checked++
		next := l.nextLook(now, l.bucket("acme"))
		for at := now; at <= now+20*sec; at += 5 * ms {
			if l.Due(at, "acme") {
				if at < next-5*ms {
					t.Fatalf("history %d: due at %v, but nextLook at %v said %v", i, time.Duration(at), time.Duration(now), time.Duration(next))
				}
				break
			}
		}
	}
	if checked < 1000 {
		t.Fatalf("%d histories ended not due, want at least 1,000 to check", checked)
	}
}

// TestAttention: buckets pushed from many goroutines at once, some again
// and again, while Run's side takes them: each push is seen by a take
// (none lost), and no take holds a bucket twice.
func TestAttention(t *testing.T) {
	var a attention
	bs := make([]*bucket, 64)
	for i := range bs {
		bs[i] = &bucket{name: fmt.Sprint(i), att: &a}
	}
	var pushers sync.WaitGroup
	const rounds = 2000
	for g := range 8 {
		pushers.Go(func() {
			for r := range rounds {
				a.push(bs[(g*7+r)%len(bs)])
			}
		})
	}
	seen := map[*bucket]int{}
	done := make(chan struct{})
	go func() { pushers.Wait(); close(done) }()
	takes := 0
	for finished := false; !finished; {
		select {
		case <-done:
			finished = true
		default:
		}
		once := map[*bucket]bool{}
		a.take(func(b *bucket) {
			if once[b] {
				t.Fatalf("take %d held bucket %s twice", takes, b.name)
			}
			once[b] = true
			seen[b]++
		})
		takes++
	}
	a.take(func(b *bucket) { seen[b]++ }) // what the last pushes left
	for _, b := range bs {
		if seen[b] == 0 {
			t.Errorf("bucket %s pushed %d times, never taken", b.name, rounds*8/len(bs))
		}
		if b.queued.Load() || b.upNext != nil {
			t.Errorf("bucket %s still marked as on the list", b.name)
		}
	}
}

// TestBucketHeap: random pushes, pops and removals against a sorted
// slice.
func TestBucketHeap(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	h := bucketHeap{which: timersHeap}
	var ref []*bucket
	all := make([]*bucket, 200)
	for i := range all {
		all[i] = &bucket{name: fmt.Sprint(i)}
	}
	for step := range 20000 {
		b := all[rng.IntN(len(all))]
		switch op := rng.IntN(3); {
		case op == 0 && !h.has(b):
			b.run.at = int64(rng.IntN(1000))
			h.push(b)
			ref = append(ref, b)
		case op == 1 && h.len() > 0:
			got := h.pop()
			least := slices.MinFunc(ref, func(x, y *bucket) int { return int(x.run.at - y.run.at) })
			if got.run.at != least.run.at {
				t.Fatalf("step %d: pop() at %d, want the least, %d", step, got.run.at, least.run.at)
			}
			ref = slices.DeleteFunc(ref, func(x *bucket) bool { return x == got })
		case op == 2:
			h.remove(b)
			ref = slices.DeleteFunc(ref, func(x *bucket) bool { return x == b })
		}
		if h.len() != len(ref) {
			t.Fatalf("step %d: %d in the heap, want %d", step, h.len(), len(ref))
		}
	}
}
