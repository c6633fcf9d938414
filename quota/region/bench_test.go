package region_test

import (
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/time/rate"

	"github.com/afloat/afloat/quota"
	"github.com/afloat/afloat/quota/region"
)

// The benchmarks take one token per operation from a lease (or limiter)
// with room to spare: the path every request takes while the tenant is
// within its quota. The peer is golang.org/x/time/rate's Limiter.Allow,
// the standard single-process token bucket, in the same run.

func leased(b *testing.B) *region.Limiter {
	l, err := region.New(region.DefaultConfig("eu", "acme"))
	if err != nil {
		b.Fatal(err)
	}
	now := l.Now()
	req, _ := l.Request(now, "acme")
	in := l.Install(now, quota.Grant{
		Lease: quota.Lease{ID: 1, Tenant: "acme", Region: "eu", Epoch: 1, Rate: 1e9 * quota.One, Burst: 1e9 * quota.One,
			Transfer: 1e9 * quota.One},
		Seq: req.Seq, ValidFor: time.Hour, Margin: time.Second,
	})
	if !in.OK() {
		b.Fatal(in.Outcome)
	}
	return l
}

func BenchmarkAllow(b *testing.B) {
	l := leased(b)
	b.ReportAllocs()
	for b.Loop() {
		if !l.Allow("acme", 1) {
			b.Fatal("refused")
		}
	}
}

func BenchmarkAllowParallel(b *testing.B) {
	l := leased(b)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if !l.Allow("acme", 1) {
				b.Fatal("refused")
			}
		}
	})
}

// AllowParallelOwnLoop is AllowParallel without RunParallel's
// bookkeeping: one plain loop per P over its share of b.N. It was written
// to rule out the harness — RunParallel's per-goroutine counters
// (testing.PB, 32 bytes, written on every iteration) may share a cache
// line — as the cause of AllowParallel's slow runs; it is slow in the
// same runs (docs/benchmarks.md).
func BenchmarkAllowParallelOwnLoop(b *testing.B) {
	l := leased(b)
	b.ReportAllocs()
	p := runtime.GOMAXPROCS(0)
	b.ResetTimer()
	var wg sync.WaitGroup
	for i := range p {
		n := b.N / p
		if i < b.N%p {
			n++
		}
		wg.Go(func() {
			for range n {
				if !l.Allow("acme", 1) {
					b.Error("refused")
					return
				}
			}
		})
	}
	wg.Wait()
}

// The refusal path: the quota is spent.
func BenchmarkAllowRefused(b *testing.B) {
	l, _ := region.New(region.DefaultConfig("eu", "acme"))
	b.ReportAllocs()
	for b.Loop() {
		if l.Allow("acme", 1) {
			b.Fatal("admitted without a lease")
		}
	}
}

// peer: x/time/rate with a rate and burst that never refuse (not rate.Inf,
// which skips the bucket).
func peer() *rate.Limiter { return rate.NewLimiter(1e9, 1e9) }

func BenchmarkPeerXTimeRateAllow(b *testing.B) {
	l := peer()
	b.ReportAllocs()
	for b.Loop() {
		if !l.Allow() {
			b.Fatal("refused")
		}
	}
}

func BenchmarkPeerXTimeRateAllowParallel(b *testing.B) {
	l := peer()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if !l.Allow() {
				b.Fatal("refused")
			}
		}
	})
}

// The core alone, on explicit time: what Allow costs beyond reading the
// clock.
func BenchmarkAllowAt(b *testing.B) {
	l := leased(b)
	now := l.Now()
	b.ReportAllocs()
	for b.Loop() {
		if !l.AllowAt(now, "acme", 1) {
			b.Fatal("refused")
		}
	}
}

func BenchmarkAllowAtParallel(b *testing.B) {
	l := leased(b)
	now := l.Now()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if !l.AllowAt(now, "acme", 1) {
				b.Fatal("refused")
			}
		}
	})
}

// The peer on explicit time too: AllowN(t, 1) with t read once.
func BenchmarkPeerXTimeRateAllowN(b *testing.B) {
	l := peer()
	now := time.Now()
	b.ReportAllocs()
	for b.Loop() {
		if !l.AllowN(now, 1) {
			b.Fatal("refused")
		}
	}
}

func BenchmarkPeerXTimeRateAllowNParallel(b *testing.B) {
	l := peer()
	now := time.Now()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if !l.AllowN(now, 1) {
				b.Fatal("refused")
			}
		}
	})
}

var sinkDuration time.Duration

// The floor of any Allow that reads the clock with the standard library:
// one monotonic reading (time.Now, which x/time/rate's Allow takes, reads
// the wall clock as well).
func BenchmarkClockSince(b *testing.B) {
	start := time.Now()
	for b.Loop() {
		sinkDuration += time.Since(start)
	}
}

func BenchmarkClockNow(b *testing.B) {
	var t time.Time
	for b.Loop() {
		t = time.Now()
	}
	sinkDuration += time.Duration(t.Nanosecond())
}

// The floor of any exact limiter that two cores share: every admission
// must change one word that both read, so the cache line that holds it
// moves between the cores on every call. SharedAddFloor is one atomic add
// on a shared counter; SharedCASFloor a load and compare-and-swap (what
// a bucket with a cap needs), both under RunParallel like AllowParallel.
func BenchmarkSharedAddFloor(b *testing.B) {
	var n atomic.Int64
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			n.Add(1)
		}
	})
}

func BenchmarkSharedCASFloor(b *testing.B) {
	var n atomic.Int64
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			for {
				v := n.Load()
				if n.CompareAndSwap(v, v+1) {
					break
				}
			}
		}
	})
}

// A front's whole decision for one request — admitted or not, the balance
// left, and for a refusal when to retry or that it never can be — on
// explicit time: admitted (a lease with room), refused under a valid
// lease (empty: the next refill is a promise), and refused without a
// lease (the retry policy); admitted under RunParallel too.
func BenchmarkDecision(b *testing.B) {
	empty := func(b *testing.B) *region.Limiter {
		l, err := region.New(region.DefaultConfig("eu", "acme"))
		if err != nil {
			b.Fatal(err)
		}
		req, _ := l.Request(0, "acme")
		if in := l.Install(0, quota.Grant{
			Lease: quota.Lease{ID: 1, Tenant: "acme", Region: "eu", Epoch: 1, Rate: quota.One, Burst: quota.One},
			Seq:   req.Seq, ValidFor: time.Hour, Margin: time.Second,
		}); !in.OK() {
			b.Fatal(in.Outcome)
		}
		return l
	}
	b.Run("admitted", func(b *testing.B) {
		l := leased(b)
		now := l.Now()
		b.ReportAllocs()
		var sum quota.Micro
		for b.Loop() {
			ok, rem, _ := decide(l, now, "acme", 1)
			if !ok {
				b.Fatal("refused")
			}
			sum += rem
		}
		sinkMicro = sum
	})
	b.Run("admitted-parallel", func(b *testing.B) {
		l := leased(b)
		now := l.Now()
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			var sum quota.Micro
			for pb.Next() {
				ok, rem, _ := decide(l, now, "acme", 1)
				if !ok {
					b.Fatal("refused")
				}
				sum += rem
			}
			sinkMicros.Add(int64(sum))
		})
	})
	b.Run("refused", func(b *testing.B) {
		l := empty(b)
		b.ReportAllocs()
		var sum time.Duration
		for b.Loop() {
			ok, _, retry := decide(l, 0, "acme", 1)
			if ok {
				b.Fatal("admitted from an empty bucket")
			}
			sum += retry
		}
		sinkDuration = sum
	})
	b.Run("refused-no-lease", func(b *testing.B) {
		l, _ := region.New(region.DefaultConfig("eu", "acme"))
		b.ReportAllocs()
		var sum time.Duration
		for b.Loop() {
			ok, _, retry := decide(l, 0, "acme", 1)
			if ok {
				b.Fatal("admitted without a lease")
			}
			sum += retry
		}
		sinkDuration = sum
	})
}

var (
	sinkMicro  quota.Micro
	sinkMicros atomic.Int64
)

// decide is a front's decision — one DecideAt — and returns whether the
// request was admitted, the balance left and, for a refusal, when to
// retry (−1 for never). (Before DecideAt, every front composed it from
// AllowAt, MaxCost, RetryAfter and Status, which took the tenant's lock:
// BenchmarkDecision at the commit that added it measures that path under
// the same names, docs/benchmarks.md.)
func decide(l *region.Limiter, now int64, tenant string, cost int64) (bool, quota.Micro, time.Duration) {
	d := l.DecideAt(now, tenant, cost)
	if d.Never {
		return false, d.Remaining, -1
	}
	return d.Allowed, d.Remaining, d.RetryAfter
}
