// Package fastclock is a monotonic clock that costs a third of
// time.Since to read where the CPU's time-stamp counter (TSC) can stand in
// for the kernel's clock: the quota region limiter reads it on every
// request, and on the machines afloat runs on the monotonic clock alone
// was 36 ns of a 50 ns budget.
//
// It is the technique of the kernel's vDSO, done in user space: Linux's
// CLOCK_MONOTONIC, when its clocksource is "tsc", is the TSC scaled by a
// rate the kernel keeps (with NTP's corrections). Go reaches it through a
// switch to the system stack; here the TSC is read with one instruction
// and scaled by a rate measured against time.Since over the last Interval
// (100 ms). Every Interval the first reading re-anchors the line to the
// monotonic clock, so errors do not accumulate, and checks it: a line
// found more than MaxError (50 µs) from the monotonic clock, a TSC that
// went backwards or a rate no CPU has makes the clock read the monotonic
// clock for good. The same fallback is taken from the start when the
// kernel's clocksource is not "tsc" (it picks the TSC only when it runs at
// a constant rate in step across CPUs, and drops it when its watchdog sees
// otherwise), when reading the TSC is not clearly cheaper (a hypervisor
// that traps it), and on other architectures. Source says which it reads.
//
// Readings are within MaxError of the monotonic clock's; they may step
// back by up to that much when the line is re-anchored, so callers that
// need order take the max of what they have seen. The first Interval
// after start reads the monotonic clock while the rate is measured.
// Prior art: fastant and minstant (Rust), OCaml Core's Time_stamp_counter.
package fastclock
