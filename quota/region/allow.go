package region

import (
	"sync/atomic"

	"github.com/afloat/afloat/quota"
)

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
	if b == nil {
		l.unknown.Add(1)
		return false
	}
	if cost < 1 {
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

// offeredSince reads (and with reset, clears) the tokens offered since
// the last request: those of the current lease and the rest.
func (b *bucket) offeredSince(reset bool) int64 {
	s := b.cur.Load()
	if reset {
		return b.offered.Swap(0) + s.takeOffered()
	}
	return b.offered.Load() + s.peekOffered()
}

// refuse counts a refusal of cost tokens for its reason.
func (b *bucket) refuse(reason *atomic.Int64, cost int64) {
	reason.Add(cost)
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
