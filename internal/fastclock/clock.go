package fastclock

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"math/bits"
	"sync/atomic"
	"time"
)

const (
	// MaxError bounds how far a reading may be from the monotonic clock's
	// at the same instant. Each re-anchoring checks it: a clock found
	// further off reads the monotonic clock from then on.
	MaxError = 50 * time.Microsecond
	// Interval is how long one anchor serves: the first reading after it
	// re-anchors the line to the monotonic clock. Between anchors the error
	// grows with the difference between the TSC's rate measured over the
	// last interval and the monotonic clock's now — a few ppm in practice,
	// so a microsecond or less.
	Interval = 100 * time.Millisecond
)

// Errors that make a clock fall back to the monotonic clock.
var (
	ErrBackwards = errors.New("fastclock: the TSC went backwards")
	ErrDisagree  = errors.New("fastclock: the TSC and the monotonic clock disagree")
	ErrRate      = errors.New("fastclock: implausible TSC rate")
)

type mode uint8

const (
	calibrating mode = iota // reads the monotonic clock while the TSC's rate is measured
	running                 // reads the TSC
	fallen                  // reads the monotonic clock for good
)

// line maps TSC readings to nanoseconds: through the anchor (tsc0, ns0),
// a pair of readings of the TSC and the monotonic clock taken together,
// at the rate measured over the interval before it.
type line struct {
	mode  mode
	tsc0  uint64 // the TSC at the anchor
	ns0   int64  // the monotonic clock at the anchor
	mult  uint64 // ns per tick, 32.32 fixed point
	every uint64 // ticks the anchor serves (Interval); below it d·mult cannot overflow
}

// at is the time at TSC reading t, for t − tsc0 < every.
func (l *line) at(t uint64) int64 { return l.ns0 + int64((t-l.tsc0)*l.mult>>32) }

// atWide is at for any t ≥ tsc0: a 128-bit product.
func (l *line) atWide(t uint64) int64 {
	hi, lo := bits.Mul64(t-l.tsc0, l.mult)
	return l.ns0 + int64(hi<<32|lo>>32)
}

// due says whether a reader that saw TSC reading t must re-anchor l: the
// anchor has served its Interval, or the TSC is far behind it. A reading a
// little behind the anchor is another CPU's counter a few ticks behind the
// one that took it (the kernel keeps them in step, not in lockstep): not
// due, or a reader there would re-anchor at once and measure the rate
// over nanoseconds.
func (l *line) due(t uint64) bool {
	if t < l.tsc0 {
		return l.tsc0-t > l.every/100 // more than about a millisecond back
	}
	return t-l.tsc0 >= l.every
}

// next is the line after l, anchored at the TSC reading t taken with the
// monotonic reading m: its rate is the one measured since l's anchor. A
// running line whose extrapolation to t is more than MaxError from m, a
// TSC that went backwards, or a rate no CPU has, is an error: the TSC is
// not fit to stand in for the monotonic clock.
func next(l line, t uint64, m int64) (line, error) {
	if t <= l.tsc0 {
		return line{}, fmt.Errorf("%w: %d ticks after an anchor at %d", ErrBackwards, t, l.tsc0)
	}
	dt, dm := float64(t-l.tsc0), float64(m-l.ns0)
	switch {
	case l.mode != running:
	case t-l.tsc0 <= 2*l.every:
		// The line served readings up to here: how far off is it?
		if e := time.Duration(m - l.atWide(t)); e > MaxError || e < -MaxError {
			return line{}, fmt.Errorf("%w: by %v after %v (more than %v)", ErrDisagree, e, time.Duration(m-l.ns0), MaxError)
		}
	default:
		// Nobody read the clock for a while: readings past every went to
		// the monotonic clock, so the line served none out there, and its
		// extrapolation would count the rate's error over the whole gap.
		// What it served in its interval was off by at most the
		// difference in rate over an Interval.
		drift := dm/dt*(1<<32)/float64(l.mult) - 1
		if e := time.Duration(drift * float64(Interval)); e > MaxError || e < -MaxError {
			return line{}, fmt.Errorf("%w: rate by %.0f ppm over %v (more than %v an interval)", ErrDisagree, drift*1e6, time.Duration(m-l.ns0), MaxError)
		}
	}
	if hz := dt / dm * 1e9; !(hz >= 1e8 && hz <= 2e10) {
		return line{}, fmt.Errorf("%w: %.4g Hz over %v (want 100 MHz to 20 GHz)", ErrRate, hz, time.Duration(m-l.ns0))
	}
	return line{
		mode:  running,
		tsc0:  t,
		ns0:   m,
		mult:  uint64(dm / dt * (1 << 32)),
		every: uint64(float64(Interval) * dt / dm),
	}, nil
}

// Clock is a monotonic clock in nanoseconds since New. The zero value is
// not usable.
type Clock struct {
	l        atomic.Pointer[line]
	steering atomic.Bool // one reader re-anchors at a time
	checked  bool        // under steering: the kernel and cost checks passed
	origin   time.Time
	bracket  uint64 // the widest a (TSC, monotonic) pair's TSC bracket may be
	why      atomic.Pointer[string]
	check    func() (bool, string) // haveTSC; a field so tests can refuse it
}

// New returns a clock that reads the monotonic clock until it has measured
// the TSC's rate over an Interval, then the TSC if it is fit (see the
// package documentation).
func New() *Clock {
	c := &Clock{origin: time.Now(), check: haveTSC}
	// The quietest of a few pairs sets the bracket a pair may have: one
	// with a wider one was interrupted between its readings.
	best := uint64(math.MaxUint64)
	for range 16 {
		t1 := rdtsc()
		c.mono()
		t2 := rdtsc()
		if t2 > t1 {
			best = min(best, t2-t1)
		}
	}
	if best == math.MaxUint64 {
		c.fall("the TSC does not advance")
		return c
	}
	c.bracket = 4*best + 256
	t, m, ok := c.pair()
	if !ok {
		c.fall("no quiet reading of the TSC")
		return c
	}
	c.l.Store(&line{mode: calibrating, tsc0: t, ns0: m})
	return c
}

func (c *Clock) mono() int64 { return int64(time.Since(c.origin)) }

// Now returns the nanoseconds since New.
func (c *Clock) Now() int64 {
	l := c.l.Load()
	if l.mode == running {
		if d := rdtsc() - l.tsc0; d < l.every {
			return l.ns0 + int64(d*l.mult>>32)
		}
	}
	return c.slow(l)
}

// slow reads the monotonic clock, and re-anchors the line when it is due
// and no other reader is at it.
func (c *Clock) slow(l *line) int64 {
	m := c.mono()
	if l.mode == fallen || l.mode == calibrating && m-l.ns0 < int64(Interval) {
		return m
	}
	if !c.steering.CompareAndSwap(false, true) {
		return m // another reader is re-anchoring; until it is done the monotonic reading serves
	}
	defer c.steering.Store(false)
	// Another reader may have re-anchored between our load and the CAS:
	// a rate measured over the microseconds since would be noise.
	if nl := c.l.Load(); nl != l || l.mode == running && !l.due(rdtsc()) {
		return m
	}
	if !c.checked {
		if ok, why := c.check(); !ok {
			c.fall(why)
			return m
		}
		if !c.cheap() {
			c.fall("reading the TSC is not cheaper than the monotonic clock")
			return m
		}
		c.checked = true
	}
	t, m2, ok := c.pair()
	if !ok {
		return m // interrupted every time: the next reading tries again
	}
	nl, err := next(*l, t, m2)
	if err != nil {
		c.fall(err.Error())
		slog.Warn("fastclock: the TSC is unfit; reading the monotonic clock from now on", "err", err)
		return m2
	}
	c.l.Store(&nl)
	return m2
}

// pair reads the TSC on both sides of the monotonic clock and returns the
// midpoint, or false when every try was interrupted.
func (c *Clock) pair() (uint64, int64, bool) {
	for range 8 {
		t1 := rdtsc()
		m := c.mono()
		t2 := rdtsc()
		if t2 > t1 && t2-t1 <= c.bracket {
			return t1 + (t2-t1)/2, m, true
		}
	}
	return 0, 0, false
}

// cheap says whether the TSC reads in under two thirds of the monotonic
// clock's time: some hypervisors trap the instruction, and then it costs
// microseconds.
func (c *Clock) cheap() bool {
	best := func(read func()) int64 {
		b := int64(math.MaxInt64)
		for range 5 {
			s := c.mono()
			for range 64 {
				read()
			}
			b = min(b, c.mono()-s)
		}
		return b
	}
	tsc := best(func() { rdtsc() })
	mono := best(func() { c.mono() })
	return 3*tsc < 2*mono
}

func (c *Clock) fall(why string) {
	c.why.Store(&why)
	c.l.Store(&line{mode: fallen})
}

// Source says what the clock reads: "tsc", or "monotonic" with why.
func (c *Clock) Source() string {
	switch l := c.l.Load(); {
	case l.mode == running:
		return "tsc"
	case l.mode == calibrating:
		return "monotonic (measuring the TSC)"
	default:
		return "monotonic: " + *c.why.Load()
	}
}

// std is the process's clock: New costs a few microseconds and no I/O.
var std = New()

// Now returns the nanoseconds since the process's clock started.
func Now() int64 { return std.Now() }

// Source says what Now reads: "tsc", or "monotonic" with why.
func Source() string { return std.Source() }
