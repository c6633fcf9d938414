// Package assignbench measures least-used assignment's throughput on a
// real Redis: afloat assign bench and make bench-assign. Workers pick from
// a pool through package assign for a while, one pick a call or in
// batches; then, with Config.Peer, redis-benchmark runs the very same pick
// script by SHA on the same server and pool, as many picks, so that each
// afloat run has its peer measured in the same run (docs/benchmarks.md).
//
// It lives apart from package assign because it executes redis-benchmark:
// importing assign imports no process code.
//
//	cfg := assignbench.DefaultConfig("redis://127.0.0.1:6379")
//	cfg.Batches, cfg.Peer = []int{0, 16}, true
//	rs, err := assignbench.Run(ctx, cfg, nil)
//	assignbench.Write(os.Stdout, rs)
//
// After each run the pool's counts must have grown by exactly the picks
// that succeeded, or Run fails: a bench that lost or doubled picks
// measures nothing.
package assignbench
