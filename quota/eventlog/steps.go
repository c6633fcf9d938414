package eventlog

import (
	"time"

	"github.com/afloat/afloat/quota/coordinator"
)

// StepEvents writes to w the events of a coordinator's step, persisted at
// at (on the log's clock): an end for each lease it ended, a lease event
// for the lease it granted (with its cover, for a covered lease; none for
// a retry, answered with the grant it had), the lines of the tenant change
// it made (TenantChangeEvents), and a credit event for the credit a return
// added. clock maps the coordinator's clock, on which a lease's Activates
// and Expires are, to the log's.
//
// It is the one translation of a coordinator's steps into events: the
// coordinator's process calls it with Unix time (quota/coordinator/replica)
// and the chaos harness with its virtual time, so that the harness's proof
// checks the lines the product writes, not a copy of them.
func StepEvents(st coordinator.Step, at int64, clock func(time.Duration) int64, w Writer) {
	var e Event // one, reused: w copies what it keeps
	for _, en := range st.Ended {
		l := en.Lease
		e = Event{T: at, Kind: End, Tenant: l.Tenant, Region: l.Region, ID: l.ID, Epoch: l.Epoch, Why: string(en.Why)}
		w.Write(&e)
	}
	if l := st.Granted; l.ID != 0 {
		e = Event{T: at, Kind: Lease, Tenant: l.Tenant, Region: l.Region, ID: l.ID, Epoch: l.Epoch,
			Rate: l.Rate, Burst: l.Burst, Transfer: l.Transfer, Activates: clock(l.Activates), Expires: clock(l.Expires), Cover: st.Cover}
		w.Write(&e)
	}
	if ch := st.Tenant; ch != nil {
		for _, te := range TenantChangeEvents(at, ch.Op, ch.By, ch.Old, ch.New, ch.Dropped) {
			e = te
			w.Write(&e)
		}
	}
	if st.Credit > 0 {
		r := st.Returned
		e = Event{T: at, Kind: Credit, Tenant: r.Tenant, Region: r.Region, ID: r.LeaseID, Balance: st.Credit}
		w.Write(&e)
	}
}
