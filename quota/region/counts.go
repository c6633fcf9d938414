package region

// Counts are a tenant's admissions and refusals in the region since New,
// in tokens (a request of cost c counts c), by reason: what a metrics
// collector reads at scrape time. Allow pays nothing for them on its
// admitting path — the admissions under a lease are derived from the
// demand counters the limiter keeps anyway (offered less refused) — and
// one atomic add, where it already wrote a counter, on the others.
//
// They are exact when no request races a renewal or the read; a read
// racing requests may be a few tokens off, and a request racing the
// replacement of its lease may go uncounted (as it goes missing from the
// demand the region reports): a collector should not let a counter go
// back.
type Counts struct {
	// Admitted under a valid lease.
	Admitted int64
	// Emergency: admitted from the emergency allowance, without a valid
	// lease (best-effort mode).
	Emergency int64
	// Exhausted: refused under a valid lease that lacked the tokens.
	Exhausted int64
	// NoLease: refused without a valid lease (hard mode, or before the
	// first grant).
	NoLease int64
	// AllowanceSpent: refused without a valid lease, the emergency
	// allowance spent (best-effort mode).
	AllowanceSpent int64
	// TooLarge: refused as costing more than the tenant's quota can ever
	// hold in the region (Decision.Never); not counted as demand.
	TooLarge int64
}

// Counts reports tenant's counts, false for a tenant the limiter does not
// serve. Safe for concurrent use; it takes the tenant's lock, as a
// renewal does, never Allow's path.
func (l *Limiter) Counts(tenant string) (Counts, bool) {
	b := l.bucket(tenant)
	if b == nil {
		return Counts{}, false
	}
	b.mu.Lock()
	offered := b.offeredAcc + b.offeredSince(false)
	b.mu.Unlock()
	c := Counts{
		Emergency: b.emergency.Load(), Exhausted: b.refusedEmpty.Load(),
		NoLease: b.refusedNoLease.Load(), AllowanceSpent: b.refusedSpent.Load(),
		TooLarge: b.refusedLarge.Load(),
	}
	c.Admitted = max(0, offered-c.Emergency-c.Exhausted-c.NoLease-c.AllowanceSpent)
	return c, true
}

// UnknownTenant is how many requests named a tenant the limiter does not
// serve, since New.
func (l *Limiter) UnknownTenant() int64 { return l.unknown.Load() }

// Grants is how many grants Run has received that Install answered with
// o, since New (the sum over outcomes other than Accepted is
// RunStats.Ignored). Grants installed by another runner calling Install
// are not counted.
func (l *Limiter) Grants(o Outcome) int64 {
	if o < 0 || o >= numOutcomes {
		return 0
	}
	return l.counters.outcomes[o].Load()
}

// Outcomes lists every Outcome, in order.
func Outcomes() []Outcome {
	out := make([]Outcome, numOutcomes)
	for i := range out {
		out[i] = Outcome(i)
	}
	return out
}
