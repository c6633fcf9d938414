package live_test

import (
	"os"
	"time"

	"github.com/afloat/afloat/overload/live"
)

// A report from a machine too busy to measure: the server had half of its
// core while it calibrated for the first protection, which ended the
// comparison there. WriteReport says so in plain words, with what went
// wrong and what to do, instead of figures.
func ExampleWriteReport() {
	cal := live.Calibration{CPUShare: 0.48, NoLoadP50: 21 * time.Millisecond, NoLoadP99: 40 * time.Millisecond, Capacity: 45}
	rep := live.Report{Cores: 1, Work: 10 * time.Millisecond, Deadline: 100 * time.Millisecond, StoppedEarly: true, Modes: []live.ModeReport{{
		Mode: "afloat-fixed", Calibration: cal,
		Attempts: []live.Attempt{{Calibration: cal, Checks: []live.Check{
			{Name: "cpu_share", Value: 0.48, Min: 0.85, Max: 1.05},
			{Name: "capacity_vs_work", Value: 0.45, Min: 0.7, Max: 1.05},
		}}},
	}}}
	live.WriteReport(os.Stdout, rep)
	// Output:
	// server: 1 core, 10ms of CPU a request; clients give up after 100ms
	//   afloat's bulkhead, fixed limit:    capacity 45 requests a second, unloaded p50 21ms, p99 40ms, server's share of its core 48 %; measured once, checks FAILED
	//
	// TOO BUSY: this machine was too busy to measure the server, so the comparison stopped at the first
	// measurement that failed and shows no figures. What went wrong:
	//   afloat's bulkhead, fixed limit: the server had 48 % of its processor core while it was being measured; it needs at least 85 %, so another program was using that core
	//   afloat's bulkhead, fixed limit: the server's capacity came out at 45 % of what one core can do; expected 70 % to 105 %
	// What to do: wait until nothing else runs on this machine — builds, tests, other programs —
	// and run the comparison again.
}

// A soak prints each sample as it comes, one line each.
func ExampleWriteSoakSample() {
	live.WriteSoakSample(os.Stdout, live.SoakSample{At: 20 * time.Second, HeapInuse: 3_250_000, Goroutines: 61, Good: 9_800, Rejected: 88_000})
	// Output:
	//     20.0 s  heap    3.25 MB     61 goroutines      9800 answered     88000 refused
}
