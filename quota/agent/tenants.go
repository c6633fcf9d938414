package agent

import (
	"context"
	"maps"
	"time"

	"github.com/afloat/afloat/quota"
	"github.com/afloat/afloat/quota/remote"
)

// A region agent follows the tenants operators create and delete through
// the coordinator's API: it asks the leader for the tenants whose regions
// include its own (GET /v1/region/tenants, with the region's token) at
// start and every tenantsEvery, adds the new ones to its limiter (which
// asks for their leases at once) and removes the gone ones (their leases
// go back to the coordinator; they are refused from then on). While no
// coordinator answers, it keeps the set it has: the config file's
// tenants until the first answer.

// tenantsEvery is how often an agent asks for its tenants: a tenant
// created through the API is served in every region within about this
// long; the list is small beside a renewal batch.
const tenantsEvery = 2 * time.Second

// tenant is a tenant the agent serves now, with its endpoint costs.
func (a *Agent) tenant(name string) (quota.Tenant, bool) {
	t, ok := (*a.tenants.Load())[name]
	return t, ok
}

// followTenants asks for the region's tenants at once and every
// tenantsEvery until ctx ends, and applies each answer.
func (a *Agent) followTenants(ctx context.Context, client *remote.Client) {
	every := a.o.tenantsEvery
	if every <= 0 {
		every = tenantsEvery
	}
	t := time.NewTicker(every)
	defer t.Stop()
	failing := false // the last ask failed: logged once per streak
	known := ""      // the version of the list applied: unchanged, it is not sent again
	for {
		tctx, cancel := context.WithTimeout(ctx, min(every, 5*time.Second))
		ans, changed, err := client.Tenants(tctx, known)
		cancel()
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			if !failing {
				a.o.Logger.Warn("quota region: the coordinator's tenant list is out of reach; serving the tenants known",
					"region", a.o.Name, "tenants", len(*a.tenants.Load()), "err", err)
			}
			failing = true
		case !changed:
			failing = false
		default:
			failing = false
			if a.applyTenants(ans.Tenants) {
				known = ans.Version
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// applyTenants makes ts the tenants the agent serves: the limiter's set
// first, then the map the decision API, the Envoy service and the proxy
// read costs from (one atomic swap). Between the two a request for a
// tenant just added or removed is refused, never admitted without a lease.
//
// It says whether the list was taken (false: refused, and the agent
// serves the tenants it knew).
func (a *Agent) applyTenants(ts []remote.RegionTenant) bool {
	names := make([]string, len(ts))
	next := make(map[string]quota.Tenant, len(ts))
	versions := make(map[string]uint64, len(ts))
	for i, t := range ts {
		names[i] = t.Name
		next[t.Name] = quota.Tenant{Name: t.Name, Costs: t.Costs}
		versions[t.Name] = t.Version
	}
	cur := *a.tenants.Load()
	added, removed, err := a.lim.SetTenants(a.now(), names)
	if err != nil {
		a.o.Logger.Warn("quota region: the coordinator's tenant list refused; serving the tenants known", "region", a.o.Name, "err", err)
		return false
	}
	same := len(added) == 0 && len(removed) == 0 && len(cur) == len(next)
	for name, t := range next {
		if same && !maps.Equal(cur[name].Costs, t.Costs) {
			same = false
		}
	}
	if same {
		return true
	}
	a.tenants.Store(&next)
	for _, name := range added {
		a.o.Logger.Info("quota region: tenant added", "region", a.o.Name, "tenant", name, "version", versions[name])
	}
	for _, name := range removed {
		a.o.Logger.Info("quota region: tenant removed; its lease goes back", "region", a.o.Name, "tenant", name)
	}
	return true
}
