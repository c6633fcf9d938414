package live_test

import (
	"os"
	"time"

	"github.com/afloat/afloat/overload/live"
)

// A report from a machine too busy to measure: the server had half of its
// core while it calibrated. WriteReport says so and prints the failed
// checks instead of figures.
func ExampleWriteReport() {
	cal := live.Calibration{CPUShare: 0.48, NoLoadP50: 21 * time.Millisecond, NoLoadP99: 40 * time.Millisecond, Capacity: 45}
	rep := live.Report{Cores: 1, Work: 10 * time.Millisecond, Deadline: 100 * time.Millisecond, Modes: []live.ModeReport{{
		Mode: "afloat-fixed", Calibration: cal,
		Attempts: []live.Attempt{{Calibration: cal, Checks: []live.Check{
			{Name: "cpu_share", Value: 0.48, Min: 0.85, Max: 1.05},
			{Name: "capacity_vs_work", Value: 0.45, Min: 0.7, Max: 1.05},
		}}},
	}}}
	live.WriteReport(os.Stdout, rep)
	// Output:
	// server: 1 core, 10ms of CPU a request; clients give up after 100ms
	//   afloat-fixed     capacity 45 req/s, no-load p50 21ms, p99 40ms, server's share of its core 48 %; 1 attempt(s), checks FAILED
	//
	// UNRELIABLE: the machine was too busy to give a meaningful answer (another process took the server's core,
	// or the load generator's); no figures are shown. Run it again on an idle machine. Failed checks:
	//   afloat-fixed: cpu_share: 0.48, want 0.85 to 1.05
	//   afloat-fixed: capacity_vs_work: 0.45, want 0.7 to 1.05
}

// A soak prints each sample as it comes, one line each.
func ExampleWriteSoakSample() {
	live.WriteSoakSample(os.Stdout, live.SoakSample{At: 20 * time.Second, HeapInuse: 3_250_000, Goroutines: 61, Good: 9_800, Rejected: 88_000})
	// Output:
	//     20.0 s  heap    3.25 MB     61 goroutines      9800 answered     88000 refused
}
