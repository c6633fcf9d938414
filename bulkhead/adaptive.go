package bulkhead

import (
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"
)

// AdaptiveConfig tunes the adaptive limit. The zero value takes the
// defaults given on each field.
//
// The limit follows Little's law. Every window the bulkhead measures the
// mean time a request spends inside (its latency) and how many requests
// finish per second (its throughput), and keeps a baseline: the latency
// with nobody queueing inside the service. Then:
//
//   - latency over baseline × (1 + Tolerance) in two windows in a row (or
//     over baseline × (1 + 2·Tolerance) in one) means requests queue inside
//     the service: the limit drops to throughput × baseline, the
//     concurrency that carries today's throughput at the baseline latency
//     — under processor sharing, exactly the service's knee;
//   - latency within baseline × (1 + Tolerance/2) while the limit turned
//     requests away (it queued or refused some) means room to grow: the
//     limit rises by √limit/2;
//   - otherwise, and whenever the limit is not what holds requests back,
//     it stays: no creep while idle, and no probe that refuses healthy
//     traffic to measure the baseline.
//
// The baseline moves down smoothly with faster windows and never up with
// slower ones — sustained overload cannot raise it and let the limit
// creep. It is reset upwards only when the evidence says the latency is
// not the limit's doing: after a cut, once the requests admitted under the
// old limit have drained, a window that is not faster than before the cut
// means the service itself got slower, and its latency becomes the
// baseline. docs/bulkhead.md gives the reasoning and the tests that hold
// the controller to it.
type AdaptiveConfig struct {
	Min        int           // lowest limit; default 1
	Max        int           // highest limit; default MaxLimit
	Window     time.Duration // shortest measurement window; default 100ms
	MinSamples int           // fewest requests per window; default 50
	Tolerance  float64       // latency over the baseline that counts as queueing; default 0.1
}

func (c AdaptiveConfig) withDefaults() AdaptiveConfig {
	if c.Min == 0 {
		c.Min = 1
	}
	if c.Max == 0 {
		c.Max = MaxLimit
	}
	if c.Window == 0 {
		c.Window = 100 * time.Millisecond
	}
	if c.MinSamples == 0 {
		c.MinSamples = 50
	}
	if c.Tolerance == 0 {
		c.Tolerance = 0.1
	}
	return c
}

func (c AdaptiveConfig) validate(initial int) error {
	switch {
	case c.Min < 1 || c.Min > MaxLimit:
		return fmt.Errorf("%w: adaptive min %d: want 1 to %d", ErrConfig, c.Min, MaxLimit)
	case c.Max < c.Min || c.Max > MaxLimit:
		return fmt.Errorf("%w: adaptive max %d: want %d (min) to %d", ErrConfig, c.Max, c.Min, MaxLimit)
	case initial < c.Min || initial > c.Max:
		return fmt.Errorf("%w: initial limit %d: want between the adaptive min %d and max %d", ErrConfig, initial, c.Min, c.Max)
	case c.Window <= 0:
		return fmt.Errorf("%w: adaptive window %v: want a positive duration", ErrConfig, c.Window)
	case c.MinSamples < 1 || c.MinSamples > maxSamples/2:
		return fmt.Errorf("%w: adaptive min samples %d: want 1 to %d", ErrConfig, c.MinSamples, maxSamples/2)
	case !(c.Tolerance > 0 && c.Tolerance <= 1):
		return fmt.Errorf("%w: adaptive tolerance %v: want more than 0, at most 1", ErrConfig, c.Tolerance)
	}
	return nil
}

// window is what one measurement window saw.
type window struct {
	samples  int
	duration time.Duration
	meanRTT  time.Duration // mean time inside
	binding  bool          // the limit queued or refused someone
	inflight int           // requests inside at the window's end
}

// controller is the adaptive limit's decision, a pure function of the
// windows it is given: it steps on explicit time, so tests and models can
// drive it without a clock.
type controller struct {
	cfg      AdaptiveConfig
	limit    float64
	baseline float64 // seconds; 0 until the first window
	over     int     // consecutive windows over tolerance
	phase    phase
	before   float64 // latency in the window that caused the last cut
}

type phase int

const (
	steady   phase = iota
	draining       // after a cut: waiting for the inside to come down to the new limit
	checking       // the next window shows whether the cut helped
)

// Smoothing of the baseline towards a faster window, and the speed-up a
// cut must bring for the latency to count as the limit's doing.
const (
	baselineGain = 0.25
	cutHelped    = 0.05
)

func (c *controller) step(w window) int {
	if w.samples == 0 || w.duration <= 0 {
		return int(c.limit)
	}
	r := w.meanRTT.Seconds()
	x := float64(w.samples) / w.duration.Seconds()
	switch {
	case c.baseline == 0:
		c.baseline = r
	case r < c.baseline:
		c.baseline += (r - c.baseline) * baselineGain
	}
	switch c.phase {
	case draining:
		if w.inflight <= int(c.limit) {
			c.phase = checking
		}
	case checking:
		if r >= c.before*(1-cutHelped) {
			c.baseline = r // the cut did not help: the service itself got slower
		}
		c.phase = steady
	}

	tol := c.cfg.Tolerance
	ratio := r / c.baseline
	switch {
	case ratio > 1+tol:
		c.over++
		if c.over >= 2 || ratio > 1+2*tol {
			c.over = 0
			target := math.Max(float64(c.cfg.Min), x*c.baseline)
			if target < c.limit*0.99 {
				c.limit = target
				c.phase, c.before = draining, r
			}
		}
	default:
		c.over = 0
		if w.binding && ratio <= 1+tol/2 && c.phase == steady {
			c.limit += math.Max(1, math.Sqrt(c.limit)/2)
		}
	}
	c.limit = math.Min(float64(c.cfg.Max), math.Max(float64(c.cfg.Min), c.limit))
	return int(math.Round(c.limit))
}

// The per-window latency sum and count share one word, so recording a
// request is one atomic add: the count in the top 20 bits, the sum of the
// latencies in microseconds in the low 44 (about 200 days of latency).
const (
	sumBits    = 44
	sumMask    = 1<<sumBits - 1
	maxSamples = 1<<(64-sumBits) - 1
)

// adaptive gathers the windows of a bulkhead and steps its controller.
type adaptive struct {
	cfg     AdaptiveConfig
	acc     atomic.Uint64 // count<<44 | sum of µs
	binding atomic.Bool
	start   atomic.Int64 // window start, since the bulkhead's epoch
	closing atomic.Bool

	mu   sync.Mutex
	ctrl controller
}

func newAdaptive(cfg AdaptiveConfig, initial int) (*adaptive, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(initial); err != nil {
		return nil, err
	}
	return &adaptive{cfg: cfg, ctrl: controller{cfg: cfg, limit: float64(initial)}}, nil
}

func (a *adaptive) markBinding() {
	if !a.binding.Load() {
		a.binding.Store(true)
	}
}

// sample records one request's time inside and closes the window when it
// is long and full enough. The one releaser that closes it steps the
// controller; the others only add.
func (a *adaptive) sample(b *Bulkhead, granted time.Duration) {
	now := b.since()
	us := (now - granted).Microseconds()
	if us < 0 {
		us = 0
	}
	acc := a.acc.Add(1<<sumBits | uint64(us)&sumMask)
	n := int(acc >> sumBits)
	elapsed := now - time.Duration(a.start.Load())
	full := n >= a.cfg.MinSamples && elapsed >= a.cfg.Window
	// Close a window that holds too much for its counters, and one that
	// lingers at low traffic.
	if full || n >= maxSamples/2 || acc&sumMask >= sumMask/2 || (elapsed >= 50*a.cfg.Window && n > 0) {
		a.close(b, now)
	}
}

func (a *adaptive) close(b *Bulkhead, now time.Duration) {
	if !a.closing.CompareAndSwap(false, true) {
		return
	}
	acc := a.acc.Swap(0)
	start := a.start.Swap(int64(now))
	binding := a.binding.Swap(false)
	n := int(acc >> sumBits)
	w := window{
		samples:  n,
		duration: now - time.Duration(start),
		binding:  binding,
		inflight: int(b.state.Load() & inflightMask),
	}
	if n > 0 {
		w.meanRTT = time.Duration(acc&sumMask/uint64(n)) * time.Microsecond
	}
	a.mu.Lock()
	limit := a.ctrl.step(w)
	a.mu.Unlock()
	a.closing.Store(false)
	if limit != b.Limit() {
		b.setLimit(limit)
	}
}

// Baseline returns the adaptive limit's current estimate of the latency
// with nobody queueing inside, and false for a fixed limit.
func (b *Bulkhead) Baseline() (time.Duration, bool) {
	if b.adaptive == nil {
		return 0, false
	}
	b.adaptive.mu.Lock()
	defer b.adaptive.mu.Unlock()
	return time.Duration(b.adaptive.ctrl.baseline * float64(time.Second)), true
}
