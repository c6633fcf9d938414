package bulkhead

import (
	"context"
	"math"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// A controllerStep is one window given to the controller and what it must
// do with it. The expected values are worked out by hand from the rules in
// adaptive.go; the comments show the arithmetic.
type controllerStep struct {
	w        window
	limit    int           // the limit step returns
	baseline time.Duration // the baseline after the step
	phase    phase
}

// win is a window of 25 requests over 250 ms — a throughput of exactly
// 100 a second — with the given mean time inside.
func win(rtt time.Duration, binding bool, inflight int) window {
	return window{samples: 25, duration: 250 * time.Millisecond, meanRTT: rtt, binding: binding, inflight: inflight}
}

func runController(t *testing.T, initial int, steps []controllerStep) {
	t.Helper()
	a, err := newAdaptive(AdaptiveConfig{Max: 1000}, initial)
	if err != nil {
		t.Fatal(err)
	}
	c := &a.ctrl
	for i, s := range steps {
		got := c.step(s.w)
		if got != s.limit {
			t.Errorf("step %d: step(%+v) = %d, want %d (limit %v)", i, s.w, got, s.limit, c.limit)
		}
		if b := time.Duration(math.Round(c.baseline * 1e9)); b != s.baseline {
			t.Errorf("step %d: baseline %v, want %v", i, b, s.baseline)
		}
		if c.phase != s.phase {
			t.Errorf("step %d: phase %d, want %d", i, c.phase, s.phase)
		}
	}
}

const (
	ms125 = 125 * time.Millisecond
	ms200 = 200 * time.Millisecond
)

// TestControllerGrowProbeCut walks the controller through its life with
// the default tolerance (0.1): growth while binding at the baseline, a
// probe that did not help and is undone, a cut for congestion to Little's
// law that helped, and one that did not, which raises the baseline.
func TestControllerGrowProbeCut(t *testing.T) {
	runController(t, 20, []controllerStep{
		// 0: an empty window changes nothing, not even the baseline.
		{window{}, 20, 0, steady},
		// 1: the first window sets the baseline (125 ms); the limit binds
		// nobody, so it stays.
		{win(ms125, false, 10), 20, ms125, steady},
		// 2–5: binding at the baseline with no knee found: grow by a
		// quarter. 20 → 25 → 31.25 → 39.0625 → 48.828125; the countdown to
		// a probe goes 5 → 4 → 3 → 2 → 1.
		{win(ms125, true, 20), 25, ms125, steady},
		{win(ms125, true, 25), 31, ms125, steady},
		{win(ms125, true, 31), 39, ms125, steady},
		{win(ms125, true, 39), 49, ms125, steady},
		// 6: the countdown reaches 0: probe 10 % down, 48.828125 × 0.9 =
		// 43.9453125, and drain.
		{win(ms125, true, 49), 44, ms125, draining},
		// 7: 50 still inside, more than 44: still draining.
		{win(ms125, true, 50), 44, ms125, draining},
		// 8: 44 inside: drained; settle for max(2 × 125 ms, 125 ms) = 250 ms.
		{win(ms125, true, 44), 44, ms125, settling},
		// 9: one 250 ms window settles it; the check begins.
		{win(ms125, true, 44), 44, ms125, checking},
		// 10–12: three windows at 125 ms, no faster than the 125 ms before
		// the probe: the probe is undone (48.828125 → 49).
		{win(ms125, true, 44), 44, ms125, checking},
		{win(ms125, true, 44), 44, ms125, checking},
		{win(ms125, true, 44), 49, ms125, steady},
		// 13: still no knee: grow by a quarter, 48.828125 + 12.20703125 =
		// 61.03515625.
		{win(ms125, true, 49), 61, ms125, steady},
		// 14: 200 ms: smoothed (125 + 200)/2 = 162.5 ms, 1.3 × the baseline,
		// over 1 + 2 × 0.1: cut at once to throughput × baseline = 100/s ×
		// 0.125 s = 12.5 (more than a 10 % step), which rounds to 13.
		{win(ms200, true, 61), 13, ms125, draining},
		// 15: 13 inside: drained. Latency before the cut, smoothed:
		// 162.5 + (200 − 162.5)/2 = 181.25 ms; settle for 250 ms.
		{win(ms200, true, 13), 13, ms125, settling},
		{win(ms200, true, 13), 13, ms125, checking},
		// 17–19: back at 125 ms, under 181.25 × (1 − 0.06): the cut helped,
		// the knee is 12.5. The last window also counts as a steady one:
		// binding at the baseline, near the knee, so grow by
		// max(1, √12.5/4) = 1: 13.5, which rounds to 14.
		{win(ms125, true, 13), 13, ms125, checking},
		{win(ms125, true, 13), 13, ms125, checking},
		{win(ms125, true, 13), 14, ms125, steady},
		// 20: 200 ms again: 162.5 ms smoothed, cut to min(12.5, 13.5 × 0.9
		// = 12.15) = 12.15.
		{win(ms200, true, 14), 12, ms125, draining},
		{win(ms200, true, 12), 12, ms125, settling},
		{win(ms200, true, 12), 12, ms125, checking},
		// 23–25: still 200 ms, not faster than 181.25 ms × 0.94: the latency
		// is the service's own and becomes the baseline.
		{win(ms200, true, 12), 12, ms125, checking},
		{win(ms200, true, 12), 12, ms125, checking},
		{win(ms200, true, 12), 12, ms200, steady},
		// 26: binding at the new baseline, near the knee: 12.15 + 1 = 13.15.
		{win(ms200, true, 12), 13, ms200, steady},
		// 27: not binding: nothing changes.
		{win(ms200, false, 5), 13, ms200, steady},
	})
}

// TestControllerDoesNotCutHealthyTraffic: a limit that binds nobody is
// cut only for a latency over the baseline by more than twice the
// tolerance; a persistent smaller rise cuts only a limit that binds.
func TestControllerDoesNotCutHealthyTraffic(t *testing.T) {
	const (
		ms1625  = 162500 * time.Microsecond
		ms14375 = 143750 * time.Microsecond
		ms250   = 250 * time.Millisecond
	)
	for _, tc := range []struct {
		name  string
		steps []controllerStep
	}{
		{"large rise, not binding", []controllerStep{
			{win(ms125, false, 10), 20, ms125, steady},
			// (125 + 162.5)/2 = 143.75 ms: 1.15 × the baseline, over the
			// tolerance once, not binding: no cut.
			{win(ms1625, false, 10), 20, ms125, steady},
			// 143.75 ms again: over twice in a row, but within 1 + 2 × 0.1 and
			// not binding: no cut.
			{win(ms14375, false, 10), 20, ms125, steady},
			// (143.75 + 250)/2 = 196.875 ms: 1.575 × the baseline: cut even
			// though it binds nobody, to 100/s × 0.125 s = 12.5 → 13.
			{win(ms250, false, 10), 13, ms125, draining},
		}},
		{"small rise, binding", []controllerStep{
			{win(ms125, false, 10), 20, ms125, steady},
			{win(ms1625, false, 10), 20, ms125, steady},
			// Over the tolerance for the second time in a row, and binding:
			// cut to 12.5 → 13.
			{win(ms14375, true, 20), 13, ms125, draining},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) { runController(t, 20, tc.steps) })
	}
}

// TestSetLimitEndsACut: SetLimit in the middle of a probe's check must
// stand. The check compares latency before and after a cut that the
// caller has since overridden; finishing it would undo the probe by
// restoring the limit from before the probe, a limit the caller replaced.
// Driven through a real bulkhead on a virtual clock: one request per
// window, each exactly 125 ms inside.
func TestSetLimitEndsACut(t *testing.T) {
	b, c := newVirtual(t, 20, WithAdaptive(AdaptiveConfig{Max: 1000, Window: ms125, MinSamples: 1}))
	window := func(binding bool) {
		p, ok := b.TryAcquire()
		if !ok {
			t.Fatal("TryAcquire refused with room inside")
		}
		if binding {
			b.adaptive.markBinding()
		}
		c.Advance(ms125)
		p.Release() // closes the window: one sample, 125 ms long
	}
	// The first window sets the baseline; five binding ones grow the limit
	// 20 → 25 → 31 → 39 → 49 and then probe 10 % down, to 44. Nobody is
	// inside, so it is drained at once; 250 ms settle it, and the check
	// begins.
	window(false)
	for range 5 {
		window(true)
	}
	if got := b.Limit(); got != 44 {
		t.Fatalf("after the probe: limit %d, want 44", got)
	}
	window(true) // drained
	window(true) // settled (125 ms of 250)
	window(true) // settled; checking
	window(true) // the first window of the check
	if err := b.SetLimit(30); err != nil {
		t.Fatal(err)
	}
	for i := range 4 {
		window(false) // at the baseline, binding nobody: nothing to change
		if got := b.Limit(); got != 30 {
			t.Fatalf("step %d: limit %d after SetLimit(30), want 30", i, got)
		}
	}
}

// tickClock advances one tick at every reading, so a request that reads
// it when granted and when released has spent exactly one tick inside,
// whatever other goroutines do (they must not read it).
type tickClock struct{ n atomic.Int64 }

const tick = time.Millisecond

func (c *tickClock) Now() time.Time { return time.Unix(0, 0).Add(time.Duration(c.n.Add(1)) * tick) }

func (c *tickClock) AfterFunc(time.Duration, func()) Timer {
	panic("tickClock: no timers in this test")
}

// TestSetLimitRacesWindowClose (run with -race): in each round one
// goroutine acquires and releases a permit — the release closes a window —
// while another sets the limit, to 10 and 20 in turn. Every window is one
// request at the baseline latency binding nobody, so the controller never
// moves the limit itself: once both are done, the limit must be the one
// just set. A window close that stepped the controller before the call
// and stored its result after it would have put the previous limit back.
func TestSetLimitRacesWindowClose(t *testing.T) {
	const rounds = 30000
	b, err := New(10, WithClock(&tickClock{}), WithAdaptive(AdaptiveConfig{Min: 1, Max: 100, Window: tick, MinSamples: 1}))
	if err != nil {
		t.Fatal(err)
	}
	for i := range rounds {
		n := 10 + 10*(i%2)
		start := make(chan struct{})
		var wg sync.WaitGroup
		wg.Go(func() {
			<-start
			p, err := b.Acquire(context.Background())
			if err != nil {
				t.Errorf("step %d: Acquire: %v", i, err)
			}
			p.Release()
		})
		wg.Go(func() {
			<-start
			if err := b.SetLimit(n); err != nil {
				t.Errorf("step %d: SetLimit(%d): %v", i, n, err)
			}
		})
		close(start)
		wg.Wait()
		if got := b.Limit(); got != n {
			t.Fatalf("step %d: limit %d after SetLimit(%d) and a window close, want %d", i, got, n, n)
		}
	}
	if st := b.Stats(); st.Completed != rounds {
		t.Fatalf("stats %+v: want %d requests", st, rounds)
	}
}
