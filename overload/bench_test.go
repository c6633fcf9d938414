//go:build unix

package overload

import (
	"syscall"
	"testing"
	"time"
)

// BenchmarkWorldCup is a whole World Cup run, the lab's costliest. With no
// limit the most tries wait for their deadline at once, so the cost of the
// run's heaps shows; with the seed's winning bulkhead, the bulkhead's and
// the virtual clock's does. Besides the wall time it reports the process's
// CPU time per run (cpu-ns/op, the collector's included), which other work
// on a shared machine inflates far less.
func BenchmarkWorldCup(b *testing.B) {
	for _, c := range []Config{
		{Profile: "worldcup", Seed: 1},
		{Profile: "worldcup", Seed: 1, Inside: 100, Outside: 100},
	} {
		b.Run(c.Label(), func(b *testing.B) {
			start := cpuTime(b)
			for b.Loop() {
				if _, err := Run(c); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(cpuTime(b)-start)/float64(b.N), "cpu-ns/op")
		})
	}
}

// cpuTime returns the CPU time the process has used, user and system.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
