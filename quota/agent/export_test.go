package agent

import (
	"time"

	"github.com/afloat/afloat/quota"
)

// SetTenantsEvery makes a asks for its tenants every d instead of
// tenantsEvery, before it runs: a test waits for a change in a bounded
// time without waiting out the production period.
func SetTenantsEvery(a *Agent, d time.Duration) { a.o.tenantsEvery = d }

// TenantOf is the tenant a serves by name, as its decision API sees it.
func TenantOf(a *Agent, name string) (quota.Tenant, bool) { return a.tenant(name) }
