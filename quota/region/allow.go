package region

import (
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/afloat/afloat/quota"
)

// Allow takes cost tokens of tenant's quota now, or refuses. Shorthand
// for AllowAt(l.Now(), tenant, cost).
func (l *Limiter) Allow(tenant string, cost int64) bool {
	return l.AllowAt(l.Now(), tenant, cost)
}

// ErrTooLarge is what Admissible returns, wrapped with the figures, for
// a request that costs more than the tenant's quota can ever hold in the
// region under its current limits (quota.MaxBurstShare, or the emergency
// allowance if larger): waiting will not help, so a front answers that
// the request can never be admitted, with no time to retry.
var ErrTooLarge = errors.New("region: the request costs more than the tenant's quota can ever admit")

// AllowAt takes cost tokens of tenant's quota at now, or refuses: from the
// leased bucket while the lease is valid; in best-effort mode, without a
// valid lease, from the emergency allowance. An unknown tenant and a cost
// below 1 are refused, and so is a cost above what the tenant's quota can
// ever hold here, once a grant has said what that is (Admissible): that
// refusal is counted apart (Counts.TooLarge), neither as demand the
// region reports nor as a reason to ask for more.
func (l *Limiter) AllowAt(now int64, tenant string, cost int64) bool {
	b := l.bucket(tenant)
	if b == nil {
		l.unknown.Add(1)
		return false
	}
	if cost < 1 {
		return false
	}
	if c := b.ceil.Load(); c != 0 && cost >= c {
		b.refusedLarge.Add(cost)
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
		b.refuse(&b.refusedEmpty, cost)
		return false
	}
	b.offered.Add(cost)
	if s.mode == quota.BestEffort {
		if b.spendReserve(cost) {
			b.emergency.Add(cost)
			return true
		}
		b.refuse(&b.refusedSpent, cost)
		return false
	}
	b.refuse(&b.refusedNoLease, cost)
	return false
}

// Admissible says whether a request of cost tokens of tenant's quota can
// ever be admitted in the region: nil if it can (or if no grant has said
// yet how large the tenant's quota may grow here); an error wrapping
// ErrTooLarge, with the most a request may cost, if it never can under
// the tenant's current limits; one wrapping quota.ErrUnknownTenant for a
// tenant the limiter does not serve. A front asks it after AllowAt
// refuses, to answer "never" instead of a time to retry. It takes no
// lock; safe for concurrent use.
func (l *Limiter) Admissible(tenant string, cost int64) error {
	b := l.bucket(tenant)
	if b == nil {
		return fmt.Errorf("%w: %q is not served in region %q", quota.ErrUnknownTenant, tenant, l.cfg.Region)
	}
	if c := b.ceil.Load(); c != 0 && cost >= c {
		return fmt.Errorf("%w: a cost of %d tokens; tenant %q's quota holds at most %d in region %q", ErrTooLarge, cost, tenant, c-1, l.cfg.Region)
	}
	return nil
}

// MaxCost is the most a request of tenant's may cost and still be
// admitted some day in the region under the tenant's current limits (a
// grant's Ceiling, or the emergency allowance if larger, in whole
// tokens); false while no grant has said, or for a tenant not served.
// Safe for concurrent use.
func (l *Limiter) MaxCost(tenant string) (int64, bool) {
	b := l.bucket(tenant)
	if b == nil {
		return 0, false
	}
	c := b.ceil.Load()
	return c - 1, c != 0
}

// setCeiling records the most a request may cost, from a grant: the
// larger of its Ceiling and, in best-effort mode, the emergency
// allowance. A grant without a Ceiling leaves it unknown.
func (b *bucket) setCeiling(g quota.Grant) {
	var c int64
	if g.Ceiling > 0 {
		most := g.Ceiling
		if g.Mode == quota.BestEffort {
			most = max(most, g.Emergency)
		}
		c = 1 + int64(most/quota.One)
	}
	if b.ceil.Load() != c {
		b.ceil.Store(c)
	}
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

// refuse counts a refusal of cost tokens for its reason. The first since
// the last request makes the tenant hot, and puts it up for Run's
// attention: asking now may get it more (Due).
func (b *bucket) refuse(reason *atomic.Int64, cost int64) {
	reason.Add(cost)
	if !b.hot.Load() && b.hot.CompareAndSwap(false, true) {
		b.att.push(b)
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
