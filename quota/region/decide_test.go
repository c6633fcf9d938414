package region

import (
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/afloat/afloat/quota"
)

// TestDecideAllocatesNothing: DecideAt, on every path a front meets —
// admitted, refused under a lease (a promise), refused without one (the
// policy), never admittable, a tenant not served — allocates nothing.
func TestDecideAllocatesNothing(t *testing.T) {
	l := newLimiter(t)
	grantAt(t, l, 0, 0, 10, 1e6, func(g *quota.Grant) {
		g.Ceiling, g.Lease.Transfer, g.ValidFor = quota.Tokens(1e6), quota.Tokens(1e6), time.Hour
	})
	empty := newLimiter(t)
	grantAt(t, empty, 0, 0, 10, 10, nil)
	none := newLimiter(t)
	none.Request(0, "acme") // unanswered: the retry policy's input
	var sink Decision
	for i, c := range []struct {
		name string
		l    *Limiter
		now  int64
		tn   string
		cost int64
		want func(Decision) bool
	}{
		{"admitted", l, sec, "acme", 1, func(d Decision) bool { return d.Allowed && d.LeaseID != 0 && d.Remaining > 0 }},
		{"refused under a lease", empty, 0, "acme", 1, func(d Decision) bool { return !d.Allowed && d.RetryKnown }},
		{"refused without a lease", none, sec, "acme", 1, func(d Decision) bool { return !d.Allowed && !d.RetryKnown && d.RetryAfter > 0 }},
		{"never", l, sec, "acme", 2e6, func(d Decision) bool { return d.Never && d.MaxCost == 1e6 }},
		{"unknown", l, sec, "mallory", 1, func(d Decision) bool { return d.Unknown }},
	} {
		sink = c.l.DecideAt(c.now, c.tn, c.cost)
		if !c.want(sink) {
			t.Fatalf("step %d (%s): %+v", i, c.name, sink)
		}
		if n := testing.AllocsPerRun(1000, func() { sink = c.l.DecideAt(c.now, c.tn, c.cost) }); n != 0 {
			t.Errorf("step %d (%s): DecideAt allocates %v times a call, want 0", i, c.name, n)
		}
	}
}

// retryAfterLocked is Retry-After as the fronts had it before DecideAt:
// the renewal bookkeeping read under the tenant's lock, the lease read
// again — the reference that the lock-free hint (bucket.ask) must agree
// with.
func retryAfterLocked(l *Limiter, now int64, tenant string, cost int64) (time.Duration, bool) {
	b := l.bucket(tenant)
	s := b.cur.Load()
	if s.valid(now) {
		if w, ok := s.waitFor(now, cost); ok {
			return min(time.Duration(w), l.cfg.MaxRetryAfter), true
		}
	}
	b.mu.Lock()
	f, last, answered, seq := b.failures, b.lastSend, b.answered, b.seq
	b.mu.Unlock()
	wait := int64(l.retryAfterFailures(f))
	if answered >= seq {
		wait = int64(l.cfg.Retry)
		if s.valid(now) {
			wait = int64(l.cfg.HotInterval)
		}
	}
	next := last + wait - now
	if next <= 0 {
		next = int64(l.cfg.Retry)
	}
	return min(time.Duration(next), l.cfg.MaxRetryAfter), false
}

// TestDecideMatchesComposed: on a seeded script of renewals (answered,
// unanswered, kept, lost), time steps and requests of every size, a
// limiter asked through DecideAt and a twin asked as the fronts used to
// ask — AllowAt, then the ceiling, then Retry-After from the bookkeeping
// under the lock (retryAfterLocked), then Status — give the same answer
// at every step, with no renewal racing them: the lock-free hint says
// what the locked fields said. Numbered from a SeqBase and from 0 alike.
func TestDecideMatchesComposed(t *testing.T) {
	for _, base := range []uint64{0, 1 << 40} {
		cfg := DefaultConfig("eu", "acme")
		cfg.SeqBase, cfg.MaxDrift = base, 0
		l, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		twin, _ := New(cfg)
		rng := rand.New(rand.NewPCG(44, base))
		var now int64
		var id uint64
		var pending []quota.Request // sent, not answered yet
		decisions, promises, policies, nevers := 0, 0, 0, 0
		for step := range 3000 {
			now += rng.Int64N(100 * ms)
			switch r := rng.IntN(10); {
			case r == 0: // a request, answered later or never
				req, _ := l.Request(now, "acme")
				twin.Request(now, "acme")
				pending = append(pending, req)
			case r == 1 && len(pending) > 0: // an answer to one of them
				i := rng.IntN(len(pending))
				req := pending[i]
				pending = append(pending[:i], pending[i+1:]...)
				id++
				g := quota.Grant{
					Lease: quota.Lease{ID: id, Tenant: "acme", Region: "eu", Epoch: 1,
						Rate: quota.Tokens(float64(1 + rng.IntN(50))), Burst: quota.Tokens(float64(1 + rng.IntN(40)))},
					Seq: req.Seq, ValidFor: time.Duration(1+rng.IntN(4)) * time.Second, Margin: 100 * time.Millisecond,
					Unchanged: rng.IntN(5) == 0,
				}
				if rng.IntN(2) == 0 {
					g.Ceiling = quota.Tokens(float64(20 + rng.IntN(30)))
				}
				if g.Unchanged {
					g.Lease.ID = l.bucket("acme").cur.Load().lease.ID
				}
				in, tin := l.Install(now, g), twin.Install(now, g)
				if in.Outcome != tin.Outcome {
					t.Fatalf("step %d: installed %v, the twin %v", step, in.Outcome, tin.Outcome)
				}
			default: // a request to decide
				cost := 1 + rng.Int64N(8)
				if rng.IntN(8) == 0 {
					cost = 1 + rng.Int64N(60)
				}
				d := l.DecideAt(now, "acme", cost)
				ok := twin.AllowAt(now, "acme", cost)
				most, known := twin.bucket("acme").ceil.Load()-1, twin.bucket("acme").ceil.Load() != 0
				never := !ok && known && cost > most
				var retry time.Duration
				var promise bool
				if !ok && !never {
					retry, promise = retryAfterLocked(twin, now, "acme", cost)
				}
				st := twin.Status(now, "acme")
				var id uint64
				if st.Valid {
					id = st.Lease.ID
				}
				if !known {
					most = -1
				}
				if d.Allowed != ok || d.Never != never || d.MaxCost != most || d.RetryAfter != retry || d.RetryKnown != promise ||
					d.Remaining != st.Balance || d.LeaseID != id || d.Rate != st.Lease.Rate && id != 0 {
					t.Fatalf("step %d: DecideAt(%v, %d) = %+v; composed: allowed %v never %v max %d retry %v %v remaining %v lease %d",
						step, time.Duration(now), cost, d, ok, never, most, retry, promise, st.Balance, id)
				}
				decisions++
				switch {
				case never:
					nevers++
				case !ok && promise:
					promises++
				case !ok:
					policies++
				}
			}
		}
		// Every kind of answer was common, or the test proves little.
		if decisions < 2000 || promises < 100 || policies < 100 || nevers < 50 {
			t.Fatalf("seq base %d: %d decisions, %d promises, %d policies, %d nevers", base, decisions, promises, policies, nevers)
		}
	}
}

// TestDecideOneLease: while renewals replace the lease back and forth
// between a slow one (1 token a second, a burst of 1) and a fast one
// (1,000 a second, a burst of 1,000), every decision made meanwhile is of
// one lease — its rate, its burst, a balance within that burst, and a
// promised Retry-After that lease's refill can keep — never parts of two.
// Run with -race.
func TestDecideOneLease(t *testing.T) {
	l := newLimiter(t)
	var clock atomic.Int64
	clock.Store(sec)
	slow, fast := quota.Tokens(1), quota.Tokens(1000)
	var stop atomic.Bool
	var wg sync.WaitGroup
	wg.Go(func() {
		defer stop.Store(true)
		for i := range 2000 {
			now := clock.Add(ms)
			req, _ := l.Request(now, "acme")
			nextID++
			g := quota.Grant{Lease: quota.Lease{ID: nextID, Tenant: "acme", Region: "eu", Epoch: 1, Rate: slow, Burst: slow},
				Seq: req.Seq, ValidFor: time.Hour, Margin: time.Second}
			if i%2 == 0 {
				g.Lease.Rate, g.Lease.Burst, g.Lease.Transfer = fast, fast, fast
			}
			if in := l.Install(now, g); !in.OK() {
				t.Errorf("step %d: %v", i, in.Outcome)
				return
			}
		}
	})
	var seen [2]atomic.Int64 // decisions of slow leases, of fast ones
	for range 2 {
		wg.Go(func() {
			for n := 0; !stop.Load() || n == 0; n++ {
				d := l.DecideAt(clock.Load(), "acme", 1+int64(n%3))
				if d.LeaseID == 0 {
					continue
				}
				want, limit := slow, time.Second // the slow lease: a token a second
				if d.Rate == fast {
					want, limit = fast, time.Millisecond
				}
				// A refusal's wait is that of its own lease's refill: a few
				// tokens' worth (a cost of 3, and a step of the installer's
				// clock, 1 ms, that the state's instant may be ahead of the
				// clock read: 4 ms seen under -race), never the slow
				// lease's second.
				if d.Rate != want || d.Burst != want || d.Remaining > d.Burst ||
					d.RetryKnown && d.RetryAfter > 5*limit {
					t.Errorf("lease %d: %+v: not one lease's decision", d.LeaseID, d)
					return
				}
				if d.Rate == fast {
					seen[1].Add(1)
				} else {
					seen[0].Add(1)
				}
			}
		})
	}
	wg.Wait()
	if seen[0].Load() == 0 || seen[1].Load() == 0 {
		t.Logf("decisions under the slow leases %d, the fast %d: the renewals outran the deciders", seen[0].Load(), seen[1].Load())
	}
}
