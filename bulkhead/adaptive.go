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
// The limit looks for the service's knee: the most requests it can hold
// before they queue inside it. Every window the bulkhead measures the mean
// time a request spends inside (latency) and how many finish per second
// (throughput), averaged over recent windows, and keeps a baseline: the
// latency with nobody queueing inside. Then, in short:
//
//   - latency over baseline × (1 + Tolerance) means requests queue inside:
//     the limit drops to throughput × baseline — by Little's law the
//     concurrency that carries today's throughput at the baseline latency,
//     under processor sharing exactly the knee — and by 10 % at least;
//   - while the limit turns requests away (it queued or refused some) and
//     latency is within baseline × (1 + Tolerance/4), it grows: by a
//     quarter far below the last knee found, by √limit/4 near it;
//   - while the limit turns requests away anyway, it now and then steps
//     down 10 % to see whether latency follows: if it does, it was above
//     the knee and steps again; if not, the step is undone;
//   - when the limit does not hold requests back, it does nothing: no
//     creep while demand is low, and no step down that would refuse
//     healthy traffic (only a latency over baseline × (1 + 2·Tolerance)
//     cuts a limit that binds nobody).
//
// Every cut is checked: once the requests admitted under the old limit
// have left, three windows show whether requests got faster. If they did
// not, a probe is undone; after a cut for congestion, the latency is the
// service's own and becomes the baseline. That is
// the only way the baseline goes up; otherwise it only follows faster
// windows down, so sustained overload cannot raise it and let the limit
// creep. docs/bulkhead.md gives the reasoning and the tests that hold the
// controller to it.
type AdaptiveConfig struct {
	Min        int           // lowest limit; default 1
	Max        int           // highest limit; default MaxLimit
	Window     time.Duration // shortest measurement window; default 100ms
	MinSamples int           // fewest requests per window; default 100
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
		c.MinSamples = 100
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
	cfg       AdaptiveConfig
	limit     float64
	smooth    float64    // latency of recent windows, seconds, averaged
	recent    [3]float64 // the last smoothed latencies, for the baseline
	through   float64    // throughput of recent windows, requests per second, averaged
	baseline  float64    // seconds; 0 until the first window
	knee      float64    // the limit last found at the knee; 0 until found
	verified  float64    // a limit shown to be at or below the knee; 0 until shown
	over      int        // consecutive windows over tolerance
	high      int        // consecutive binding windows in the upper half of the tolerance
	phase     phase
	cut       cutKind // what the current draining/checking phase follows
	before    float64 // latency in the window before the cut
	beforeL   float64 // limit before the cut
	settle    float64 // seconds left to settle
	checkSum  float64 // latency × samples of the checking windows
	checkN    int     // samples of the checking windows
	checkWins int     // checking windows so far
	countdown int     // binding windows until the next probe
}

type phase int

const (
	steady   phase = iota
	draining       // after a cut: waiting for the inside to come down to the new limit
	settling       // drained: waiting for the requests admitted under the old limit to finish
	checking       // the next window shows whether the cut helped
)

type cutKind int

const (
	cutCongested cutKind = iota // latency over tolerance
	cutProbe                    // a 10 % step down while the limit refuses requests anyway
)

const (
	// cutHelped is the speed-up a cut must bring for the latency to count
	// as the limit's doing.
	cutHelped = 0.06
	// probeStep is the size of a probe; probeSoon and probeLater are the
	// binding windows before the next probe, after a cut and once the knee
	// is confirmed.
	probeStep  = 0.10
	probeSoon  = 5
	probeLater = 300
	// checkWindows is how many windows decide whether a cut helped.
	checkWindows = 3
	// smoothing is the weight of the newest window in the averaged latency.
	smoothing = 0.5
)

// step takes a window and returns the new limit.
func (c *controller) step(w window) int {
	if w.samples == 0 || w.duration <= 0 {
		return c.round()
	}
	r := w.meanRTT.Seconds()
	x := float64(w.samples) / w.duration.Seconds()

	switch c.phase {
	case draining:
		// The requests finishing now came in under the old limit: the
		// latency before the cut is theirs, averaged like the rest.
		c.smooth += (r - c.smooth) * smoothing
		c.before = c.smooth
		if w.inflight <= c.round() {
			// The requests still inside were admitted under the old limit;
			// give them the latency they were seeing, and at least two
			// baselines, to finish, so that the window that decides holds
			// only requests of the new limit. (A window of the requests
			// admitted after the drain would not do: its first to finish are
			// the short ones.)
			c.phase, c.settle = settling, math.Max(2*c.baseline, c.before)
		}
		return c.round()
	case settling:
		if c.settle -= w.duration.Seconds(); c.settle <= 0 {
			c.phase = checking
			c.checkSum, c.checkN, c.checkWins = 0, 0, 0
		}
		return c.round()
	case checking:
		// Three windows decide: one alone is too noisy to tell a 10 % step.
		c.checkSum += r * float64(w.samples)
		c.checkN += w.samples
		if c.checkWins++; c.checkWins < checkWindows {
			return c.round()
		}
		r = c.checkSum / float64(c.checkN)
		c.phase = steady
		c.smooth = r // the first clean latency after the cut
		c.recent = [3]float64{r, r, r}
		if c.baseline == 0 || r < c.baseline {
			c.baseline = r
		}
		if r >= c.before*(1-cutHelped) {
			// The cut did not make requests faster. After a probe, the
			// limit was at the knee or below: the probe is undone — it only
			// cost throughput. After a cut for congestion, the latency is the
			// service's own: it becomes the baseline, and growth resumes from
			// the cut limit. (Not after a probe: a probe cannot tell a limit
			// a few percent above the knee from one at it, and raising the
			// baseline on it would let the limit creep.)
			c.smooth = r
			if c.cut == cutProbe {
				c.limit = c.beforeL
				c.verified = c.limit
			} else {
				c.baseline = r
				c.recent = [3]float64{r, r, r}
			}
			c.countdown = probeLater
			return c.round()
		}
		// Faster with fewer inside: the cut was right, and the knee is about
		// here. After a probe that left latency still over the baseline, we
		// may be above it yet: step again at once.
		c.knee = c.limit
		c.verified = math.Min(c.verified, c.limit)
		if c.cut == cutProbe && r > c.baseline*(1+c.cfg.Tolerance/4) {
			c.countdown = 0
		}
	}

	// Decisions read the latency and throughput averaged over recent
	// windows, which halves the noise of one window.
	if c.smooth == 0 {
		c.smooth, c.through = r, x
	} else {
		c.smooth += (r - c.smooth) * smoothing
		c.through += (x - c.through) * smoothing
	}
	// The baseline follows the lowest latency that holds for three windows
	// in a row — the least of the running maximum of three — so that one
	// lucky window cannot drag it down. It moves only down here: overload
	// cannot raise it.
	c.recent = [3]float64{c.recent[1], c.recent[2], c.smooth}
	hold := math.Max(c.smooth, math.Max(c.recent[0], c.recent[1])) // 0s of the first windows do not count
	if c.baseline == 0 || hold < c.baseline {
		c.baseline = hold
	}
	tol := c.cfg.Tolerance
	ratio := c.smooth / c.baseline
	if ratio > 1+tol {
		c.over++
		// Persistent, or large; and with a limit that does not bind (the
		// traffic may be healthy) only when large, so that noise never cuts
		// the limit below healthy traffic.
		if (c.over >= 2 || ratio > 1+2*tol) && (w.binding || ratio > 1+2*tol) {
			c.over = 0
			// Down to the concurrency that carries the throughput at the
			// baseline latency (Little's law), and by a step at least, so that
			// the check after it can tell whether it helped.
			target := math.Max(c.through*c.baseline, c.limit/8)
			c.startCut(cutCongested, math.Min(target, c.limit*(1-probeStep)), r)
			c.countdown = probeSoon
		}
		return c.round()
	}
	c.over = 0
	if !w.binding {
		// Demand is below the limit: nothing to learn, nothing to change.
		return c.round()
	}
	// The limit binds. Now and then — soon when latency sits in the upper
	// half of the tolerance — step down 10 % to see whether the latency
	// follows: it finds a knee hidden by a baseline measured above it, and
	// it refuses only requests the limit was refusing anyway.
	if ratio > 1+tol/2 {
		c.high++
	} else {
		c.high = 0
	}
	if c.countdown--; c.countdown <= 0 || c.high >= 2*probeSoon {
		c.high = 0
		c.startCut(cutProbe, c.limit*(1-probeStep), c.smooth)
		return c.round()
	}
	switch {
	case c.knee == 0 && ratio <= 1+tol/2, c.limit < 0.8*c.knee && ratio <= 1+tol/4:
		c.limit += math.Max(1, c.limit/4) // far below any knee seen: grow fast
	case ratio <= 1+tol/4:
		c.limit += math.Max(1, math.Sqrt(c.limit)/4)
	}
	c.limit = math.Min(float64(c.cfg.Max), math.Max(float64(c.cfg.Min), c.limit))
	return c.round()
}

// set is a limit from outside (SetLimit). A cut being drained, settled or
// checked is abandoned: its check would compare the latency under the new
// limit with the latency before the cut, and undoing a probe would restore
// the limit from before it over the caller's.
func (c *controller) set(n int) {
	c.limit = float64(n)
	c.phase = steady
}

func (c *controller) startCut(kind cutKind, target, r float64) {
	c.cut, c.before, c.beforeL = kind, r, c.limit
	c.limit = math.Max(float64(c.cfg.Min), target)
	c.phase = draining
}

func (c *controller) round() int { return int(math.Round(c.limit)) }

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
	return &adaptive{cfg: cfg, ctrl: controller{cfg: cfg, limit: float64(initial), countdown: probeSoon}}, nil
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
	// Close early a window that holds too much for its counters, one with
	// few requests when they come slowly (as they do in a collapse), and one
	// that lingers at low traffic.
	few := elapsed >= 2*a.cfg.Window && n >= max(5, a.cfg.MinSamples/10)
	if full || few || n >= maxSamples/2 || acc&sumMask >= sumMask/2 || (elapsed >= 50*a.cfg.Window && n > 0) {
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
	// The new limit is stored under the controller's lock, as SetLimit
	// stores its own: stored after the lock, it could land after a
	// SetLimit that came in between and undo it with a limit stepped from
	// the one before.
	a.mu.Lock()
	limit := a.ctrl.step(w)
	changed := int64(limit) != b.limit.Load()
	if changed {
		b.limit.Store(int64(limit))
	}
	a.mu.Unlock()
	a.closing.Store(false)
	if changed {
		b.limitChanged()
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
