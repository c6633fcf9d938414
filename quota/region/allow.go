package region

import (
	"errors"
	"sync/atomic"

	"github.com/afloat/afloat/quota"
)

// Allow takes cost tokens of tenant's quota now, or refuses. Shorthand
// for AllowAt(l.Now(), tenant, cost); safe for concurrent use.
func (l *Limiter) Allow(tenant string, cost int64) bool {
	return l.AllowAt(l.Now(), tenant, cost)
}

// ErrTooLarge is what Decision.Err wraps, with the figures, for a request
// that costs more than the tenant's quota can ever hold in the region
// under its current limits (quota.MaxBurstShare, or the emergency
// allowance if larger): waiting will not help, so a front answers that
// the request can never be admitted, with no time to retry.
var ErrTooLarge = errors.New("region: the request costs more than the tenant's quota can ever admit")

// AllowAt takes cost tokens of tenant's quota at now, or refuses: from the
// leased bucket while the lease is valid; in best-effort mode, without a
// valid lease, from the emergency allowance. An unknown tenant and a cost
// below 1 are refused, and so is a cost above what the tenant's quota can
// ever hold here, once a grant has said what that is (Decision.MaxCost):
// that refusal is counted apart (Counts.TooLarge), neither as demand the
// region reports nor as a reason to ask for more. It is DecideAt's
// decision without the rest of the answer, for a caller that needs only
// yes or no; a front that answers more asks DecideAt, once. It takes no
// lock; safe for concurrent use.
func (l *Limiter) AllowAt(now int64, tenant string, cost int64) bool {
	b := l.bucket(tenant)
	if b == nil {
		l.unknown.Add(1)
		return false
	}
	_, ok := b.spend(now, cost, b.ceil.Load())
	return ok
}

// spend is AllowAt's decision on b, given ceil (b.ceil as the caller read
// it), and the state it was made on: the lease in use, reloaded if the
// one read first was replaced meanwhile.
func (b *bucket) spend(now, cost, ceil int64) (*state, bool) {
	s := b.cur.Load()
	if cost < 1 {
		return s, false
	}
	if ceil != 0 && cost >= ceil {
		b.refusedLarge.Add(cost)
		return s, false
	}
	for s.valid(s.at(now)) {
		ok, retry, idle := s.take(s.at(now), cost)
		if retry {
			s = b.cur.Load()
			continue
		}
		if ok {
			if idle > 0 && s.mode == quota.BestEffort {
				b.refillReserve(s.overflow(idle))
			}
			return s, true
		}
		b.refuse(&b.refusedEmpty, cost)
		return s, false
	}
	b.offered.Add(cost)
	if s.mode == quota.BestEffort {
		if b.spendReserve(cost) {
			b.emergency.Add(cost)
			return s, true
		}
		b.refuse(&b.refusedSpent, cost)
		return s, false
	}
	b.refuse(&b.refusedNoLease, cost)
	return s, false
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
