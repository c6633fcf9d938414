package fastclock

import (
	"sync/atomic"
	"testing"
	"time"
)

var sink atomic.Int64

// Now against time.Since, the monotonic reading it stands in for, on one
// goroutine and on all.
func BenchmarkNow(b *testing.B) {
	var s int64
	for b.Loop() {
		s += Now()
	}
	sink.Add(s)
}

func BenchmarkNowParallel(b *testing.B) {
	b.RunParallel(func(pb *testing.PB) {
		var s int64
		for pb.Next() {
			s += Now()
		}
		sink.Add(s)
	})
}

var origin = time.Now()

func BenchmarkTimeSince(b *testing.B) {
	var s int64
	for b.Loop() {
		s += int64(time.Since(origin))
	}
	sink.Add(s)
}

func BenchmarkTimeSinceParallel(b *testing.B) {
	b.RunParallel(func(pb *testing.PB) {
		var s int64
		for pb.Next() {
			s += int64(time.Since(origin))
		}
		sink.Add(s)
	})
}
