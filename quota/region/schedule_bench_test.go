package region

import (
	"math/rand/v2"
	"testing"
)

// BenchmarkScheduleHeap: Run's timers heap at 100,000 tenants, each
// bucket allocated apart as a region's are: a tenant's look taken (pop)
// and its next one scheduled 4 to 6 s on (push), as its renewals come
// round — the heap work of one renewal. Reported per renewal.
func BenchmarkScheduleHeap(b *testing.B) {
	const tenants = 100_000
	rng := rand.New(rand.NewPCG(1, 2))
	h := bucketHeap{which: timersHeap}
	for range tenants {
		bk := &bucket{}
		bk.run.at = rng.Int64N(5e9)
		h.push(bk)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		bk := h.pop()
		bk.run.at += 4e9 + rng.Int64N(2e9)
		h.push(bk)
	}
}
