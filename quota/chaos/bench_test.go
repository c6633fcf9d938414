//go:build unix

package chaos

import (
	"syscall"
	"testing"
	"time"
)

// BenchmarkRun is a three-minute run with every fault on, over seeds 1 to
// 20 in turn: the harness, its event queue and the checker. Besides the
// wall time it reports the process's CPU time per run (cpu-ns/op, the
// collector's included), which other work on a shared machine inflates
// far less.
func BenchmarkRun(b *testing.B) {
	cpu := func() time.Duration {
		var ru syscall.Rusage
		if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
			b.Fatal(err)
		}
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	start, seed := cpu(), uint32(0)
	for b.Loop() {
		seed = seed%20 + 1
		if _, err := Run(Config{Seed: seed, Duration: 3 * time.Minute}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(cpu()-start)/float64(b.N), "cpu-ns/op")
}
