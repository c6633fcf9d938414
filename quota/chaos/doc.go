// Package chaos proves the global quota under faults. It runs the real
// coordinator (quota/coordinator) and three real region limiters
// (quota/region) — not copies — in virtual time, on a discrete-event
// simulation where every node has its own clock and every message its own
// fate, and the checker of package quota/eventlog reads only the event log
// the run writes and verifies every promise: admissions within R·Δ + B
// (+ regions·E in best-effort mode) over every window, the conservation
// invariants at every instant, no share granted twice, and nothing
// admitted without a lease in hard mode.
//
// From a seed, Draw chooses a schedule — traffic segments and shifts,
// delays, loss and duplication, partitions, coordinator crashes and
// pauses with failover, clock offsets and drift — and a run replays
// exactly from its seed; a test may script a Schedule instead.
//
//	sum, err := chaos.Run(chaos.Config{Seed: 7, Duration: 10 * time.Minute})
//	if sum.Violations > 0 { ... }                   // sum.Messages says which
//	many, err := chaos.RunMany(chaos.Config{}, 1, 10000, 0) // every seed, in parallel
//	sum, err = chaos.RunSeries(os.Stdout, cfg, time.Second) // offered and admitted, as CSV
//
// A run's log goes to Config.Log as it happens, in virtual time and in
// the format the real processes write theirs (package eventlog), so the
// checker and afloat quota check read either alike; Timeline and Series
// read it for drawing. The mutation checks plant each classic mistake —
// renewals that refill, returns reused before confirmation, no epoch
// fencing, the full R to every region, token caches over the burst — and
// show the checker flags every one (docs/quota/design.md, "The chaos
// harness").
package chaos
