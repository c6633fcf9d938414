package region

import (
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/afloat/afloat/internal/fastclock"
	"github.com/afloat/afloat/internal/pid"
	"github.com/afloat/afloat/quota"
	"github.com/afloat/afloat/quota/internal/breakage"
)

// Config configures a Limiter. The zero value of each optional field takes
// the default given with it.
type Config struct {
	// Region is where this limiter runs; required.
	Region string
	// Tenants are the tenants it serves; others are refused.
	Tenants []string
	// MaxDrift bounds how much faster than real time this machine's
	// monotonic clock may run (NTP slews by at most 500 ppm). Refill is
	// derated and lease validity shortened by it, so that a fast clock
	// cannot admit more than the lease allows; default 500e-6.
	MaxDrift float64
	// HotInterval is how soon a region whose demand outgrows its share
	// asks again; default 250 ms.
	HotInterval time.Duration
	// Retry is the first wait before re-sending an unanswered request; it
	// doubles up to MaxRetry while the coordinator stays unreachable.
	// Defaults 500 ms and 8 s.
	Retry, MaxRetry time.Duration
	// MaxRetryAfter caps the Retry-After the middleware promises; 30 s.
	MaxRetryAfter time.Duration
	// Caches is how many per-core token caches each lease is spent from
	// (see state in bucket.go): 0 for one per P (GOMAXPROCS at New), −1
	// for none, so that every request takes from the one shared word. The
	// chaos harness uses 1, so that a run depends on its seed alone and
	// not on which P served a call. A limiter serving more than
	// maxCachedTenants tenants has none: 128 bytes per P per tenant would
	// add up, and its requests spread over many buckets anyway.
	Caches int
}

// DefaultConfig returns the defaults for a region.
func DefaultConfig(region string, tenants ...string) Config {
	return Config{
		Region: region, Tenants: tenants,
		MaxDrift: 500e-6, HotInterval: 250 * time.Millisecond,
		Retry: 500 * time.Millisecond, MaxRetry: 8 * time.Second,
		MaxRetryAfter: 30 * time.Second,
	}
}

func (c Config) withDefaults() Config {
	d := DefaultConfig(c.Region, c.Tenants...)
	if c.MaxDrift == 0 {
		c.MaxDrift = d.MaxDrift
	}
	if c.HotInterval == 0 {
		c.HotInterval = d.HotInterval
	}
	if c.Retry == 0 {
		c.Retry = d.Retry
	}
	if c.MaxRetry == 0 {
		c.MaxRetry = d.MaxRetry
	}
	if c.MaxRetryAfter == 0 {
		c.MaxRetryAfter = d.MaxRetryAfter
	}
	return c
}

// Validate reports the first field out of range.
func (c Config) Validate() error {
	c = c.withDefaults()
	switch {
	case c.Region == "" || len(c.Region) > 64:
		return fmt.Errorf("%w: region %q: want 1 to 64 bytes", quota.ErrConfig, c.Region)
	case len(c.Tenants) == 0 || len(c.Tenants) > 100_000:
		return fmt.Errorf("%w: %d tenants: want 1 to 100000", quota.ErrConfig, len(c.Tenants))
	case !(c.MaxDrift >= 0 && c.MaxDrift <= 0.01):
		return fmt.Errorf("%w: max drift %v: want 0 to 0.01", quota.ErrConfig, c.MaxDrift)
	case c.HotInterval < time.Millisecond || c.HotInterval > time.Minute:
		return fmt.Errorf("%w: hot interval %v: want 1ms to 1m", quota.ErrConfig, c.HotInterval)
	case c.Retry < time.Millisecond || c.MaxRetry < c.Retry || c.MaxRetry > time.Hour:
		return fmt.Errorf("%w: retry %v up to %v: want 1ms ≤ retry ≤ max retry ≤ 1h", quota.ErrConfig, c.Retry, c.MaxRetry)
	case c.MaxRetryAfter < time.Second || c.MaxRetryAfter > time.Hour:
		return fmt.Errorf("%w: max Retry-After %v: want 1s to 1h", quota.ErrConfig, c.MaxRetryAfter)
	case c.Caches < -1 || c.Caches > 1024:
		return fmt.Errorf("%w: caches %d: want -1 (none), 0 (one per P) or up to 1024", quota.ErrConfig, c.Caches)
	}
	for i, t := range c.Tenants {
		if t == "" || len(t) > 128 {
			return fmt.Errorf("%w: tenants[%d] %q: want 1 to 128 bytes", quota.ErrConfig, i, t)
		}
	}
	return nil
}

// Limiter is a region's side of the global quota: one leased token bucket
// per tenant. Allow is lock-free and makes no network call; the renewal
// side (Request, Install, Nudge, Due) steps on explicit time and is what a
// runner — Run, or the chaos harness — drives. All methods are safe for
// concurrent use.
//
// Times are the region's own monotonic clock in nanoseconds (Now reads
// it); the lease's end is measured from when the region sent the request
// the lease answers, so the region always stops before the coordinator
// stops counting the lease.
type Limiter struct {
	cfg     Config
	buckets map[string]*bucket // fixed at New: no lock to read it
	// few holds the buckets again, in a slice, when there are at most
	// fewTenants: comparing a handful of strings is cheaper than hashing
	// one, and the lookup is a fifth of Allow's cost otherwise.
	few    []named
	start  int64 // the clock's reading at New
	clock  func() int64
	caches int // per-core token caches per lease
	broken breakage.Set
	wake   chan struct{} // tells Run that a tenant wants renewing
}

// bucket is one tenant's: the current lease's state, the demand counters
// Allow bumps, and the renewal bookkeeping (under mu).
type bucket struct {
	cur      atomic.Pointer[state]
	offered  atomic.Int64 // tokens offered since the last request, without a valid lease (and carried over from replaced ones)
	rejected atomic.Int64 // of which refused
	hot      atomic.Bool  // refused something since the last request
	reserve  atomic.Int64 // Micro: the emergency allowance left (best effort)
	// reserveCap is the allowance's size, E, from the grants.
	reserveCap atomic.Int64

	mu         sync.Mutex
	seq        uint64
	sent       [32]sentReq // ring of recent requests, by seq
	lastSend   int64
	answered   uint64 // highest seq answered
	lastReport int64
	epoch      uint64 // highest coordinator epoch seen
	nudged     bool
	failures   int // consecutive unanswered requests
	validFor   int64
	mode       quota.Mode
	held       uint64 // highest lease ID installed
	reported   bool
	demand     quota.Micro // the demand last reported
}

// maxCachedTenants is the most tenants a limiter keeps token caches for.
const maxCachedTenants = 1024

// fewTenants is how many tenants a linear scan serves faster than the map.
const fewTenants = 8

type named struct {
	tenant string
	b      *bucket
}

// bucket finds tenant's bucket: nil for a tenant the limiter does not serve.
func (l *Limiter) bucket(tenant string) *bucket {
	if l.few != nil {
		for i := range l.few {
			if l.few[i].tenant == tenant {
				return l.few[i].b
			}
		}
		return nil
	}
	return l.buckets[tenant]
}

type sentReq struct {
	seq uint64
	at  int64
}

// Option is an option of New.
type Option func(*Limiter)

// WithClock makes Now read clock (monotonic nanoseconds) instead of
// internal/fastclock: for tests in a testing/synctest bubble, whose fake
// time moves time.Since but not the CPU's time-stamp counter.
func WithClock(clock func() int64) Option { return func(l *Limiter) { l.clock = clock } }

// WithBreakage plants deliberate faults, for the chaos harness's mutation
// checks; its type cannot be named outside quota/..., so no user can.
func WithBreakage(b breakage.Set) Option { return func(l *Limiter) { l.broken = b } }

// New returns a limiter with no lease: it refuses everything until the
// first grant is installed.
func New(cfg Config, opts ...Option) (*Limiter, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	l := &Limiter{cfg: cfg, buckets: map[string]*bucket{}, wake: make(chan struct{}, 1)}
	switch l.caches = cfg.Caches; {
	case l.caches == -1 || len(cfg.Tenants) > maxCachedTenants:
		l.caches = 0
	case l.caches == 0:
		l.caches = pid.N()
	}
	for _, o := range opts {
		o(l)
	}
	// Read only the clock Now will read: fastclock re-anchors itself on a
	// reading, and a reading inside a synctest bubble (fake time) would
	// make it give up the TSC for the whole process.
	if l.clock != nil {
		l.start = l.clock()
	} else {
		l.start = fastclock.Now()
	}
	for _, t := range cfg.Tenants {
		if _, dup := l.buckets[t]; dup {
			return nil, fmt.Errorf("%w: tenant %q listed twice", quota.ErrConfig, t)
		}
		b := &bucket{}
		b.cur.Store(&state{})
		l.buckets[t] = b
		l.few = append(l.few, named{t, b})
	}
	if len(l.few) > fewTenants {
		l.few = nil
	}
	return l, nil
}

// Region is the limiter's region.
func (l *Limiter) Region() string { return l.cfg.Region }

// Tenants lists the tenants it serves.
func (l *Limiter) Tenants() []string { return append([]string(nil), l.cfg.Tenants...) }

// Now reads the limiter's clock: monotonic nanoseconds since New. It is
// fastclock's, which reads the CPU's time-stamp counter where the kernel
// keeps time with it — a third of the cost of time.Since, which was most
// of Allow's — and stays within fastclock.MaxError of the monotonic clock
// (or reads it).
func (l *Limiter) Now() int64 {
	if l.clock != nil {
		return l.clock() - l.start
	}
	return fastclock.Now() - l.start
}

// ClockSource says what Now reads: "tsc", or "monotonic" with the reason
// the time-stamp counter is not used (the kernel's clocksource is another,
// the first 100 ms of measuring its rate, or a check it failed).
func ClockSource() string { return fastclock.Source() }

// Allow takes cost tokens of tenant's quota now, or refuses. Shorthand
// for AllowAt(l.Now(), tenant, cost).
func (l *Limiter) Allow(tenant string, cost int64) bool {
	return l.AllowAt(l.Now(), tenant, cost)
}

// AllowAt takes cost tokens of tenant's quota at now, or refuses: from the
// leased bucket while the lease is valid; in best-effort mode, without a
// valid lease, from the emergency allowance. An unknown tenant and a cost
// below 1 are refused.
func (l *Limiter) AllowAt(now int64, tenant string, cost int64) bool {
	b := l.bucket(tenant)
	if b == nil || cost < 1 {
		return false
	}
	s := b.cur.Load()
	for s.valid(now) {
		ok, retry, idle := s.take(now, cost)
		if retry {
			s = b.cur.Load()
			continue
		}
		if ok {
			if idle > 0 && s.mode == quota.BestEffort {
				b.refillReserve(s.overflow(idle))
			}
			return true
		}
		b.refuse(cost)
		return false
	}
	b.offered.Add(cost)
	if s.mode == quota.BestEffort && b.spendReserve(cost) {
		return true
	}
	b.refuse(cost)
	return false
}

// offeredSince reads (and with reset, clears) the tokens offered since
// the last request: those of the current lease and the rest.
func (b *bucket) offeredSince(reset bool) int64 {
	s := b.cur.Load()
	if reset {
		return b.offered.Swap(0) + s.takeOffered()
	}
	return b.offered.Load() + s.peekOffered()
}

func (b *bucket) refuse(cost int64) {
	b.rejected.Add(cost)
	if !b.hot.Load() {
		b.hot.Store(true)
	}
}

// refillReserve tops up the emergency allowance from tokens the full
// bucket was dropping: refill that the lease paid for, so the allowance
// never adds to the rate.
func (b *bucket) refillReserve(m quota.Micro) {
	limit := b.reserveCap.Load()
	for {
		r := b.reserve.Load()
		if r >= limit {
			return
		}
		if b.reserve.CompareAndSwap(r, min(limit, r+int64(m))) {
			return
		}
	}
}

func (b *bucket) spendReserve(cost int64) bool {
	need := cost * int64(quota.One)
	for {
		r := b.reserve.Load()
		if r < need {
			return false
		}
		if b.reserve.CompareAndSwap(r, r-need) {
			return true
		}
	}
}

// Request builds the tenant's next request to the coordinator, and
// records when it was sent: the lease that answers it ends ValidFor −
// Margin after now, on this clock. Demand is what was offered since the
// previous request, per second.
func (l *Limiter) Request(now int64, tenant string) (quota.Request, error) {
	b := l.bucket(tenant)
	if b == nil {
		return quota.Request{}, fmt.Errorf("%w: %q is not served in region %q", quota.ErrUnknownTenant, tenant, l.cfg.Region)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	offered := b.offeredSince(true)
	b.rejected.Swap(0)
	b.hot.Store(false)
	var demand quota.Micro = -1 // unknown on the first request
	if b.reported && now > b.lastReport {
		demand = quota.Micro(float64(offered) * float64(quota.One) * 1e9 / float64(now-b.lastReport))
	} else if b.reported {
		demand = 0
	}
	b.reported, b.lastReport = true, now
	if demand >= 0 {
		b.demand = demand
	}
	if b.seq > 0 && b.answered < b.seq {
		b.failures++ // the previous request is still unanswered
	}
	b.seq++
	b.sent[b.seq%uint64(len(b.sent))] = sentReq{b.seq, now}
	b.lastSend = now
	b.nudged = false
	s := b.cur.Load()
	var bal quota.Micro
	if s.valid(now) {
		bal = s.balance(now)
	}
	return quota.Request{
		Tenant: tenant, Region: l.cfg.Region, Seq: b.seq,
		Holding: b.held, Epoch: b.epoch, Demand: demand, Balance: bal,
	}, nil
}

// Installed is what Install did with a grant.
type Installed struct {
	// Lease is the lease now in use, if the grant was installed.
	Lease quota.Lease
	OK    bool
	// Return, if not nil, gives the replaced lease back to the coordinator
	// with the tokens the new burst released; send it.
	Return *quota.Return
	// Dropped is the replaced lease, if it was valid until now.
	Dropped quota.Lease
	// Until is when the new lease ends, on this clock.
	Until int64
	// Why says why a grant was not installed.
	Why string
}

// Install puts a grant into use at now (the moment it arrived; a grant
// with ActivateAfter is installed that much later by the runner). The
// balance carries over — truncated to the new burst, never refilled —
// plus any tokens the coordinator transferred; after a gap the bucket
// starts empty. A grant from an older epoch, older than the lease in use,
// answering an unknown request, or already over is ignored.
func (l *Limiter) Install(now int64, g quota.Grant) Installed {
	b := l.bucket(g.Lease.Tenant)
	if b == nil || g.Lease.Region != l.cfg.Region {
		return Installed{Why: "not this region's tenant"}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case g.Lease.Epoch < b.epoch:
		return Installed{Why: "stale epoch"}
	case g.Lease.ID <= b.held:
		return Installed{Why: "not newer than the lease in use"}
	}
	sent := b.sent[g.Seq%uint64(len(b.sent))]
	if sent.seq != g.Seq || g.Seq == 0 {
		return Installed{Why: "answers an unknown request"}
	}
	// Both ends of the lease are readings of Now, each within MaxError of
	// the monotonic clock: take that off twice, so that the clock's error
	// cannot stretch the lease.
	valid := time.Duration(float64(g.ValidFor-g.Margin)*(1-l.cfg.MaxDrift)) - 2*fastclock.MaxError
	until := sent.at + int64(valid)
	if until <= now {
		return Installed{Why: "over on arrival"}
	}
	b.epoch = max(b.epoch, g.Lease.Epoch)
	b.answered = max(b.answered, g.Seq)
	if g.Seq == b.seq {
		b.failures = 0
	}
	b.held = g.Lease.ID
	b.validFor = int64(g.ValidFor)
	b.mode = g.Mode
	if g.Mode == quota.BestEffort && b.reserveCap.Load() != int64(g.Emergency) {
		if b.reserveCap.Load() == 0 {
			b.reserve.Store(int64(g.Emergency)) // the allowance starts full
		}
		b.reserveCap.Store(int64(g.Emergency))
		b.reserve.Store(min(b.reserve.Load(), int64(g.Emergency)))
	}

	ns := &state{lease: g.Lease, from: now, until: until, mode: g.Mode}
	if g.Lease.Rate > 0 {
		ns.perToken = 1e9 * float64(quota.One) / float64(g.Lease.Rate) * (1 + l.cfg.MaxDrift)
		ns.tau = int64(math.Floor(g.Lease.Burst.Float() * ns.perToken))
		ns.cost1 = int64(math.Ceil(ns.perToken))
		ns.withCaches(l.caches, l.broken.CachesOverBurst)
	}
	old := b.cur.Load()
	var inst Installed
	var kept quota.Micro
	if old.valid(now) {
		tat, held := old.seal()
		var bal quota.Micro
		if tat != sealed {
			bal = old.balanceAt(tat, now) + quota.Micro(held)*quota.One
			if tat < now && old.mode == quota.BestEffort && old.perToken > 0 {
				b.refillReserve(old.overflow(now - tat))
			}
		}
		kept = min(bal, g.Lease.Burst)
		inst.Dropped = old.lease
		inst.Return = &quota.Return{
			Tenant: g.Lease.Tenant, Region: l.cfg.Region, LeaseID: old.lease.ID,
			Epoch: b.epoch, Balance: bal - kept,
		}
	} else if old.lease.ID != 0 {
		old.seal()
	}
	// The old lease's count of offered tokens carries over to the demand.
	// (An Allow that read the old state just before it was sealed may
	// still add to it: a few tokens of demand lost, nothing more.)
	b.offered.Add(old.takeOffered())
	if l.broken.RenewRefills {
		kept = g.Lease.Burst // wrong on purpose: a new burst out of nothing
	}
	kept = min(kept+g.Lease.Transfer, g.Lease.Burst)
	ns.fill(kept, now)
	b.cur.Store(ns)
	inst.Lease, inst.OK, inst.Until = g.Lease, true, until
	return inst
}

// Nudge records the coordinator's request to renew soon.
func (l *Limiter) Nudge(n quota.Nudge) {
	b := l.bucket(n.Tenant)
	if b == nil || n.Region != l.cfg.Region {
		return
	}
	b.mu.Lock()
	if n.Epoch >= b.epoch {
		b.nudged = true
	}
	b.mu.Unlock()
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

// Due says whether the tenant should send a request now: it has no valid
// lease, half its lease has passed, it was nudged, or its demand outgrew
// its share (at most every HotInterval) — and no request is waiting for
// an answer, unless that one has waited the retry interval.
func (l *Limiter) Due(now int64, tenant string) bool {
	b := l.bucket(tenant)
	if b == nil {
		return false
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.seq == 0 {
		return true // never asked
	}
	since := now - b.lastSend
	if b.answered < b.seq {
		// Waiting for an answer: re-send after the retry interval, which
		// doubles while the coordinator stays silent.
		return since >= int64(l.retryAfterFailures(b.failures))
	}
	s := b.cur.Load()
	switch {
	case !s.valid(now):
		return since >= int64(l.cfg.Retry)
	case b.nudged:
		return true
	case b.hot.Load() && since >= int64(l.cfg.HotInterval):
		return true
	case since >= 4*int64(l.cfg.HotInterval) && b.demand > 0 &&
		float64(b.offeredSince(false))*float64(quota.One)*1e9/float64(since) < 0.5*float64(b.demand):
		// Demand has fallen by half since the last report: say so now,
		// so that the coordinator can move the share where it is wanted
		// instead of waiting for the next renewal.
		return true
	}
	return since >= b.validFor/2
}

func (l *Limiter) retryAfterFailures(n int) time.Duration {
	d := l.cfg.Retry
	for range min(n, 30) {
		if d *= 2; d >= l.cfg.MaxRetry {
			return l.cfg.MaxRetry
		}
	}
	return d
}

// Return gives the tenant's lease back, as when the region shuts down: the
// bucket is invalidated first, then the returned message carries its
// balance. False if there was no valid lease.
func (l *Limiter) Return(now int64, tenant string) (quota.Return, bool) {
	b := l.bucket(tenant)
	if b == nil {
		return quota.Return{}, false
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.cur.Load()
	if !s.valid(now) {
		return quota.Return{}, false
	}
	tat, held := s.seal()
	var bal quota.Micro
	if tat != sealed {
		bal = s.balanceAt(tat, now) + quota.Micro(held)*quota.One
	}
	b.offered.Add(s.takeOffered())
	b.cur.Store(&state{lease: quota.Lease{}, mode: s.mode})
	return quota.Return{Tenant: tenant, Region: l.cfg.Region, LeaseID: s.lease.ID, Epoch: b.epoch, Balance: bal}, true
}

// Status is a tenant's state in the region.
type Status struct {
	Lease   quota.Lease // the lease in use; ID 0 for none
	Valid   bool
	Until   int64 // on this clock
	Balance quota.Micro
	Reserve quota.Micro // emergency allowance left
	Epoch   uint64
}

// Status reports a tenant's lease and balance at now.
func (l *Limiter) Status(now int64, tenant string) Status {
	b := l.bucket(tenant)
	if b == nil {
		return Status{}
	}
	s := b.cur.Load()
	st := Status{Lease: s.lease, Valid: s.valid(now), Until: s.until, Reserve: quota.Micro(b.reserve.Load())}
	if st.Valid {
		st.Balance = s.balance(now)
	}
	b.mu.Lock()
	st.Epoch = b.epoch
	b.mu.Unlock()
	return st
}

// RetryAfter is when a refused request of cost tokens may succeed: the
// next local refill under the current lease. When that cannot be known —
// no valid lease, a cost above the burst — ok is false and the returned
// duration is the bounded retry policy instead: the region's own retry
// interval, doubling with each unanswered request, capped at
// MaxRetryAfter.
func (l *Limiter) RetryAfter(now int64, tenant string, cost int64) (d time.Duration, ok bool) {
	b := l.bucket(tenant)
	if b == nil {
		return l.cfg.MaxRetryAfter, false
	}
	s := b.cur.Load()
	if s.valid(now) {
		if w, ok := s.waitFor(now, cost); ok {
			return min(time.Duration(w), l.cfg.MaxRetryAfter), true
		}
	}
	b.mu.Lock()
	f := b.failures
	b.mu.Unlock()
	return min(l.retryAfterFailures(f), l.cfg.MaxRetryAfter), false
}
