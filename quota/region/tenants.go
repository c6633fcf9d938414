package region

import (
	"fmt"
	"sync/atomic"

	"github.com/afloat/afloat/quota"
)

// MaxTenants is the most tenants a limiter serves (Config.Tenants and
// SetTenants).
const MaxTenants = 100_000

// SetTenants makes tenants the set the limiter serves from now on, and
// says which tenants it added and which it removed. Tenants are data on
// the coordinator — created and deleted while regions run — so a region
// follows the coordinator's list instead of a list fixed at New.
//
// An added tenant is refused until its first grant, like every tenant at
// New; Run asks for it at once (its next pass, woken now), the most
// urgent with every other tenant without a lease. A removed one
// is refused from the moment SetTenants returns (an Allow that began
// before may still finish, as it would before a Return); its lease is
// invalidated, and Run gives its balance back to the coordinator, so that
// the share goes to the other regions at once instead of when the lease
// ends. A renewal of it already under way is dropped when it comes back
// (the coordinator counts that lease until it ends: under-use only). A
// tenant removed and added again continues its request numbers and
// starts with no lease.
//
// The set is checked whole before anything changes: 0 to MaxTenants
// names of 1 to 128 bytes, none twice. Allow never waits for SetTenants:
// the index of buckets is copied, changed and published with one atomic
// store (copy on write), which costs SetTenants time linear in the number
// of tenants — meant for a list polled every few seconds, not per
// request. Calls are serialized; the limiter is safe for concurrent use
// throughout.
func (l *Limiter) SetTenants(now int64, tenants []string) (added, removed []string, err error) {
	if len(tenants) > MaxTenants {
		return nil, nil, fmt.Errorf("%w: %d tenants: want 0 to %d", quota.ErrConfig, len(tenants), MaxTenants)
	}
	want := make(map[string]struct{}, len(tenants))
	for i, t := range tenants {
		if t == "" || len(t) > 128 {
			return nil, nil, fmt.Errorf("%w: tenants[%d] %q: want 1 to 128 bytes", quota.ErrConfig, i, t)
		}
		if _, dup := want[t]; dup {
			return nil, nil, fmt.Errorf("%w: tenants[%d] %q: listed twice", quota.ErrConfig, i, t)
		}
		want[t] = struct{}{}
	}
	l.setMu.Lock()
	defer l.setMu.Unlock()
	old := l.idx.Load()
	ix := &index{buckets: make(map[string]*bucket, len(tenants))}
	// The tenants kept stay in their order; the new ones follow in the
	// order given.
	for _, n := range old.list {
		if _, ok := want[n.tenant]; ok {
			ix.add(n.tenant, n.b)
		} else {
			removed = append(removed, n.tenant)
		}
	}
	for _, t := range tenants {
		if _, ok := ix.buckets[t]; !ok {
			ix.add(t, l.newBucket(t))
			added = append(added, t)
		}
	}
	if len(added) == 0 && len(removed) == 0 {
		return nil, nil, nil
	}
	ix.few = len(ix.list) <= fewTenants
	l.idx.Store(ix)
	// Published first, then sealed: from here no lookup finds a removed
	// bucket, and the seal stops an Allow that found it just before.
	for _, t := range removed {
		b := old.buckets[t]
		ret, ok := l.giveBack(now, t, b)
		b.reserve.Store(0) // nor from the emergency allowance
		if ok {
			l.leaving = append(l.leaving, ret)
		}
		b.mu.Lock()
		if lease, at, gone := b.expired(now); gone {
			l.lapsed = append(l.lapsed, lapse{lease, at})
		}
		b.mu.Unlock()
		l.up.push(b) // for Run to drop from its schedule
	}
	for _, t := range added {
		l.up.push(ix.buckets[t])
	}
	l.poke()
	return added, removed, nil
}

// takeLapsed returns and forgets the leases of removed tenants that had
// run out before, unsaid.
func (l *Limiter) takeLapsed() []lapse {
	l.setMu.Lock()
	defer l.setMu.Unlock()
	out := l.lapsed
	l.lapsed = nil
	return out
}

// takeLeaving returns and forgets the returns of removed tenants' leases.
func (l *Limiter) takeLeaving() []quota.Return {
	l.setMu.Lock()
	defer l.setMu.Unlock()
	out := l.leaving
	l.leaving = nil
	return out
}

// poke wakes Run.
func (l *Limiter) poke() {
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

// cachesNow is how many token caches a lease installed now gets: none
// once the limiter serves more than maxCachedTenants (see Config.Caches).
func (l *Limiter) cachesNow() int {
	if len(l.idx.Load().list) > maxCachedTenants {
		return 0
	}
	return l.caches
}

// atomicMax raises v to at least x.
func atomicMax(v *atomic.Uint64, x uint64) {
	for {
		cur := v.Load()
		if cur >= x || v.CompareAndSwap(cur, x) {
			return
		}
	}
}

// Leases is how many of a limiter's tenants hold a valid lease
// (Limiter.Leases): what a readiness probe reports of a region that
// starts, or that has lost its coordinator.
type Leases struct {
	Tenants int // served
	Leased  int // of them, with a valid lease
	// Waiting names tenants without a valid lease, in the order they
	// were added, as many as were asked for.
	Waiting []string
}

// Leases counts at now the tenants served and those with a valid lease,
// and names up to list of those without. It reads each lease with one
// atomic load, as Allow does, and takes no tenant's lock: a probe of a
// region of 100,000 tenants costs a scan of their buckets, no more.
// Safe for concurrent use.
func (l *Limiter) Leases(now int64, list int) Leases {
	ix := l.idx.Load()
	out := Leases{Tenants: len(ix.list)}
	for _, n := range ix.list {
		if s := n.b.cur.Load(); s.valid(s.at(now)) {
			out.Leased++
		} else if len(out.Waiting) < list {
			out.Waiting = append(out.Waiting, n.tenant)
		}
	}
	return out
}
