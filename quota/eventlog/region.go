package eventlog

import (
	"github.com/afloat/afloat/quota"
	"github.com/afloat/afloat/quota/region"
)

// The one translation of a region's lease changes into events: what its
// limiter says it did (region.Journal's records: Installed, Expired,
// Returned) becomes the install, supersede, expire and return lines. A
// region agent's process calls it with Unix time (quota/agent) and the
// chaos harness with its virtual time, so that the harness's proof checks
// the lines the product writes, not a copy of them. clock maps the
// limiter's clock to the log's.

// InstallEvents writes to w the events of a grant put into use at at: the
// end of the lease it replaced — superseded at at, if it was still valid
// (in.Dropped), or run out at its own end (in.Expired) — then the install.
// Nothing for a grant not installed.
func InstallEvents(in region.Installed, at int64, clock func(int64) int64, w Writer) {
	if !in.OK() {
		return
	}
	l := in.Lease
	var e Event // one, reused: w copies what it keeps
	switch {
	case in.Dropped.ID != 0:
		e = Event{T: clock(at), Kind: Supersede, Tenant: l.Tenant, Region: l.Region, ID: in.Dropped.ID}
		w.Write(&e)
	case in.Expired.ID != 0:
		e = Event{T: clock(in.ExpiredAt), Kind: Expire, Tenant: l.Tenant, Region: l.Region, ID: in.Expired.ID}
		w.Write(&e)
	}
	e = Event{T: clock(at), Kind: Install, Tenant: l.Tenant, Region: l.Region, ID: l.ID, Epoch: l.Epoch}
	w.Write(&e)
}

// ExpireEvent writes to w the event of lease run out at at: the region
// stopped spending under it (region.Limiter.Expired).
func ExpireEvent(lease quota.Lease, at int64, clock func(int64) int64, w Writer) {
	e := Event{T: clock(at), Kind: Expire, Tenant: lease.Tenant, Region: lease.Region, ID: lease.ID}
	w.Write(&e)
}

// ReturnEvent writes to w the event of a lease given back at at, with the
// balance handed over.
func ReturnEvent(ret quota.Return, at int64, clock func(int64) int64, w Writer) {
	e := Event{T: clock(at), Kind: Return, Tenant: ret.Tenant, Region: ret.Region, ID: ret.LeaseID, Balance: ret.Balance}
	w.Write(&e)
}
