package bulkhead

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// The bulkhead's counts live in one 64-bit word so that the uncontended
// path is a single compare-and-swap each way: requests inside (16 bits),
// requests queued (16 bits), and requests completed, modulo 2^32 (32 bits;
// the wraps are counted apart).
const (
	inflightMask   = 1<<16 - 1
	queuedShift    = 16
	queuedOne      = 1 << queuedShift
	queuedMask     = (1<<16 - 1) << queuedShift
	completedShift = 32
	completedOne   = 1 << completedShift

	// MaxLimit is the largest concurrency limit a bulkhead takes.
	MaxLimit = 1<<16 - 1
	// MaxQueue is the largest queue a bulkhead takes.
	MaxQueue = 1<<16 - 1

	// falseSharing is the span a write can invalidate in another core's
	// cache: two 64-byte lines, which Intel's adjacent-line prefetcher
	// fetches as a pair.
	falseSharing = 128
)

// Bulkhead caps how many requests are inside a service at once (the
// limit) and how many wait outside (the queue); beyond both it refuses at
// once. It is safe for concurrent use.
//
// Acquiring and releasing with room inside and nobody queued is one
// compare-and-swap each, with no allocation and no clock reading (unless
// the limit is adaptive, which times each request). Waiting requests cost
// a pooled struct and, for Acquire, the caller's own goroutine: the
// bulkhead starts no goroutine and no timer per waiter — one timer, armed
// only while someone waits with an expiry, enforces the maximum wait — and
// nothing runs while it is idle.
type Bulkhead struct {
	// The fast path reads two cache lines. The state word's moves between
	// cores that acquire and release at once; the limit and the adaptive
	// pointer, which every request reads and almost none writes, have a
	// line of their own, which stays in every core's cache, so that reading
	// them never waits for the state word's line (docs/benchmarks.md).
	// Padding keeps other objects' fields off both lines.
	_ [falseSharing]byte

	// Read by every request, written rarely (SetLimit, the adaptive
	// controller).
	limit    atomic.Int64
	adaptive *adaptive // nil for a fixed limit
	_        [falseSharing - 16]byte

	// Written by every request: alone on its line.
	state atomic.Uint64 // inflight | queued<<16 | completed<<32
	_     [falseSharing - 8]byte

	wraps atomic.Uint64 // times the completed field wrapped past 2^32
	cfg   config
	epoch time.Time // the clock at New, for since
	// realTime: the clock is the machine's, so since can read the
	// monotonic clock alone (time.Since), half the cost of time.Now, which
	// reads the wall clock too. The adaptive path reads it twice a request.
	realTime bool

	mu       sync.Mutex
	q        queue
	timer    Timer     // armed for timerAt while a waiter has an expiry
	timerAt  time.Time // zero when disarmed
	handoffs rate      // speed of the queue, for deadline checks
	waits    waitStats // queue waits of the requests that waited
	rejected [len(reasons)]atomic.Uint64

	pool sync.Pool // *waiter
}

// New returns a bulkhead that lets limit requests inside at once.
func New(limit int, opts ...Option) (*Bulkhead, error) {
	cfg := config{clock: realClock{}}
	for _, o := range opts {
		o(&cfg)
	}
	switch {
	case limit < 1 || limit > MaxLimit:
		return nil, fmt.Errorf("%w: limit %d: want 1 to %d", ErrConfig, limit, MaxLimit)
	case cfg.queue < 0 || cfg.queue > MaxQueue:
		return nil, fmt.Errorf("%w: queue %d: want 0 to %d", ErrConfig, cfg.queue, MaxQueue)
	case cfg.maxWait < 0:
		return nil, fmt.Errorf("%w: max wait %v: want 0 (none) or more", ErrConfig, cfg.maxWait)
	case cfg.lifoAfter < 0:
		return nil, fmt.Errorf("%w: LIFO backlog %d: want 0 (never) or more", ErrConfig, cfg.lifoAfter)
	case cfg.clock == nil:
		return nil, fmt.Errorf("%w: nil clock", ErrConfig)
	}
	_, real := cfg.clock.(realClock)
	b := &Bulkhead{cfg: cfg, epoch: cfg.clock.Now(), realTime: real}
	b.limit.Store(int64(limit))
	b.q = newQueue(cfg.lifoAfter)
	b.pool.New = func() any { return &waiter{ready: make(chan struct{}, 1), heapIndex: -1} }
	if cfg.adaptive != nil {
		a, err := newAdaptive(*cfg.adaptive, limit)
		if err != nil {
			return nil, err
		}
		b.adaptive = a
	}
	return b, nil
}

// Permit is a place inside. Release it exactly once when the request is
// done; the zero Permit's Release does nothing.
type Permit struct {
	b     *Bulkhead
	start time.Duration // when it was granted, since the bulkhead's epoch; adaptive only
}

// Limit returns the current concurrency limit.
func (b *Bulkhead) Limit() int { return int(b.limit.Load()) }

// tryFast admits without the lock when there is room inside and nobody
// waits (a newcomer never passes a waiter, whatever its priority).
func (b *Bulkhead) tryFast() bool {
	limit := uint64(b.limit.Load())
	for {
		s := b.state.Load()
		if s&queuedMask != 0 || s&inflightMask >= limit {
			return false
		}
		if b.state.CompareAndSwap(s, s+1) {
			return true
		}
	}
}

func (b *Bulkhead) permit() Permit {
	if b.adaptive != nil {
		return b.timedPermit()
	}
	return Permit{b: b}
}

// timedPermit notes when the permit was granted, for the adaptive limit.
func (b *Bulkhead) timedPermit() Permit { return Permit{b: b, start: b.since()} }

// since reads the clock as a duration since the bulkhead was made: a
// monotonic reading that fits in a Permit's one word.
func (b *Bulkhead) since() time.Duration {
	if b.realTime {
		return sinceReal(b.epoch)
	}
	return b.cfg.clock.Now().Sub(b.epoch)
}

// TryAcquire takes a permit if there is room inside and nobody waits, and
// never waits itself.
func (b *Bulkhead) TryAcquire() (Permit, bool) {
	if b.tryFast() {
		return b.permit(), true
	}
	if b.adaptive != nil {
		b.adaptive.markBinding()
	}
	return Permit{}, false
}

// Acquire takes a permit, waiting in the queue if the limit is reached.
// A context already done when Acquire is called is refused with
// ErrCanceled (wrapping the context's error), even when there is room: its
// caller has gone, and a place given to it would be wasted. Acquire also
// refuses at once when the queue is full, and when the context's deadline
// (or the maximum wait) cannot be met going by the queue's current speed.
// A waiter leaves with ErrCanceled when its context ends and with
// ErrMaxWait when it has waited the maximum; one whose context ends just
// as it is granted keeps the permit. The priority is the context's
// (WithPriority), PriorityNormal by default.
//
//go:nosplit
func (b *Bulkhead) Acquire(ctx context.Context) (Permit, error) {
	// Acquire and Release are nosplit: the fast path needs no stack check,
	// and skipping it is most of what separates it from a bare
	// compare-and-swap counter (docs/benchmarks.md). Their own frames are
	// a few words; the slow paths they call check the stack as usual, and
	// the linker verifies the nosplit chain.
	// The fast path first, with nothing else in the way: a fixed limit
	// with room and nobody queued costs the context's Err (an atomic load
	// at most; for context.Background a call that returns nil), one load
	// and one compare-and-swap. Err comes before the load, not between it
	// and the compare-and-swap: a call there costs a few nanoseconds more
	// (the word must be kept across it) and widens the window in which
	// another request can change the word. Anything else — the adaptive
	// limit, a done context, a lost race, a queue — takes acquire.
	if b.adaptive == nil && ctx.Err() == nil {
		s := b.state.Load()
		if s&queuedMask == 0 && s&inflightMask < uint64(b.limit.Load()) && b.state.CompareAndSwap(s, s+1) {
			return Permit{b: b}, nil
		}
	}
	return b.acquire(ctx)
}

func (b *Bulkhead) acquire(ctx context.Context) (Permit, error) {
	if err := ctx.Err(); err != nil {
		b.rejected[rCanceled].Add(1)
		return Permit{}, &rejection{reason: rCanceled, cause: err}
	}
	if b.tryFast() {
		return b.permit(), nil
	}
	return b.acquireSlow(ctx)
}

// Release returns the permit: one atomic add. If someone waits, the place
// is handed on at once, under the lock, to the next waiter — a newcomer
// cannot take it first, because arrivals do not pass a non-empty queue.
//
//go:nosplit
func (p Permit) Release() {
	// With a fixed limit and nobody queued: one atomic add and one test.
	b := p.b
	if b == nil {
		return
	}
	s := b.state.Add(completedOne - 1) // inflight−1, completed+1
	// One test for the rare cases — someone queued, the completed field
	// wrapped to 0 — and the adaptive limit's sample.
	if s&queuedMask != 0 || s < completedOne || b.adaptive != nil {
		p.release(s)
	}
}

// release is the rest of Release; s is the state word after it.
func (p Permit) release(s uint64) {
	b := p.b
	if b.adaptive != nil {
		b.adaptive.sample(b, p.start)
	}
	if s < completedOne {
		b.wraps.Add(1)
	}
	if s&queuedMask != 0 {
		b.admitWaiters()
	}
}

// SetLimit changes the concurrency limit at once: raising it admits
// waiters straight away; lowering it lets the requests inside finish and
// admits nobody until they are fewer than the new limit. An adaptive
// bulkhead goes on adapting from the new limit, within its min and max:
// a cut it was checking is abandoned (the comparison was with a limit the
// caller replaced), and a window closing as SetLimit is called cannot put
// back the limit from before it. SetLimit is safe for concurrent use.
func (b *Bulkhead) SetLimit(n int) error {
	if n < 1 || n > MaxLimit {
		return fmt.Errorf("%w: limit %d: want 1 to %d", ErrConfig, n, MaxLimit)
	}
	if a := b.adaptive; a != nil {
		if n < a.cfg.Min || n > a.cfg.Max {
			return fmt.Errorf("%w: limit %d: want the adaptive min %d to max %d", ErrConfig, n, a.cfg.Min, a.cfg.Max)
		}
		// The controller's limit and the bulkhead's change together, under
		// the controller's lock, as a window close changes them: whichever
		// comes last sets both, so a close that stepped from the old limit
		// cannot store its result over n.
		a.mu.Lock()
		a.ctrl.set(n)
		b.limit.Store(int64(n))
		a.mu.Unlock()
	} else {
		b.limit.Store(int64(n))
	}
	b.limitChanged()
	return nil
}

// limitChanged admits the waiters a raised limit has room for, after the
// new limit is stored. It looks for them under the lock, not in the state
// word: an arrival reads the limit and queues in one locked section, so
// one that read the old limit has queued by the time the lock is ours and
// is seen here, and a later one reads the new limit. (The word alone can
// show nobody queued just before such an arrival queues, which then waits
// with room inside until someone releases.) It runs outside the
// controller's lock: admitting runs Submit callbacks, which may release
// permits and close a window.
func (b *Bulkhead) limitChanged() {
	b.mu.Lock()
	waiting := b.q.n > 0
	b.mu.Unlock()
	if waiting {
		b.admitWaiters()
	}
}
