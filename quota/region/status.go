package region

import (
	"time"

	"github.com/afloat/afloat/quota"
)

// Status is a tenant's state in the region.
type Status struct {
	Lease   quota.Lease // the lease in use; ID 0 for none
	Valid   bool
	Until   int64 // on this clock
	Balance quota.Micro
	Reserve quota.Micro // emergency allowance left
	// Allowance is the emergency allowance's size, E, from the grants
	// (best-effort mode; 0 in hard mode).
	Allowance quota.Micro
	Epoch     uint64
}

// Status reports a tenant's lease and balance at now.
func (l *Limiter) Status(now int64, tenant string) Status {
	b := l.bucket(tenant)
	if b == nil {
		return Status{}
	}
	s := b.cur.Load()
	st := Status{Lease: s.lease, Valid: s.valid(now), Until: s.until, Reserve: quota.Micro(b.reserve.Load()),
		Allowance: quota.Micro(b.reserveCap.Load())}
	if st.Valid {
		st.Balance = s.balance(now)
	}
	b.mu.Lock()
	st.Epoch = b.epoch
	b.mu.Unlock()
	return st
}

// RetryAfter is when a refused request of cost tokens may succeed: the
// earliest of the inputs the spec names that can be known —
//
//  1. the next local refill under the current lease that fits cost;
//  2. the activation of a confirmed new lease: a grant is put into use
//     the moment it arrives, so a confirmed lease is the current one and
//     its activation is 1;
//  3. the expected recovery of the coordinator: without 1, the next
//     renewal the region will try, at its retry interval (doubling with
//     each unanswered request).
//
// 1 is a promise: ok is true. 3 is an expectation, not a promise — the
// coordinator may not answer — so ok is false and d is a bounded retry
// policy. d is capped at MaxRetryAfter either way.
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
	f, last, answered, seq := b.failures, b.lastSend, b.answered, b.seq
	b.mu.Unlock()
	// The next renewal: while a request is unanswered, the retry interval
	// after it (backing off); else a region that refuses asks for more
	// within HotInterval (Due), and one without a valid lease within Retry.
	wait := int64(l.retryAfterFailures(f))
	if answered >= seq {
		wait = int64(l.cfg.Retry)
		if s.valid(now) {
			wait = int64(l.cfg.HotInterval)
		}
	}
	next := last + wait - now
	if next <= 0 {
		// The ask is due or in flight: its answer is not here yet, and a
		// client told "0" would come straight back to the same refusal.
		// The soonest the answer can help is the first retry interval.
		next = int64(l.cfg.Retry)
	}
	return min(time.Duration(next), l.cfg.MaxRetryAfter), false
}
