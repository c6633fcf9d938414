package region

import (
	"math"
	"strconv"
	"time"

	"github.com/afloat/afloat/quota"
)

// Outcome is what Install did with a grant: installed it, or why not.
type Outcome int

const (
	// Accepted: the grant's lease is now in use.
	Accepted Outcome = iota
	// NotThisRegion: the grant is for another region, or a tenant this
	// limiter does not serve.
	NotThisRegion
	// StaleEpoch: the grant comes from an epoch older than one the region
	// has seen; a newer coordinator has taken over.
	StaleEpoch
	// NotNewer: the lease is not newer than the one in use (a duplicate,
	// or a grant overtaken by a later one).
	NotNewer
	// UnknownRequest: the grant answers no request the region remembers.
	UnknownRequest
	// OverOnArrival: the lease had already ended when it arrived.
	OverOnArrival
	// Kept: the coordinator answered with the lease in use, unchanged
	// (quota.Grant.Unchanged): the request is answered, and the lease
	// stays as it is — same shares, same end.
	Kept

	numOutcomes // how many outcomes there are
)

func (o Outcome) String() string {
	switch o {
	case Accepted:
		return "accepted"
	case NotThisRegion:
		return "not this region's tenant"
	case StaleEpoch:
		return "stale epoch"
	case NotNewer:
		return "not newer than the lease in use"
	case UnknownRequest:
		return "answers an unknown request"
	case OverOnArrival:
		return "over on arrival"
	case Kept:
		return "kept the lease in use"
	}
	return "outcome(" + strconv.Itoa(int(o)) + ")"
}

// Installed is what Install did with a grant.
type Installed struct {
	// Outcome says whether the grant was installed, or why not.
	Outcome Outcome
	// Lease is the lease now in use, if the grant was installed.
	Lease quota.Lease
	// Return, if not nil, gives the replaced lease back to the coordinator
	// with the tokens the new burst released; send it. None when giving
	// it back would free nothing: the new lease is at least as large in
	// rate and burst and no token was released — a renewal that changed
	// nothing but the end, most of them — since the region's next request
	// (which holds the new lease) ends the old one at the coordinator all
	// the same, and a return for each renewal would double the calls.
	Return *quota.Return
	// Dropped is the replaced lease, if it was valid until now: the
	// region stopped spending under it at the install.
	Dropped quota.Lease
	// Expired is the lease in use before, if it ran out before the new
	// one came and that was not yet said (Limiter.Expired): the region
	// stopped spending under it at ExpiredAt, on this clock.
	Expired   quota.Lease
	ExpiredAt int64
	// Until is when the new lease ends, on this clock.
	Until int64
}

// OK says whether the grant was installed.
func (in Installed) OK() bool { return in.Outcome == Accepted }

// Install puts a grant into use at now, the moment it arrived. The
// balance carries over — truncated to the new burst, never refilled —
// plus any tokens the coordinator transferred; after a gap the bucket
// starts empty. A grant from an older epoch, older than the lease in use,
// answering an unknown request, or already over is ignored.
func (l *Limiter) Install(now int64, g quota.Grant) Installed {
	b := l.bucket(g.Lease.Tenant)
	if b == nil || g.Lease.Region != l.cfg.Region {
		return Installed{Outcome: NotThisRegion}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	defer l.noteAsk(b) // for decisions, which read no field under mu
	sent := b.sent[g.Seq%uint64(len(b.sent))]
	switch {
	case g.Lease.Epoch < b.epoch:
		return Installed{Outcome: StaleEpoch}
	case g.Unchanged && g.Lease.ID == b.held && g.Lease.ID != 0 && sent.seq == g.Seq && g.Seq != 0:
		// The lease in use stands: the request is answered, and nothing
		// else changes — in particular not the lease's end, which stays
		// measured from the request that got it, since the coordinator
		// counts it only until the end it wrote then.
		b.answered = max(b.answered, g.Seq)
		if g.Seq == b.seq {
			b.failures = 0
		}
		b.short = g.Short
		b.setCeiling(g)
		return Installed{Outcome: Kept, Lease: g.Lease, Until: b.cur.Load().until}
	case g.Unchanged || g.Lease.ID <= b.held:
		// An Unchanged answer for a lease other than the one in use (the
		// region moved on since) is no lease to install either.
		return Installed{Outcome: NotNewer}
	}
	if sent.seq != g.Seq || g.Seq == 0 {
		return Installed{Outcome: UnknownRequest}
	}
	// Both ends of the lease are readings of the monotonic clock: drift
	// is the only error left to take off.
	valid := time.Duration(float64(g.ValidFor-g.Margin) * (1 - l.cfg.MaxDrift))
	until := sent.at + int64(valid)
	if until <= now {
		return Installed{Outcome: OverOnArrival}
	}
	b.epoch = max(b.epoch, g.Lease.Epoch)
	atomicMax(&l.epochHigh, b.epoch)
	b.answered = max(b.answered, g.Seq)
	if g.Seq == b.seq {
		b.failures = 0
	}
	b.held, b.resumed, b.resumedUntil = g.Lease.ID, 0, 0
	b.leaseSent, b.short = sent.at, g.Short
	b.setCeiling(g)
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
		ns.withCaches(l.cachesNow(), l.broken.cachesOverBurst())
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
		b.using = quota.Lease{} // said: superseded now
		if bal > kept || old.lease.Rate > g.Lease.Rate || old.lease.Burst > g.Lease.Burst {
			inst.Return = &quota.Return{
				Tenant: g.Lease.Tenant, Region: l.cfg.Region, LeaseID: old.lease.ID,
				Epoch: b.epoch, Balance: bal - kept,
			}
		}
	} else if old.lease.ID != 0 {
		old.seal()
	}
	// The old lease's count of offered tokens carries over to the demand.
	// (An Allow that read the old state just before it was sealed may
	// still add to it: a few tokens of demand lost, nothing more.)
	b.offered.Add(old.takeOffered())
	if l.broken.renewRefills() {
		kept = g.Lease.Burst // wrong on purpose: a new burst out of nothing
	}
	kept = min(kept+g.Lease.Transfer, g.Lease.Burst)
	ns.fill(kept, now)
	b.cur.Store(ns)
	if b.using.ID != 0 {
		// In use until it ran out, and not said yet.
		inst.Expired, inst.ExpiredAt = b.using, b.usingUntil
	}
	b.using, b.usingUntil = g.Lease, until
	inst.Lease, inst.Until = g.Lease, until
	return inst
}

// Expired says, once, that the lease tenant spent under has run out: the
// lease, and when it ended on this clock; false if the tenant spends
// under a valid lease, or none, or its end was said already (by Expired,
// by an Install that replaced it, by a return). A runner asks it when a
// lease's end has come (Run does, from its schedule), so that the region's
// journal records every lease it stopped spending under, and when — the
// limiter's own account, not a copy kept beside it.
func (l *Limiter) Expired(now int64, tenant string) (quota.Lease, int64, bool) {
	b := l.bucket(tenant)
	if b == nil {
		return quota.Lease{}, 0, false
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.expired(now)
}

// expired is Expired for b, under b.mu.
func (b *bucket) expired(now int64) (quota.Lease, int64, bool) {
	if b.using.ID == 0 {
		return quota.Lease{}, 0, false
	}
	if s := b.cur.Load(); s.lease.ID == b.using.ID && s.valid(now) {
		return quota.Lease{}, 0, false
	}
	l, at := b.using, b.usingUntil
	b.using = quota.Lease{}
	return l, at, true
}
