package assignbench

import (
	"context"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/afloat/afloat/assign/assigntest"
)

// TestBenchAgainstRedisBenchmark is make bench-assign: afloat assign
// bench's runs (the same Run function) against redis-benchmark on a
// redis-server of its own, in the same run, round after round, and the
// median of each ratio. It is a benchmark, not a test: it runs only with
// AFLOAT_ASSIGN_BENCH=1, and asserts nothing about speed.
// AFLOAT_ASSIGN_BENCH_ROUNDS (default 5) and AFLOAT_ASSIGN_BENCH_DURATION
// (default 10s) change its length; AFLOAT_ASSIGN_BENCH_BUSY=1 runs both on a
// busy pool (Config.Busy: weights, cooldowns and rate limits on), and
// AFLOAT_ASSIGN_BENCH_BATCHES=0 unbatched only.
func TestBenchAgainstRedisBenchmark(t *testing.T) {
	if os.Getenv("AFLOAT_ASSIGN_BENCH") == "" {
		t.Skip("a benchmark: run it with make bench-assign (AFLOAT_ASSIGN_BENCH=1)")
	}
	rounds, _ := strconv.Atoi(os.Getenv("AFLOAT_ASSIGN_BENCH_ROUNDS"))
	if rounds <= 0 {
		rounds = 5
	}
	d, err := time.ParseDuration(os.Getenv("AFLOAT_ASSIGN_BENCH_DURATION"))
	if err != nil {
		d = 10 * time.Second
	}
	srv := assigntest.Start(t)
	cfg := DefaultConfig(srv.URL)
	cfg.Duration, cfg.Batches, cfg.Peer = d, []int{0, 16}, true
	cfg.Busy = os.Getenv("AFLOAT_ASSIGN_BENCH_BUSY") != ""
	if batches := os.Getenv("AFLOAT_ASSIGN_BENCH_BATCHES"); batches == "0" {
		cfg.Batches = []int{0}
	}
	ratios := map[int][]float64{}
	for round := range rounds {
		rs, err := Run(context.Background(), cfg, nil)
		if err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		Write(&b, rs)
		t.Logf("round %d of %d (redis-server %s):\n%s", round+1, rounds, srv.Addr, b.String())
		for i := 0; i+1 < len(rs); i += 2 {
			ratios[rs[i].Batch] = append(ratios[rs[i].Batch], rs[i].PicksPerS/rs[i+1].PicksPerS)
		}
	}
	for _, batch := range cfg.Batches {
		r := ratios[batch]
		slices.Sort(r)
		t.Logf("batch %d: afloat ÷ redis-benchmark, median of %d rounds %.2f× (min %.2f×, max %.2f×)", batch, len(r), r[len(r)/2], r[0], r[len(r)-1])
	}
}
