package assign

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/afloat/afloat/assign/internal/lua"
)

// Leases is the least-in-flight variant of a pool: a member's score is the
// work in progress on it, not its assignments. PickLeastInFlight leases
// the member with the fewest leases open and returns a Lease; Release ends
// it; a lease not released by its deadline is reclaimed on the server, by
// Redis's own clock (TIME), on the next PickLeastInFlight or List. Counts
// never go below zero and releasing twice is harmless. It is safe for
// concurrent use.
//
// Its keys are apart from the least-used pool's of the same name. (A
// Pool's PickLease is the other algorithm: the least used that has room
// under a cap.)
type Leases struct {
	name string
	k    lua.Keys
	r    *runner
}

// Lease is an open lease on a member.
type Lease struct {
	Member   string    `json:"member"`
	ID       string    `json:"id"`
	Deadline time.Time `json:"deadline"` // by the Redis server's clock
}

// Reclaim limits: how many expired leases one pick of a lease settles
// before it picks (so that one call after a long outage stays short), and
// one List or Status.
const (
	reclaimOnAcquire = 100
	reclaimPerCall   = 10000
)

// NewLeases opens the least-in-flight pool name on the Redis that c talks
// to. It sends nothing.
func NewLeases(c *Client, name string) (*Leases, error) {
	if c == nil || c.conn == nil {
		return nil, fmt.Errorf("%w: nil Redis client", ErrInvalid)
	}
	if err := checkPoolName(name); err != nil {
		return nil, err
	}
	return &Leases{name: name, k: lua.PoolKeys(name), r: &runner{c: c.conn}}, nil
}

func (l *Leases) keys() []string {
	return []string{l.k.Inflight, l.k.Parked, l.k.Leases, l.k.LeaseMembers, l.k.LeaseSeq}
}

// Add makes members eligible. A member that was removed comes back with
// the leases it still has open; a new one starts at zero; one already
// active is unchanged. It returns how many joined.
func (l *Leases) Add(ctx context.Context, members ...string) (int, error) {
	if err := checkMembers("add", members); err != nil {
		return 0, err
	}
	n, err := l.r.run(ctx, lua.LeaseMembers, l.keys(), append([]string{"add"}, members...)).AsInt64()
	return int(n), classify("add", l.name, err)
}

// Remove makes members ineligible. Their open leases stay open and settle
// as usual. All or nothing (ErrUnknownMember).
func (l *Leases) Remove(ctx context.Context, members ...string) error {
	if err := checkMembers("remove", members); err != nil {
		return err
	}
	_, err := l.r.run(ctx, lua.LeaseMembers, l.keys(), append([]string{"remove"}, members...)).AsInt64()
	return classify("remove", l.name, err)
}

// PickLeastInFlight leases the active member with the fewest open leases
// (ties by name) for ttl, MinLeaseTTL to MaxLeaseTTL, first reclaiming up
// to 100 expired leases. ErrPoolEmpty when no member is active. After
// ErrAmbiguous a lease may be open that the caller never saw: it is
// reclaimed at its deadline.
func (l *Leases) PickLeastInFlight(ctx context.Context, ttl time.Duration) (Lease, error) {
	if err := checkDuration("lease TTL", ttl, MinLeaseTTL, MaxLeaseTTL); err != nil {
		return Lease{}, err
	}
	if err := notStarted(ctx); err != nil {
		return Lease{}, err
	}
	args := []string{strconv.FormatInt(ttl.Milliseconds(), 10), strconv.Itoa(reclaimOnAcquire)}
	xs, err := l.r.run(ctx, lua.Acquire, l.keys(), args).AsStrSlice()
	return leaseFrom(l.name, xs, err)
}

// leaseFrom reads an acquire script's answer (member, lease id, deadline
// in Unix milliseconds) for the pool or leases named name.
func leaseFrom(name string, xs []string, err error) (Lease, error) {
	if err != nil {
		return Lease{}, classify("acquire", name, err)
	}
	if len(xs) != 3 {
		return Lease{}, fmt.Errorf("assign: acquire: unexpected answer %q", xs)
	}
	ms, err := strconv.ParseInt(xs[2], 10, 64)
	if err != nil {
		return Lease{}, fmt.Errorf("assign: acquire: deadline %q: %w", xs[2], err)
	}
	return Lease{Member: xs[0], ID: xs[1], Deadline: time.UnixMilli(ms)}, nil
}

// Release ends a lease. It reports whether the lease was still open:
// false for one released already or reclaimed at its deadline, which is
// harmless.
func (l *Leases) Release(ctx context.Context, lease Lease) (bool, error) {
	if _, err := strconv.ParseUint(lease.ID, 10, 64); err != nil {
		return false, fmt.Errorf("%w: lease id %q: want the id PickLeastInFlight returned", ErrInvalid, clip(lease.ID))
	}
	n, err := l.r.run(ctx, lua.Release, l.keys(), []string{lease.ID}).AsInt64()
	if err != nil {
		return false, classify("release", l.name, err)
	}
	return n == 1, nil
}

// reclaim settles the leases whose deadline has passed, up to 10,000, and
// returns how many.
func (l *Leases) reclaim(ctx context.Context) (int, error) {
	n, err := l.r.run(ctx, lua.Reclaim, l.keys(), []string{strconv.Itoa(reclaimPerCall)}).AsInt64()
	return int(n), classify("reclaim", l.name, err)
}

// List returns the members with their leases open (Member.Count),
// the active ones first in pick order, then the removed ones by name,
// and how many leases are open, once the expired ones (up to 10,000) are
// reclaimed.
func (l *Leases) List(ctx context.Context) (members []Member, open int, err error) {
	if _, err := l.reclaim(ctx); err != nil {
		return nil, 0, err
	}
	arr, err := l.r.run(ctx, lua.LeaseList, l.keys(), nil).ToArray()
	if err != nil {
		return nil, 0, classify("list", l.name, err)
	}
	if len(arr) != 3 {
		return nil, 0, fmt.Errorf("assign: list: unexpected answer of %d parts", len(arr))
	}
	active, err1 := pairs(arr[0])
	parked, err2 := pairs(arr[1])
	n, err3 := arr[2].AsInt64()
	if err := firstErr(err1, err2, err3); err != nil {
		return nil, 0, fmt.Errorf("assign: list: %w", err)
	}
	for _, a := range active {
		members = append(members, Member{Name: a.name, Count: a.n, Active: true})
	}
	slices.SortFunc(parked, func(a, b pair) int { return strings.Compare(a.name, b.name) })
	for _, p := range parked {
		members = append(members, Member{Name: p.name, Count: p.n})
	}
	return members, int(n), nil
}
