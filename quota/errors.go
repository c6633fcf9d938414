package quota

import (
	"errors"
	"fmt"
	"time"
)

// Errors of the quota packages. Test with errors.Is: they come wrapped with
// the detail.
var (
	// ErrConfig: a tenant or a component's configuration is out of range.
	ErrConfig = errors.New("quota: invalid configuration")
	// ErrStaleEpoch: a newer coordinator has fenced this one; it must stop.
	ErrStaleEpoch = errors.New("quota: stale epoch: a newer coordinator has taken over")
	// ErrUnknownTenant: no tenant of that name.
	ErrUnknownTenant = errors.New("quota: unknown tenant")
	// ErrUnknownRegion: the tenant's traffic does not enter in that region.
	ErrUnknownRegion = errors.New("quota: unknown region")
	// ErrOverCommitted: a set of leases breaks a conservation invariant.
	ErrOverCommitted = errors.New("quota: leases exceed the tenant's limits")
	// ErrRegionHeld: another agent (incarnation) holds the region, and
	// some of the leases granted to it still count; a new agent may
	// attach once they have all stopped counting (HeldError says when).
	ErrRegionHeld = errors.New("quota: another agent holds the region")
	// ErrSuperseded: the request's incarnation is not the one that holds
	// its region — another agent has attached since, or this one never
	// attached (or detached): it must attach again before it renews.
	ErrSuperseded = errors.New("quota: superseded: this agent's incarnation does not hold the region")
	// ErrUnverifiedEpoch: the request claims an epoch above the
	// coordinator's own. The coordinator cannot verify it — a region's
	// word is no proof that a successor exists — so it refuses the
	// request and leads on: a coordinator steps down when etcd (its
	// ledger and its election) says so, never on a client's claim.
	ErrUnverifiedEpoch = errors.New("quota: the request claims an epoch this coordinator cannot verify")
)

// HeldError is ErrRegionHeld with its detail: errors.Is(err,
// ErrRegionHeld) holds for it, and errors.As gives the holder and the
// wait.
type HeldError struct {
	Region string
	// Holder describes the agent that holds the region, as it described
	// itself when it attached (host and process, say).
	Holder string
	// Wait is how long until the last lease granted to the holder stops
	// counting: the earliest moment another agent may attach, if the
	// holder renews nothing meanwhile. 0 when unknown.
	Wait time.Duration
}

func (e *HeldError) Error() string {
	return fmt.Sprintf("quota: region %q is held by another agent (%s): its last lease stops counting in %v at the earliest",
		e.Region, e.Holder, (e.Wait + time.Millisecond - 1).Truncate(time.Millisecond))
}

// Unwrap makes errors.Is(err, ErrRegionHeld) hold.
func (e *HeldError) Unwrap() error { return ErrRegionHeld }

// ErrBusy: the coordinator is at the bound of the work it takes in (its
// admission bulkhead is full, or the call's deadline cannot be met behind
// the work queued): nothing of the call (or of the request, when a
// batch's result says so) was done. The caller waits
// BusyError.Wait, at least, before it asks again — a region backs off as
// a whole, not tenant by tenant — so that an overloaded coordinator sheds
// load instead of serving callers that have given up.
var ErrBusy = errors.New("quota: the coordinator is busy")

// BusyError is ErrBusy with the wait the coordinator asks for: errors.Is(err,
// ErrBusy) holds for it.
type BusyError struct {
	// Wait is how long to wait before asking again; 0 when the
	// coordinator did not say.
	Wait time.Duration
	// Why says what is full, for the logs.
	Why string
	// Need, when not 0, is how long from now the coordinator expects the
	// writes queued ahead of a call, and one of the call's own, to take:
	// a call given less time before its deadline would be refused again,
	// so the caller waits longer for its next one.
	Need time.Duration
}

func (e *BusyError) Error() string {
	msg := "quota: the coordinator is busy"
	if e.Why != "" {
		msg += " (" + e.Why + ")"
	}
	if e.Wait > 0 {
		msg += fmt.Sprintf("; ask again in %v", (e.Wait + time.Millisecond - 1).Truncate(time.Millisecond))
	}
	if e.Need > 0 {
		msg += fmt.Sprintf(", with %v or more to the deadline", (e.Need + time.Millisecond - 1).Truncate(time.Millisecond))
	}
	return msg
}

// Unwrap makes errors.Is(err, ErrBusy) hold.
func (e *BusyError) Unwrap() error { return ErrBusy }
