package quota

import "errors"

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
)
