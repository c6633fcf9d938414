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
