package region

import (
	"github.com/afloat/afloat/quota"
)

// Status is a tenant's state in the region, as Limiter.Status reports it.
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

// Status reports a tenant's lease and balance at now, for a look at the
// region (a status page, metrics, readiness), not for a request's answer:
// it takes the tenant's lock, as renewals do, for the epoch, and a front
// answers from DecideAt's one read instead. Safe for concurrent use.
func (l *Limiter) Status(now int64, tenant string) Status {
	b := l.bucket(tenant)
	if b == nil {
		return Status{}
	}
	s := b.cur.Load()
	now = s.at(now) // a lease installed after now was read is the one in use
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
