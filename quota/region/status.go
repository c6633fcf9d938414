package region

import (
	"math"
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
// earliest of the three inputs the spec names that can be known —
//
//  1. the next local refill under the current lease that fits cost;
//  2. the activation of a confirmed new lease: a grant has arrived whose
//     lease starts later (ActivateAfter) — then, when its burst holds cost;
//  3. the expected recovery of the coordinator: with neither, the next
//     renewal the region will try, at its retry interval (doubling with
//     each unanswered request).
//
// 1 and 2 are promises: ok is true. 3 is an expectation, not a promise —
// the coordinator may not answer — so ok is false and d is a bounded
// retry policy. d is capped at MaxRetryAfter either way.
func (l *Limiter) RetryAfter(now int64, tenant string, cost int64) (d time.Duration, ok bool) {
	b := l.bucket(tenant)
	if b == nil {
		return l.cfg.MaxRetryAfter, false
	}
	best, known := int64(math.MaxInt64), false
	s := b.cur.Load()
	if s.valid(now) {
		if w, ok := s.waitFor(now, cost); ok {
			best, known = w, true
		}
	}
	b.mu.Lock()
	f, last, answered, seq := b.failures, b.lastSend, b.answered, b.seq
	pend := b.pending
	b.mu.Unlock()
	if pend.at > now && cost*int64(quota.One) <= int64(pend.burst) {
		if w := pend.at - now; w < best {
			best, known = w, true
		}
	}
	if known {
		return min(time.Duration(best), l.cfg.MaxRetryAfter), true
	}
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

// pendingGrant is a grant received whose lease starts later.
type pendingGrant struct {
	at    int64 // local ns: when it activates
	burst quota.Micro
}

// expect records that a grant has arrived whose lease starts at at: the
// second input of RetryAfter. Install clears it.
func (l *Limiter) expect(tenant string, at int64, burst quota.Micro) {
	if b := l.bucket(tenant); b != nil {
		b.mu.Lock()
		b.pending = pendingGrant{at: at, burst: burst}
		b.mu.Unlock()
	}
}
