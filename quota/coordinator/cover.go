package coordinator

import (
	"slices"
	"time"

	"github.com/afloat/afloat/quota"
)

// Covered renewals: renewals that wait for no write.
//
// Every grant is written to the ledger before it is sent, so that a
// successor keeps counting it. With etcd as the ledger that puts etcd's
// own leader elections — a second or two with stock settings, during
// which nothing commits — in the path of every renewal, and a region's
// lease runs out while the election lasts. A reserve (Config.Reserve)
// takes the ledger out of the path of a renewal that changes nothing but
// the lease's end:
//
//   - a written lease's record reaches Reserve past the lease's end
//     (Expires = activation + duration + margin + Reserve), and the core
//     counts it that long: the record stands for any lease of the same
//     region with the same shares and nothing transferred that ends
//     within it;
//   - such a renewal is answered with a new lease (a new ID, the same
//     shares, the ordinary end) that is not written: a covered lease. Its
//     step has no ops (Step.Covered) and the runner answers it once its
//     journal has it, ahead of the writes in its queue;
//   - while covered renewals go on, the cover's record is moved further
//     out in the background (a deferred step rewrites it: activation now,
//     end Reserve past a lease from now) whenever less than two thirds of
//     the reserve is left beyond the next lease's end, so that a ledger
//     outage shorter than that stops no renewal;
//   - covered leases need IDs a successor will not hand out again: the
//     ledger keeps a reservation of IDs (ReserveIDs), taken in blocks, and
//     a covered lease takes one only below the reservation acknowledged.
//
// Why the bound holds. A covered lease L has its cover's rate and burst
// and ends (counted, with the margin) no later than the cover's record,
// as acknowledged written, reaches. In this core the cover counts until
// then, and a region counts as the largest of its live leases, so L
// changes no sum. The cover is never ended while a lease it covers may be
// in use: a request that holds a covered lease ends the older leases
// except its cover, and a region that moves on to a written lease ends
// the cover only once it holds that lease (never going back). A
// successor restores the cover from the ledger and counts it for the
// whole length of its record from its take-over — past every covered
// lease's end — and ends it only once the region holds one of the
// successor's own leases, or it expires: a request that holds a lease the
// successor does not know (a covered one) ends nothing there, and neither
// does the region's return of the cover itself, which it gives back as it
// installs a covered one (mayCover).
// A coordinator deposed unawares may go on answering covered renewals,
// as it answers unchanged ones, for no longer than its cover's record
// reaches: the successor counts that record the same way; the region
// never installs them once it holds a successor's lease (their IDs are
// below the successor's, and it never goes back); and it can extend no
// record, as its writes are fenced.
//
// The event log names each covered lease's cover (the lease event's
// cover), and the checker (eventlog) keeps a covered lease counting
// across a restart while its cover is live, and ends it with its cover.

// mayCover says whether l, a lease this core counts, may be the cover of
// a covered lease it does not know: a predecessor's (an older epoch),
// written with a reserve (its record is longer than a lease and margin).
// A region installing such a covered lease gives l back as it would any
// lease it replaced, so a return of l ends it only if it is not one —
// the region's next request, holding a lease of this core's, ends it, or
// it expires. A return of a lease this core wrote is safe to take: its
// covered leases are known to it.
func mayCover(t quota.Tenant, l counted, epoch uint64) bool {
	return l.cover == 0 && l.Epoch < epoch && l.Expires-l.Activates > t.LeaseDuration+t.Margin()
}

// idBlock is how many lease IDs a reservation takes at a time; a new one
// is proposed when fewer than half of them are left.
const idBlock = 1024

// extension is what a step that extends a cover's record, or reserves
// IDs, tells Advance once written.
type extension struct {
	tenant, region string
	cover          uint64
	end            time.Duration // the record's new end; 0: no extension
	ids            uint64        // the reservation proposed; 0: none
}

// coverOf is the cover of lease id among the region's live leases: the
// written lease whose record stands for it, id itself if it was written,
// 0 if it does not count.
func coverOf(rs *regionState, id uint64) uint64 {
	for _, l := range rs.live {
		if l.ID == id {
			if l.cover != 0 {
				return l.cover
			}
			return l.ID
		}
	}
	return 0
}

// coverable says whether a renewal can be answered with a covered lease:
// a reserve is set; the region holds the newest lease this coordinator
// answered (none newer counts, none is on its way), though it may have
// expired; the new shares equal its shares with nothing to transfer,
// under the same terms; its cover counts here, and its record, as
// acknowledged written, reaches past the new lease's end; and an ID is
// reserved.
func (c *Core) coverable(t quota.Tenant, rs *regionState, req quota.Request, now time.Duration, rate, burst, transfer quota.Micro) bool {
	last := rs.last
	held := last.Lease
	switch {
	case c.reserve <= 0 || rs.cover == 0 || c.nextID >= c.idsAck:
		return false
	case req.Holding == 0 || held.ID != req.Holding || rs.proposed != 0:
		return false
	case slices.ContainsFunc(rs.live, func(l counted) bool { return l.ID > held.ID }) || coverOf(rs, rs.cover) != rs.cover:
		// A newer lease counts, or the cover ended. (The held lease may
		// have expired — a region whose renewal came late — and be
		// covered again all the same: rs.last is the cover or one it
		// covers, since a written grant acknowledged becomes both.)
		return false
	case rate != held.Rate || burst != held.Burst || transfer != 0:
		return false
	case last.Mode != t.Mode || last.Emergency != t.Emergency || last.Ceiling != quota.MaxBurstShare(t) ||
		last.ValidFor != t.LeaseDuration || last.Margin != t.Margin():
		return false
	case now+t.LeaseDuration+t.Margin() > rs.coverEnd:
		return false
	}
	return true
}

// renewCovered answers a renewal that coverable admits with a covered
// lease. The step x (with the ends Renew made) is answered without a
// write; its ops, and the extension of the cover's record or a new
// reservation of IDs if either is due, go to a deferred step.
func (c *Core) renewCovered(x Step, ts *tenantState, rs *regionState, req quota.Request, targets map[string]quota.Share, now time.Duration, short bool) Step {
	t := ts.t
	held := rs.last.Lease
	lease := quota.Lease{
		ID: c.nextID, Tenant: t.Name, Region: req.Region, Epoch: c.epoch,
		Rate: held.Rate, Burst: held.Burst,
		Activates: now, Expires: now + t.LeaseDuration + t.Margin(),
	}
	c.nextID++
	rs.live = append(rs.live, counted{Lease: lease, until: lease.Expires, cover: rs.cover})
	d := Step{Ops: x.Ops}
	x.Ops = nil
	if !rs.extending && rs.coverEnd-lease.Expires < 2*c.reserve/3 {
		end := lease.Expires + c.reserve
		for i := range rs.live {
			if l := &rs.live[i]; l.ID == rs.cover {
				rec := l.Lease
				rec.Activates, rec.Expires = now, end
				d.Ops = append(d.Ops, Op{Kind: PutLease, Lease: rec})
				l.until = max(l.until, end)
			}
		}
		rs.extending = true
		d.ext = extension{tenant: t.Name, region: req.Region, cover: rs.cover, end: end}
	}
	c.reserveIDs(&d)
	if len(d.Ops) > 0 {
		c.deferred = append(c.deferred, d)
	}
	x.Granted, x.Covered, x.Cover = lease, true, rs.cover
	c.grant(&x, ts, rs, req, targets, now, lease, short)
	return x
}

// reserveIDs adds a reservation of IDs to x when one is due: a reserve is
// set, none is on its way, and fewer than half a block are left.
func (c *Core) reserveIDs(x *Step) {
	if c.reserve <= 0 || c.idsProposed != 0 || c.idsAck > c.nextID+idBlock/2 {
		return
	}
	c.idsProposed = c.nextID + idBlock
	x.Ops = append(x.Ops, Op{Kind: ReserveIDs, ID: c.idsProposed})
	x.ext.ids = c.idsProposed
}

// extended takes what a step's write means for covers and reservations:
// written (err nil), the cover's record reaches its new end and the IDs
// are reserved; either way nothing is on its way any more.
func (c *Core) extended(x Step, err error) {
	e := x.ext
	if e.ids != 0 {
		if err == nil {
			c.idsAck = max(c.idsAck, e.ids)
		}
		if c.idsProposed == e.ids {
			c.idsProposed = 0
		}
	}
	if e.end == 0 {
		return
	}
	ts := c.tenants[e.tenant]
	if ts == nil {
		return
	}
	rs := ts.regions[e.region]
	if rs == nil || rs.cover != e.cover {
		return
	}
	rs.extending = false
	if err == nil {
		rs.coverEnd = max(rs.coverEnd, e.end)
	}
}

// Deferred returns, and forgets, the steps the core proposed that no
// caller waits for: the extensions of covers' records, reservations of
// IDs, and the ends a covered renewal made. The runner persists them
// like any step, in order after the steps it already has, and
// acknowledges each (Advance): a failure only delays them.
func (c *Core) Deferred() []Step {
	d := c.deferred
	c.deferred = nil
	return d
}
