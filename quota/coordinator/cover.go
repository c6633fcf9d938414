package coordinator

import (
	"slices"
	"time"

	"github.com/afloat/afloat/quota"
)

// Covered renewals: renewals that wait for no write.
//
// Every grant that changes a share is written to the ledger before it is
// sent, so that a successor keeps counting it. Most renewals change
// nothing but the lease's end: a region renews every half lease, and
// with 100,000 tenants in three regions a write for each would be 60,000
// ledger writes a second, which no etcd on two cores takes. A renewal
// that changes nothing durable is answered without a write instead:
//
//   - the region holds the newest lease this coordinator answered it,
//     asks for the same shares with nothing to transfer, under the same
//     terms, and the written lease behind that one (its cover) still
//     counts here. It is answered with a new lease — a new ID, the same
//     shares, the ordinary end — that is not written: a covered lease.
//     Its step has no ops (Step.Covered), and the runner answers it once
//     its journal has it, ahead of the writes in its queue;
//   - the cover counts, here, until the last lease it covers ends: its
//     ledger record stays (no op ends it) for as long as a lease standing
//     on it may be in use, whatever end the record itself says;
//   - covered leases need IDs a successor will not hand out again: the
//     ledger keeps a reservation of IDs (ReserveIDs), taken in blocks,
//     and a covered lease takes one only below the reservation
//     acknowledged;
//   - a covered lease, like any answer without a write, is answered only
//     under a proof that this coordinator still leads (Core.Proven):
//     a write would prove it as it lands; here the ledger must (Led).
//
// Why the bound holds. A covered lease L has its cover's rate and burst,
// and the cover counts here until L ends, so while both count the region
// counts as the larger of equal shares: L changes no sum. The cover is
// never ended while a lease it covers may be in use: a request that holds
// a covered lease ends the older leases except its cover, and a region
// that moves on to a written lease ends the cover only once it holds that
// lease (it never goes back). A successor restores the cover from the
// ledger and counts it for a whole lease duration and margin from its
// take-over; every covered lease was answered under a proof that its
// coordinator led when it took it — before any take-over — so it ends
// within a lease duration and margin of a moment before the successor's
// count began: inside it. The successor ends a restored record only once
// the region holds one of the successor's own leases, or it expires: a
// request that holds a lease the successor does not know (a covered one)
// ends nothing there, and neither does the region's return of the
// record itself, which it gives back as it installs a covered one
// (mayCover). A coordinator deposed unawares answers nothing without a
// write once its proof has lapsed, and can write nothing, being fenced.
//
// The event log names each covered lease's cover (the lease event's
// cover), and the checker (eventlog) keeps a covered lease counting
// across a restart while its cover is live, and ends it with its cover.

// mayCover says whether l, a lease this core counts, may be the cover of
// a covered lease it does not know: any written lease of a predecessor
// (an older epoch) may be. A region installing such a covered lease gives
// l back as it would any lease it replaced, so a return of l does not end
// it — the region's next request, holding a lease of this core's, ends
// it, or it expires. A return of a lease this core wrote is safe to take:
// its covered leases are known to it.
func mayCover(l counted, epoch uint64) bool {
	return l.cover == 0 && l.Epoch < epoch
}

// idBlock is how many lease IDs a reservation takes at a time; a new one
// is proposed when fewer than half of them are left. Large, so that at
// 60,000 covered renewals a second the half left lasts half a minute:
// a reservation queued behind seconds of writes still lands before the
// IDs run out. (With 65,536, half a second of writes queued was enough:
// every renewal then needed a write of its own, which queued more.)
const idBlock = 1 << 22

// extension is what a step that reserves IDs tells Advance once written.
type extension struct {
	ids uint64 // the reservation proposed; 0: none
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
// the region holds the newest lease this coordinator answered (none newer
// counts, none is on its way), though it may have expired; the new shares
// equal its shares with nothing to transfer, under the same terms; its
// cover counts here; and an ID is reserved.
//
// A coordinator that has answered the region nothing yet — it took over —
// may cover with a predecessor's written lease instead (takenOver).
func (c *Core) coverable(t quota.Tenant, rs *regionState, req quota.Request, rate, burst, transfer quota.Micro) bool {
	last := rs.last
	held := last.Lease
	if held.ID == 0 {
		return c.takenOver(rs, req, rate, burst, transfer)
	}
	switch {
	case rs.cover == 0 || c.nextID >= c.idsAck:
		return false
	case req.Holding == 0 || rs.proposed != 0:
		return false
	case held.ID != req.Holding && !lostCovered(rs, req.Holding):
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
	}
	return true
}

// lostCovered says whether a region that holds h, not the newest lease
// it was answered, was left behind by covered answers it never got (a
// call it gave up on): h stands on the region's cover (is it, or is
// covered by it), and so does every lease newer than h. Then h, those
// leases and a new covered lease all have the cover's shares, and the
// cover counts until the last of them ends, so a covered answer changes
// no sum, as for the newest. Without it, every covered answer of a call
// that timed out cost a write at its tenant's next renewal — under a
// strained coordinator, the calls timing out by the thousand made the
// writes that made more calls time out.
func lostCovered(rs *regionState, h uint64) bool {
	if coverOf(rs, h) != rs.cover {
		return false
	}
	for _, l := range rs.live {
		if l.ID > h && l.cover != rs.cover {
			return false
		}
	}
	return true
}

// takenOver says whether a successor — a coordinator that has answered
// the region nothing yet for the tenant — can answer a renewal with a
// covered lease standing on the newest written lease its predecessors
// left of the region, restored from the ledger: the region holds a
// predecessor's lease (written, or covered by one of its records); that
// record counts here and has the shares the renewal would get, with
// nothing to transfer; and an ID is reserved. It makes the record the
// region's cover.
//
// Why it is safe: the record is in the ledger and counts here (for a
// lease and margin from the take-over, and then as long as a lease it
// covers), as any cover does, and a covered lease has its shares, so no
// sum changes; the region spends under its predecessor's lease until it
// installs the new one, and every lease of the predecessor counts here
// by its record until it ends. Why it matters: after a take-over every
// region holds a predecessor's lease, and writing a new one for each —
// 300,000 at 100,000 tenants — outlasted the leases themselves.
func (c *Core) takenOver(rs *regionState, req quota.Request, rate, burst, transfer quota.Micro) bool {
	if c.nextID >= c.idsAck || req.Holding == 0 || rs.proposed != 0 || transfer != 0 {
		return false
	}
	var w *counted
	for i := range rs.live {
		if l := &rs.live[i]; l.cover == 0 && l.Epoch < c.epoch && (w == nil || l.ID > w.ID) {
			w = l
		}
	}
	if w == nil || w.Rate != rate || w.Burst != burst || slices.ContainsFunc(rs.live, func(l counted) bool { return l.Epoch == c.epoch }) {
		return false
	}
	rs.cover = w.ID
	return true
}

// renewCovered answers a renewal that coverable admits with a covered
// lease, and keeps its cover counting until that lease ends. The step x
// (with the ends Renew made) is answered without a write; its ops, and a
// new reservation of IDs if one is due, go to a deferred step.
func (c *Core) renewCovered(x Step, ts *tenantState, rs *regionState, req quota.Request, targets targetShares, now time.Duration, short bool) Step {
	t := ts.t
	var cover quota.Lease
	for _, l := range rs.live {
		if l.ID == rs.cover {
			cover = rs.lease(l)
		}
	}
	lease := quota.Lease{
		ID: c.nextID, Tenant: t.Name, Region: req.Region, Epoch: c.epoch,
		Rate: cover.Rate, Burst: cover.Burst,
		Activates: now, Expires: now + t.LeaseDuration + t.Margin(),
	}
	c.nextID++
	c.count(ts, rs, counted{terms: termsOf(lease), until: lease.Expires, cover: rs.cover})
	for i := range rs.live {
		if l := &rs.live[i]; l.ID == rs.cover {
			l.until = max(l.until, lease.Expires)
		}
	}
	d := Step{Ops: x.Ops, at: now}
	x.Ops = nil
	c.reserveIDs(&d)
	if len(d.Ops) > 0 {
		c.deferred = append(c.deferred, d)
	}
	x.Granted, x.Covered, x.Cover = lease, true, rs.cover
	c.grant(&x, ts, rs, req, targets, now, lease, short)
	return x
}

// Keep answers req — a renewal whose grant Renew proposed and Abandon
// took back, its write unable to land by the caller's deadline behind
// the writes queued ahead — with a covered lease at the shares the region
// holds, when a covered answer may stand on its cover there (coverable,
// with nothing to transfer): the region keeps its shares on no write
// until a renewal's write can land, which changes no sum (see above).
// Refused instead, such a renewal — one whose tenant's traffic moved its
// shares — asked again behind the same queue and was refused again, until
// its lease lapsed: the last tenants leased again after every region
// restarted at 100,000 tenants were such ones, seconds after the rest
// (docs/quota/design.md, "The coordinator's own overload"). false when no
// covered answer may be given: Renew's refusal stands.
func (c *Core) Keep(now time.Duration, req quota.Request) (x Step, ok bool) {
	defer func() { x.at = now }()
	if c.stopped != nil {
		return Step{}, false
	}
	ts, rs, err := c.lookup(req.Tenant, req.Region)
	if err != nil || c.admit(req.Region, req.Epoch, req.Incarnation) != nil || c.restoring(now) != nil {
		return Step{}, false
	}
	req.Tenant, req.Region = ts.t.Name, rs.name
	held := rs.last.Lease
	if held.ID == 0 || !c.coverable(ts.t, rs, req, held.Rate, held.Burst, 0) {
		return Step{}, false
	}
	targets := ts.targets(now)
	target := targets.of(req.Region)
	short := held.Rate < target.Rate || held.Burst < target.Burst
	return c.renewCovered(x, ts, rs, req, targets, now, short), true
}

// reserveIDs adds a reservation of IDs to x when one is due: none is on
// its way, and fewer than half a block are left.
func (c *Core) reserveIDs(x *Step) {
	if c.idsProposed != 0 || c.idsAck > c.nextID+idBlock/2 {
		return
	}
	c.idsProposed = c.nextID + idBlock
	x.Ops = append(x.Ops, Op{Kind: ReserveIDs, ID: c.idsProposed})
	x.ext.ids = c.idsProposed
}

// extended takes what a step's write means for reservations: written
// (err nil), the IDs are reserved; either way none is on its way any
// more.
func (c *Core) extended(x Step, err error) {
	if e := x.ext.ids; e != 0 {
		if err == nil {
			c.idsAck = max(c.idsAck, e)
		}
		if c.idsProposed == e {
			c.idsProposed = 0
		}
	}
}

// Deferred returns, and forgets, the steps the core proposed that no
// caller waits for: reservations of IDs, and the ends a covered renewal
// made. The runner persists them like any step, in order after the steps
// it already has, and acknowledges each (Advance): a failure only delays
// them.
func (c *Core) Deferred() []Step {
	d := c.deferred
	c.deferred = nil
	return d
}
