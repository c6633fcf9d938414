package assignbench_test

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/afloat/afloat/assign"
	"github.com/afloat/afloat/assign/assignbench"
)

// A configuration is checked before anything connects; its errors name the
// field and the allowed range.
func ExampleConfig_Validate() {
	cfg := assignbench.DefaultConfig("redis://127.0.0.1:6379")
	fmt.Println(cfg.Validate())
	cfg.Workers = 0
	err := cfg.Validate()
	fmt.Println(errors.Is(err, assign.ErrInvalid), err)
	// Output:
	// <nil>
	// true assign: invalid argument: workers 0: want 1 to 10000
}

// Write prints each redis-benchmark run after the afloat run it follows,
// with afloat's throughput divided by its peer's.
func ExampleWrite() {
	assignbench.Write(os.Stdout, []assignbench.Result{
		{Runner: "afloat", Workers: 50, Batch: 16, Picks: 1_200_000, PicksPerS: 120_000,
			P50: 6 * time.Millisecond, P99: 9 * time.Millisecond, Spread: 1, TotalCount: 1_200_000},
		{Runner: "redis-benchmark", Workers: 50, Batch: 16, Picks: 1_200_000, PicksPerS: 100_000,
			P50: 7 * time.Millisecond, P99: 11 * time.Millisecond, Spread: 1, TotalCount: 2_400_000},
	})
	// Output:
	// runner           workers  batch  picks    errors  picks/s  p50  p99   max−min  afloat ÷ peer
	// afloat           50       16     1200000  0       120000   6ms  9ms   1
	// redis-benchmark  50       16     1200000  0       100000   7ms  11ms  1        1.20×
}
