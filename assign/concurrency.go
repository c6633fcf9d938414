package assign

import (
	"context"
	"fmt"
	"strconv"
	"time"
)

// SetConcurrency caps members' leases in flight at n (1 to
// MaxConcurrency): PickLease never leases a member with n leases open, and
// no pick (Pick, PickBatch, PickSticky, PickLease) gets it while it has no
// room: it is out as a cooling member is, until one of its leases ends
// (Release, or its deadline), so picks skip it at no cost. A pick when
// every member is cooling or full answers as the pool's LastResort says;
// PickLease always refuses then. n = 0 takes the members' caps away: a
// member that was full is back at once (unless it is cooling). All or
// nothing: every member must be in the pool, active, cooling or removed.
func (p *Pool) SetConcurrency(ctx context.Context, n int, members ...string) error {
	if n < 0 || n > MaxConcurrency {
		return fmt.Errorf("%w: concurrency %d: want 1 to %d leases in flight, or 0 for no cap", ErrInvalid, n, MaxConcurrency)
	}
	if err := checkMembers("concurrency", members); err != nil {
		return err
	}
	_, err := p.r.run(ctx, p.s.Concurrency, p.leaseKeys(), append([]string{strconv.Itoa(n)}, members...)).AsInt64()
	return classify("concurrency", p.name, err)
}

func (p *Pool) leaseKeys() []string {
	return append(p.keys[:len(p.keys):len(p.keys)], p.k.PoolLeases, p.k.PoolLeaseIndex)
}

// PickLease is Pick for work that takes a while: it picks the least-used
// member that has room now — not cooling, under its rate limit and with
// fewer leases in flight than its concurrency cap (SetConcurrency) —
// counts the pick and leases the member for ttl (MinLeaseTTL to
// MaxLeaseTTL), all in one atomic step. Release the lease when the work is
// done; one not released by its deadline is settled by the server, by
// Redis's clock. When no member has room the answer is a *CoolingError
// with the earliest time one will (a lease never goes over a cap, so the
// pool's LastResort does not apply), ErrPoolEmpty or ErrUnknownPool.
// After ErrAmbiguous a lease may be open that the caller never saw: it
// ends at its deadline, so keep TTLs short. (Leases is the other
// algorithm, least in flight: the member with the fewest leases open.)
func (p *Pool) PickLease(ctx context.Context, ttl time.Duration) (Lease, error) {
	if err := checkDuration("lease TTL", ttl, MinLeaseTTL, MaxLeaseTTL); err != nil {
		return Lease{}, err
	}
	if err := notStarted(ctx); err != nil {
		return Lease{}, err
	}
	args := []string{strconv.FormatInt(ceilMS(ttl), 10), strconv.Itoa(p.reclaim)}
	xs, err := p.r.run(ctx, p.s.Acquire, p.leaseKeys(), args).AsStrSlice()
	return leaseFrom(p.name, xs, err)
}

// Release ends a lease PickLease returned, and the member has its room back
// at once. It reports whether the lease was open: false for one released
// already or past its deadline, which is harmless.
func (p *Pool) Release(ctx context.Context, lease Lease) (bool, error) {
	if _, err := strconv.ParseUint(lease.ID, 10, 64); err != nil {
		return false, fmt.Errorf("%w: lease id %q: want the id PickLease returned", ErrInvalid, clip(lease.ID))
	}
	if err := checkMember(lease.Member); err != nil {
		return false, err
	}
	n, err := p.r.run(ctx, p.s.Release, p.leaseKeys(), []string{lease.ID, lease.Member}).AsInt64()
	if err != nil {
		return false, classify("release", p.name, err)
	}
	return n == 1, nil
}
