package bulkhead

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// Priority is a request's tier: when permits are scarce, higher tiers are
// admitted first and may take a lower tier's place in a full queue.
type Priority int

// The tiers, lowest first. Acquire uses PriorityNormal unless the context
// carries another (WithPriority).
const (
	PriorityLow Priority = iota
	PriorityNormal
	PriorityHigh
	PriorityCritical
	numPriorities
)

type priorityKey struct{}

// WithPriority returns a context that carries a request's priority to
// Acquire and to the HTTP middleware.
func WithPriority(ctx context.Context, p Priority) context.Context {
	return context.WithValue(ctx, priorityKey{}, p)
}

// PriorityFrom returns the priority a context carries, PriorityNormal if
// none.
func PriorityFrom(ctx context.Context) Priority {
	if p, ok := ctx.Value(priorityKey{}).(Priority); ok && p >= 0 && p < numPriorities {
		return p
	}
	return PriorityNormal
}

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
	// The fields every request reads share one cache line.
	state    atomic.Uint64 // inflight | queued<<16 | completed<<32
	limit    atomic.Int64
	adaptive *adaptive // nil for a fixed limit
	_        [40]byte  // keeps the locked fields below off this line

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

type config struct {
	queue     int
	maxWait   time.Duration
	lifoAfter int
	clock     Clock
	adaptive  *AdaptiveConfig
}

// Option configures a Bulkhead.
type Option func(*config)

// WithQueue lets up to n requests wait when the limit is reached; the
// default is 0: refuse at once. Size it from the bursts you must absorb
// and the wait your clients can stand, not to avoid refusing: a queue ten
// times what can be served only makes everyone slow (docs/bulkhead.md).
func WithQueue(n int) Option { return func(c *config) { c.queue = n } }

// WithMaxWait refuses, with ErrMaxWait, a request that has waited d in the
// queue, and one that would, going by the queue's current speed. The
// default, 0, is no maximum (the caller's context still applies).
func WithMaxWait(d time.Duration) Option { return func(c *config) { c.maxWait = d } }

// WithLIFO serves each priority newest first while the queue holds at
// least backlog requests — of every priority, the one about to be served
// included — and oldest first below that. The default, 0, is FIFO always.
func WithLIFO(backlog int) Option { return func(c *config) { c.lifoAfter = backlog } }

// WithClock sets the clock the bulkhead reads. The default is the real
// one.
func WithClock(c Clock) Option { return func(cfg *config) { cfg.clock = c } }

// WithAdaptive makes the limit adaptive: it starts at New's limit and
// follows the latency and throughput it observes (adaptive.go,
// docs/bulkhead.md).
func WithAdaptive(a AdaptiveConfig) Option {
	return func(c *config) { c.adaptive = &a }
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
	b.q.lifoAfter = cfg.lifoAfter
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
		return time.Since(b.epoch)
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

// acquireSlow queues; the context was not done a moment ago, and if it
// is done now, the wait below ends at once.
func (b *Bulkhead) acquireSlow(ctx context.Context) (Permit, error) {
	deadline, _ := ctx.Deadline()
	w := b.pool.Get().(*waiter)
	p, err, queued := b.enqueue(PriorityFrom(ctx), deadline, false, w)
	if !queued {
		b.pool.Put(w)
		return p, err
	}
	select {
	case <-w.ready:
		p, err = w.permit, w.err
	case <-ctx.Done():
		b.mu.Lock()
		if !w.granted && w.err == nil {
			b.dequeue(w)
			b.mu.Unlock()
			b.rejected[rCanceled].Add(1)
			b.recycle(w)
			return Permit{}, &rejection{reason: rCanceled, cause: ctx.Err()}
		}
		b.mu.Unlock()
		// Decided as the context ended: keep the answer, as
		// x/sync/semaphore does, rather than undo a grant.
		<-w.ready
		p, err = w.permit, w.err
	}
	b.recycle(w)
	return p, err
}

// Submit asks for a permit without blocking: fn is called exactly once,
// with the permit or the refusal — before Submit returns when the answer is
// known at once, otherwise later from the goroutine that releases a
// permit, raises the limit or expires the wait. A zero deadline is none.
// fn must not block; it may call the bulkhead. Submit is how a model
// drives a bulkhead in virtual time (package overload).
func (b *Bulkhead) Submit(prio Priority, deadline time.Time, fn func(Permit, error)) {
	if prio < 0 || prio >= numPriorities {
		prio = PriorityNormal
	}
	if b.tryFast() {
		fn(b.permit(), nil)
		return
	}
	w := b.pool.Get().(*waiter)
	w.fn = fn
	p, err, queued := b.enqueue(prio, deadline, true, w)
	if !queued {
		w.fn = nil
		b.pool.Put(w)
		fn(p, err)
	}
}

// enqueue is the slow path of an arrival: admit if there is room after
// all, refuse, or queue w. The deadline is checked against the queue's
// speed before w waits; it is the queue's own expiry only for Submit
// (Acquire's context expires by itself).
func (b *Bulkhead) enqueue(prio Priority, deadline time.Time, expireAtDeadline bool, w *waiter) (Permit, error, bool) {
	now := b.cfg.clock.Now()
	if b.adaptive != nil {
		b.adaptive.markBinding()
	}
	b.mu.Lock()
	p, queued, evicted, err := b.enqueueLocked(now, prio, deadline, expireAtDeadline, w)
	b.mu.Unlock()
	b.notify(evicted)
	return p, err, queued
}

func (b *Bulkhead) enqueueLocked(now time.Time, prio Priority, deadline time.Time, expireAtDeadline bool, w *waiter) (p Permit, queued bool, evicted *waiter, err error) {
	for {
		s := b.state.Load()
		limit := uint64(b.limit.Load())
		if s&queuedMask == 0 && s&inflightMask < limit {
			if b.state.CompareAndSwap(s, s+1) {
				return b.permit(), false, evicted, nil
			}
			continue
		}
		if !deadline.IsZero() && !deadline.After(now) {
			b.rejected[rDeadline].Add(1)
			return Permit{}, false, evicted, rejectDeadline
		}
		if b.q.n >= b.cfg.queue {
			v := b.q.victim(prio)
			if v == nil {
				b.rejected[rQueueFull].Add(1)
				return Permit{}, false, evicted, rejectQueueFull
			}
			b.dequeue(v)
			b.rejected[rEvicted].Add(1)
			evicted = b.decide(v, Permit{}, rejectEvicted, evicted)
			continue
		}
		// Refuse now rather than after a wait that cannot end in time.
		if wait, ok := b.handoffs.expectedWait(b.q.ahead(prio) + 1); ok {
			if b.cfg.maxWait > 0 && wait > b.cfg.maxWait {
				b.rejected[rMaxWait].Add(1)
				return Permit{}, false, evicted, rejectMaxWait
			}
			if !deadline.IsZero() && now.Add(wait).After(deadline) {
				b.rejected[rDeadline].Add(1)
				return Permit{}, false, evicted, rejectDeadline
			}
		}
		if b.state.CompareAndSwap(s, s+queuedOne) {
			break
		}
	}
	w.prio, w.enqueued, w.granted, w.err, w.permit = prio, now, false, nil, Permit{}
	w.expires, w.deadline = time.Time{}, false
	if b.cfg.maxWait > 0 {
		w.expires = now.Add(b.cfg.maxWait)
	}
	if expireAtDeadline && !deadline.IsZero() && (w.expires.IsZero() || deadline.Before(w.expires)) {
		w.expires, w.deadline = deadline, true
	}
	b.q.push(w)
	b.armTimer(now)
	return Permit{}, true, evicted, nil
}

// dequeue takes a still-undecided waiter out of the queue, under the lock.
func (b *Bulkhead) dequeue(w *waiter) {
	b.q.remove(w)
	b.state.Add(^uint64(queuedOne - 1)) // queued−1
}

// decide settles a waiter taken out of the queue, under the lock: a
// blocking Acquire is woken at once; a Submit callback is added to chain,
// for notify to run after the lock is released. Once woken, a blocking
// waiter belongs to its owner again, so decide touches it no more.
func (b *Bulkhead) decide(w *waiter, p Permit, err error, chain *waiter) *waiter {
	w.granted, w.permit, w.err = err == nil, p, err
	if w.fn == nil {
		w.ready <- struct{}{}
		return chain
	}
	w.notify = chain
	return w
}

// notify runs the Submit callbacks of a chain of decided waiters, outside
// the lock, and recycles them. Blocking waiters in the chain were woken by
// decide and recycle themselves.
func (b *Bulkhead) notify(head *waiter) {
	for w := head; w != nil; {
		next := w.notify
		w.notify = nil
		if w.fn != nil {
			fn, p, err := w.fn, w.permit, w.err
			w.fn = nil
			b.recycle(w)
			fn(p, err)
		}
		w = next
	}
}

func (b *Bulkhead) recycle(w *waiter) {
	select { // drain a wake-up the owner did not read
	case <-w.ready:
	default:
	}
	w.permit, w.err, w.fn, w.notify = Permit{}, nil, nil, nil
	b.pool.Put(w)
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

// admitWaiters lets waiters in while there is room under the limit: after
// a release, or when the limit rises. After a cut of the limit, releases
// first bring the inside down to it.
func (b *Bulkhead) admitWaiters() {
	now := b.cfg.clock.Now()
	b.mu.Lock()
	var chain *waiter
	for b.q.n > 0 {
		s := b.state.Load()
		if s&inflightMask >= uint64(b.limit.Load()) {
			break
		}
		// Claim the place first, then take the waiter out. Only locked
		// paths add or remove waiters, but a release outside the lock can
		// change the word under us; a waiter taken out before a failed
		// compare-and-swap would have to go back in, and could not go back
		// to where it was. Left in place, it stays next in line.
		if !b.state.CompareAndSwap(s, s-queuedOne+1) { // queued−1, inflight+1
			continue
		}
		w := b.q.next()
		b.q.remove(w)
		b.grant(now, w, &chain)
	}
	b.armTimer(now)
	b.mu.Unlock()
	b.notify(chain)
}

// grant gives w the place, under the lock, and records its wait.
func (b *Bulkhead) grant(now time.Time, w *waiter, chain **waiter) {
	b.handoffs.observe(now)
	b.waits.observe(now.Sub(w.enqueued))
	*chain = b.decide(w, b.permit(), nil, *chain)
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

// armTimer keeps the one expiry timer set for the earliest expiry in the
// queue, and stopped when there is none. Under the lock.
func (b *Bulkhead) armTimer(now time.Time) {
	if len(b.q.expiry) == 0 {
		if b.timer != nil {
			b.timer.Stop()
			b.timer, b.timerAt = nil, time.Time{}
		}
		return
	}
	at := b.q.expiry[0].expires
	if b.timer != nil && b.timerAt.Equal(at) {
		return
	}
	if b.timer != nil {
		b.timer.Stop()
	}
	b.timerAt = at
	b.timer = b.cfg.clock.AfterFunc(max(0, at.Sub(now)), b.expire)
}

// expire refuses every waiter whose maximum wait or deadline has passed.
func (b *Bulkhead) expire() {
	now := b.cfg.clock.Now()
	b.mu.Lock()
	b.timer, b.timerAt = nil, time.Time{}
	var chain *waiter
	for len(b.q.expiry) > 0 && !b.q.expiry[0].expires.After(now) {
		w := b.q.expiry[0]
		b.dequeue(w)
		reason, err := rMaxWait, error(rejectMaxWait)
		if w.deadline {
			reason, err = rDeadline, rejectDeadline
		}
		b.rejected[reason].Add(1)
		chain = b.decide(w, Permit{}, err, chain)
	}
	b.armTimer(now)
	b.mu.Unlock()
	b.notify(chain)
}

// Stats is a snapshot of a bulkhead's counts.
type Stats struct {
	Limit     int
	InFlight  int
	Queued    int
	Admitted  uint64 // granted a permit, at once or after waiting
	Completed uint64 // released their permit
	Waited    uint64 // admitted after waiting in the queue
	Rejected  map[Reason]uint64
}

// Stats returns the bulkhead's counts.
func (b *Bulkhead) Stats() Stats {
	var s, wraps uint64
	for { // a consistent pair: the word and the wraps of its completed field
		wraps = b.wraps.Load()
		s = b.state.Load()
		if b.wraps.Load() == wraps {
			break
		}
	}
	completed := wraps<<32 | s>>completedShift
	st := Stats{
		Limit:     b.Limit(),
		InFlight:  int(s & inflightMask),
		Queued:    int(s & queuedMask >> queuedShift),
		Completed: completed,
		Admitted:  completed + s&inflightMask,
		Rejected:  make(map[Reason]uint64, len(reasons)),
	}
	b.mu.Lock()
	st.Waited = b.waits.count
	b.mu.Unlock()
	for i, r := range reasons {
		st.Rejected[r] = b.rejected[i].Load()
	}
	return st
}

// rate measures how fast the queue moves: permits handed to waiters per
// second, over windows of at least a quarter of a second.
type rate struct {
	start    time.Time
	n        int
	perSec   float64 // 0 until measured
	lastSeen time.Time
}

const rateWindow = 250 * time.Millisecond

func (r *rate) observe(now time.Time) {
	if r.start.IsZero() || now.Sub(r.lastSeen) > 4*rateWindow {
		// The queue was idle: start a fresh window, keep the old speed.
		r.start, r.n = now, 0
	}
	r.n++
	r.lastSeen = now
	if d := now.Sub(r.start); d >= rateWindow {
		v := float64(r.n) / d.Seconds()
		if r.perSec == 0 {
			r.perSec = v
		} else {
			r.perSec = (r.perSec + v) / 2
		}
		r.start, r.n = now, 0
	}
}

// expectedWait estimates the wait of a request with ahead waiters in
// front of it, once the queue's speed is known.
func (r *rate) expectedWait(ahead int) (time.Duration, bool) {
	if r.perSec <= 0 {
		return 0, false
	}
	return time.Duration(float64(ahead) / r.perSec * float64(time.Second)), true
}

// waitStats is the queue-wait histogram of the requests that waited; the
// ones admitted at once are counted apart (Stats.Admitted − Waited), so
// the fast path records nothing.
type waitStats struct {
	count   uint64
	sum     float64 // seconds
	buckets [len(waitBuckets)]uint64
}

// waitBuckets are the histogram's upper bounds, in seconds.
var waitBuckets = [...]float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30}

func (w *waitStats) observe(d time.Duration) {
	s := d.Seconds()
	w.count++
	w.sum += s
	for i, ub := range waitBuckets {
		if s <= ub {
			w.buckets[i]++
			break
		}
	}
}
