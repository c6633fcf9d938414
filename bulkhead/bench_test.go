package bulkhead_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	fsbulkhead "github.com/failsafe-go/failsafe-go/bulkhead"

	"github.com/afloat/afloat/bulkhead"
)

// The benchmarks acquire and release one permit per operation, with room
// to spare (limit 1,000): the path every request takes when the service is
// not overloaded. RunParallel runs it from GOMAXPROCS goroutines at once.

// floor is the least a concurrency limit can do: a counter bumped with a
// compare-and-swap if it is below the limit, and decremented on release.
type floor struct{ n atomic.Int64 }

func (f *floor) acquire(limit int64) bool {
	for {
		n := f.n.Load()
		if n >= limit {
			return false
		}
		if f.n.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

func (f *floor) release() { f.n.Add(-1) }

func BenchmarkAtomicFloor(b *testing.B) {
	var f floor
	b.ReportAllocs()
	for b.Loop() {
		if !f.acquire(1000) {
			b.Fatal("refused")
		}
		f.release()
	}
}

// callFloor is the same counter behind a function call, as any library's
// API is: the floor for an acquire and a release that are not inlined into
// the caller.
type callFloor struct{ floor }

//go:noinline
func (f *callFloor) Acquire(limit int64) bool { return f.acquire(limit) }

//go:noinline
func (f *callFloor) Release() { f.release() }

func BenchmarkAtomicFloorCall(b *testing.B) {
	var f callFloor
	b.ReportAllocs()
	for b.Loop() {
		if !f.Acquire(1000) {
			b.Fatal("refused")
		}
		f.Release()
	}
}

func BenchmarkAtomicFloorCallParallel(b *testing.B) {
	var f callFloor
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if !f.Acquire(1000) {
				b.Fatal("refused")
			}
			f.Release()
		}
	})
}

// completedFloor is the floor with the bulkhead's word: its release also
// counts a completion in the same word (inflight−1, completed+1 in one
// add), so the word never returns to a value it had, and a
// compare-and-swap fails whenever the other core acquired and released
// between its load and its swap. The bulkhead's fast path is this floor's
// instructions behind two calls.
type completedFloor struct{ n atomic.Uint64 }

func (f *completedFloor) acquire(limit uint64) bool {
	for {
		n := f.n.Load()
		if n&(1<<16-1) >= limit {
			return false
		}
		if f.n.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

func (f *completedFloor) release() { f.n.Add(1<<32 - 1) }

func BenchmarkAtomicFloorCompletedParallel(b *testing.B) {
	var f completedFloor
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if !f.acquire(1000) {
				b.Fatal("refused")
			}
			f.release()
		}
	})
}

func BenchmarkAtomicFloorParallel(b *testing.B) {
	var f floor
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if !f.acquire(1000) {
				b.Fatal("refused")
			}
			f.release()
		}
	})
}

func newBulkhead(b *testing.B, opts ...bulkhead.Option) *bulkhead.Bulkhead {
	bh, err := bulkhead.New(1000, append([]bulkhead.Option{bulkhead.WithQueue(100)}, opts...)...)
	if err != nil {
		b.Fatal(err)
	}
	return bh
}

func BenchmarkAcquireRelease(b *testing.B) { benchAcquireRelease(b, context.Background()) }

// benchAcquireRelease acquires and releases in a loop with ctx.
func benchAcquireRelease(b *testing.B, ctx context.Context) {
	bh := newBulkhead(b)
	b.ReportAllocs()
	for b.Loop() {
		p, err := bh.Acquire(ctx)
		if err != nil {
			b.Fatal(err)
		}
		p.Release()
	}
}

// A request's context is cancelable, as an HTTP server's is: Acquire's
// check that it is not done yet is an atomic load rather than a call that
// returns nil.
func BenchmarkAcquireReleaseCancelable(b *testing.B) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	benchAcquireRelease(b, ctx)
}

func BenchmarkAcquireReleaseParallel(b *testing.B) {
	bh := newBulkhead(b)
	ctx := context.Background()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			p, err := bh.Acquire(ctx)
			if err != nil {
				b.Fatal(err)
			}
			p.Release()
		}
	})
}

// The adaptive path also reads the clock twice and records the latency.
func BenchmarkAdaptiveAcquireRelease(b *testing.B) {
	bh := newBulkhead(b, bulkhead.WithAdaptive(bulkhead.AdaptiveConfig{Window: time.Second}))
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		p, err := bh.Acquire(ctx)
		if err != nil {
			b.Fatal(err)
		}
		p.Release()
	}
}

func BenchmarkAdaptiveAcquireReleaseParallel(b *testing.B) {
	bh := newBulkhead(b, bulkhead.WithAdaptive(bulkhead.AdaptiveConfig{Window: time.Second}))
	ctx := context.Background()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			p, err := bh.Acquire(ctx)
			if err != nil {
				b.Fatal(err)
			}
			p.Release()
		}
	})
}

// The peer: failsafe-go's bulkhead, the same operation.
func BenchmarkFailsafeAcquireRelease(b *testing.B) {
	bh := fsbulkhead.NewBuilder[any](1000).WithMaxWaitTime(time.Second).Build()
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if err := bh.AcquirePermit(ctx); err != nil {
			b.Fatal(err)
		}
		bh.ReleasePermit()
	}
}

func BenchmarkFailsafeAcquireReleaseParallel(b *testing.B) {
	bh := fsbulkhead.NewBuilder[any](1000).WithMaxWaitTime(time.Second).Build()
	ctx := context.Background()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := bh.AcquirePermit(ctx); err != nil {
				b.Fatal(err)
			}
			bh.ReleasePermit()
		}
	})
}
