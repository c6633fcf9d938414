package coordinator

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/afloat/afloat/quota"
	"github.com/afloat/afloat/quota/internal/breakage"
)

// Core is the coordinator's logic: it grants, renews, shrinks and moves
// leases, and keeps the conservation invariants. It steps on explicit
// time — every method takes now, the coordinator's monotonic clock — and
// starts no goroutine; Server is the runner that adds a clock and a lock.
// A Core is not safe for concurrent use.
//
// A Core is one epoch: New fences the ledger, so every older Core that
// shares it can no longer write, and stops with quota.ErrStaleEpoch at
// its next write. A Core that has stopped stays stopped.
type Core struct {
	ledger  Ledger
	epoch   uint64
	nextID  uint64
	tenants map[string]*tenantState
	stopped error
	onEnd   func(quota.Lease, time.Duration, EndReason)
	broken  breakage.Set
}

type tenantState struct {
	t       quota.Tenant
	credit  quota.Micro
	regions map[string]*regionState
}

type regionState struct {
	live     []counted // ascending ID
	demand   quota.Micro
	balance  quota.Micro
	nudgedAt time.Duration
	nudged   bool
	heard    time.Duration // last request
	ever     bool          // heard at all
}

// counted is a lease and the end of the interval in which it counts.
type counted struct {
	quota.Lease
	until time.Duration
}

// EndReason says why a lease stopped counting.
type EndReason string

const (
	// Superseded: the region holds a newer lease, and so never uses this one again.
	Superseded EndReason = "superseded"
	// Returned: the region gave the lease back.
	Returned EndReason = "returned"
	// Expired: the lease's counted interval is over.
	Expired EndReason = "expired"
)

// Config configures a Core.
type Config struct {
	Tenants []quota.Tenant
	// OnEnd, if set, is told of every lease that stops counting, and when.
	OnEnd func(l quota.Lease, at time.Duration, why EndReason)
}

// Option is an option of New.
type Option func(*Core)

// WithBreakage plants deliberate faults, for the chaos harness's mutation
// checks; its type cannot be named outside quota/..., so no user can.
func WithBreakage(b breakage.Set) Option { return func(c *Core) { c.broken = b } }

// nudgeEvery is how often a region may be nudged: once per round trip or
// so is plenty, and a storm of nudges would only repeat itself.
const nudgeEvery = 250 * time.Millisecond

// New fences the ledger and restores its leases: a new epoch that keeps
// counting every unexpired lease of the old ones. It cannot read the old
// coordinator's clock, so each restored lease counts for a whole lease
// duration and margin from now — longer than it can be in use.
func New(ctx context.Context, cfg Config, ledger Ledger, now time.Duration, opts ...Option) (*Core, error) {
	if ledger == nil {
		return nil, fmt.Errorf("%w: nil ledger", quota.ErrConfig)
	}
	c := &Core{ledger: ledger, tenants: map[string]*tenantState{}, onEnd: cfg.OnEnd}
	for _, o := range opts {
		o(c)
	}
	for _, t := range cfg.Tenants {
		if err := t.Validate(); err != nil {
			return nil, err
		}
		if _, dup := c.tenants[t.Name]; dup {
			return nil, fmt.Errorf("%w: tenant %q configured twice", quota.ErrConfig, t.Name)
		}
		ts := &tenantState{t: t.WithDefaults(), regions: map[string]*regionState{}}
		for _, r := range t.Regions {
			ts.regions[r] = &regionState{}
		}
		c.tenants[t.Name] = ts
	}
	snap, err := ledger.Fence(ctx)
	if err != nil {
		return nil, fmt.Errorf("coordinator: fencing the ledger: %w", err)
	}
	c.epoch, c.nextID = snap.Epoch, max(snap.NextID, 1)
	for _, l := range snap.Leases {
		ts := c.tenants[l.Tenant]
		if ts == nil || ts.regions[l.Region] == nil {
			continue // a tenant or region no longer configured: nothing spends for it here
		}
		rs := ts.regions[l.Region]
		d := ts.t.LeaseDuration + ts.t.SkewMargin
		rs.live = append(rs.live, counted{Lease: l, until: now + d})
	}
	for name, cr := range snap.Credit {
		if ts := c.tenants[name]; ts != nil {
			ts.credit = cr
		}
	}
	return c, nil
}

// Epoch is this coordinator's epoch.
func (c *Core) Epoch() uint64 { return c.epoch }

// Stopped is why the coordinator stopped (quota.ErrStaleEpoch), or nil.
func (c *Core) Stopped() error { return c.stopped }

func (c *Core) lookup(tenant, region string) (*tenantState, *regionState, error) {
	ts := c.tenants[tenant]
	if ts == nil {
		return nil, nil, fmt.Errorf("%w: %q", quota.ErrUnknownTenant, tenant)
	}
	rs := ts.regions[region]
	if rs == nil {
		return nil, nil, fmt.Errorf("%w: tenant %q has no region %q", quota.ErrUnknownRegion, tenant, region)
	}
	return ts, rs, nil
}

// txn gathers the changes of one step: the ledger ops, the leases that
// stop counting (told to OnEnd once written), and the live sets as they
// were (put back if the write fails, so that a failed step changes
// nothing).
type txn struct {
	ops   []Op
	ended []ending
	saved map[*regionState][]counted
}

type ending struct {
	l   quota.Lease
	why EndReason
}

// end drops leases from a region's live set: those for which drop says so.
func (x *txn) end(rs *regionState, why EndReason, drop func(counted) bool) {
	if x.saved == nil {
		x.saved = map[*regionState][]counted{}
	}
	if _, ok := x.saved[rs]; !ok {
		x.saved[rs] = slices.Clone(rs.live)
	}
	rs.live = slices.DeleteFunc(rs.live, func(l counted) bool {
		if !drop(l) {
			return false
		}
		x.ops = append(x.ops, Op{Kind: EndLease, ID: l.ID})
		x.ended = append(x.ended, ending{l.Lease, why})
		return true
	})
}

// expire ends the leases of a tenant whose counted interval is over.
func (x *txn) expire(ts *tenantState, now time.Duration) {
	for _, r := range ts.t.Regions {
		x.end(ts.regions[r], Expired, func(l counted) bool { return l.until <= now })
	}
}

// commit writes the step's ops. On success it tells OnEnd of the leases
// that ended; on failure it puts the live sets back, and a stale epoch
// stops the coordinator for good.
func (c *Core) commit(ctx context.Context, now time.Duration, x *txn) error {
	if len(x.ops) == 0 {
		return nil
	}
	if err := c.ledger.Commit(ctx, c.epoch, x.ops...); err != nil {
		for rs, live := range x.saved {
			rs.live = live
		}
		if errors.Is(err, quota.ErrStaleEpoch) {
			c.stopped = err
		}
		return err
	}
	if c.onEnd != nil {
		for _, e := range x.ended {
			c.onEnd(e.l, now, e.why)
		}
	}
	return nil
}

// peak is the largest rate and burst of a region's live leases: what the
// region counts for, since it spends under one lease at a time.
func peak(rs *regionState) (rate, burst quota.Micro) {
	for _, l := range rs.live {
		rate, burst = max(rate, l.Rate), max(burst, l.Burst)
	}
	return rate, burst
}

// Renew answers a request with a new lease for the region: its target
// share of the tenant's rate and burst, as far as the other regions'
// live leases leave room — a share another region still holds moves only
// once that region has confirmed its smaller lease or its old lease has
// expired. It also returns the regions to nudge: those holding more than
// their target while this region gets less than its own.
//
// The lease is written to the ledger before it is returned; if the write
// fails, nothing is granted.
func (c *Core) Renew(ctx context.Context, now time.Duration, req quota.Request) (quota.Grant, []quota.Nudge, error) {
	if c.stopped != nil {
		return quota.Grant{}, nil, c.stopped
	}
	ts, rs, err := c.lookup(req.Tenant, req.Region)
	if err != nil {
		return quota.Grant{}, nil, err
	}
	if req.Epoch > c.epoch {
		// The region has heard from a newer coordinator.
		c.stopped = fmt.Errorf("%w: region %q has seen epoch %d, this coordinator is %d", quota.ErrStaleEpoch, req.Region, req.Epoch, c.epoch)
		return quota.Grant{}, nil, c.stopped
	}
	t := ts.t
	var x txn
	x.expire(ts, now)
	// The region holds req.Holding and never goes back to an older lease.
	if req.Holding != 0 {
		x.end(rs, Superseded, func(l counted) bool { return l.ID < req.Holding })
	}
	if req.Demand >= 0 {
		rs.demand = req.Demand
	}
	rs.balance = max(0, req.Balance)
	rs.heard, rs.ever = now, true

	// A region not heard from for a whole lease is not spending (its
	// lease has run out): its last demand no longer holds a share.
	demand := make(map[string]quota.Micro, len(ts.regions))
	for name, r := range ts.regions {
		if r.ever && now-r.heard < t.LeaseDuration+t.SkewMargin {
			demand[name] = r.demand
		}
	}
	targets := quota.Allocate(t, demand)
	target := targets[req.Region]
	var otherRate, otherBurst quota.Micro
	for name, r := range ts.regions {
		if name != req.Region {
			pr, pb := peak(r)
			otherRate += pr
			otherBurst += pb
		}
	}
	rate := max(0, min(target.Rate, t.Rate-otherRate))
	burst := max(0, min(target.Burst, t.Burst-ts.credit-otherBurst))
	if c.broken.FullToEvery {
		rate, burst = t.Rate, t.Burst
	}
	// Credit — tokens returned and confirmed — starts the lease with a
	// balance instead of an empty bucket, as far as it fits.
	transfer := min(ts.credit, max(0, burst-rs.balance))
	lease := quota.Lease{
		ID: c.nextID, Tenant: t.Name, Region: req.Region, Epoch: c.epoch,
		Rate: rate, Burst: burst, Transfer: transfer,
		Activates: now, Expires: now + t.LeaseDuration + t.SkewMargin,
	}
	x.ops = append(x.ops, Op{Kind: PutLease, Lease: lease})
	if transfer > 0 {
		x.ops = append(x.ops, Op{Kind: AddCredit, Tenant: t.Name, Credit: -transfer})
	}
	if c.broken.ReuseBeforeConfirm {
		// Wrong on purpose: forget the old leases now, unconfirmed.
		x.end(rs, Superseded, func(counted) bool { return true })
	}
	if err := c.commit(ctx, now, &x); err != nil {
		return quota.Grant{}, nil, err
	}
	c.nextID++
	ts.credit -= transfer
	rs.live = append(rs.live, counted{Lease: lease, until: lease.Expires})

	var nudges []quota.Nudge
	if rate < target.Rate || burst < target.Burst {
		for _, name := range t.Regions {
			r := ts.regions[name]
			pr, pb := peak(r)
			if name == req.Region || (pr <= targets[name].Rate && pb <= targets[name].Burst) {
				continue
			}
			if r.nudged && now-r.nudgedAt < nudgeEvery {
				continue
			}
			r.nudged, r.nudgedAt = true, now
			nudges = append(nudges, quota.Nudge{Tenant: t.Name, Region: name, Epoch: c.epoch})
		}
	}
	return quota.Grant{
		Lease: lease, Seq: req.Seq,
		ValidFor: t.LeaseDuration, Margin: t.SkewMargin,
		Mode: t.Mode, Emergency: t.Emergency,
	}, nudges, nil
}

// Return handles a region's return of a lease: the lease stops counting,
// and the tokens it handed back become credit, as far as its end freed
// burst share (so credit and live bursts together stay within B). A
// duplicate, a late return of a lease that has expired, or one of an
// unknown lease changes nothing: returns are idempotent.
func (c *Core) Return(ctx context.Context, now time.Duration, ret quota.Return) error {
	if c.stopped != nil {
		return c.stopped
	}
	ts, rs, err := c.lookup(ret.Tenant, ret.Region)
	if err != nil {
		return err
	}
	if ret.Epoch > c.epoch {
		c.stopped = fmt.Errorf("%w: region %q has seen epoch %d, this coordinator is %d", quota.ErrStaleEpoch, ret.Region, ret.Epoch, c.epoch)
		return c.stopped
	}
	var x txn
	x.expire(ts, now)
	if !slices.ContainsFunc(rs.live, func(l counted) bool { return l.ID == ret.LeaseID }) {
		return c.commit(ctx, now, &x)
	}
	_, before := peak(rs)
	x.end(rs, Returned, func(l counted) bool { return l.ID == ret.LeaseID })
	_, after := peak(rs)
	credit := min(max(0, ret.Balance), before-after)
	if credit > 0 {
		x.ops = append(x.ops, Op{Kind: AddCredit, Tenant: ts.t.Name, Credit: credit})
	}
	if err := c.commit(ctx, now, &x); err != nil {
		return err
	}
	ts.credit += credit
	return nil
}

// Expire ends every lease whose counted interval is over; the runner calls
// it now and then so that the ledger does not keep dead leases.
func (c *Core) Expire(ctx context.Context, now time.Duration) error {
	if c.stopped != nil {
		return c.stopped
	}
	var x txn
	for _, name := range slices.Sorted(maps.Keys(c.tenants)) { // in order: runs replay exactly
		x.expire(c.tenants[name], now)
	}
	return c.commit(ctx, now, &x)
}

// Live returns the leases that count now, for inspection and tests.
func (c *Core) Live(tenant string) []quota.Lease {
	ts := c.tenants[tenant]
	if ts == nil {
		return nil
	}
	var out []quota.Lease
	for _, r := range ts.t.Regions {
		for _, l := range ts.regions[r].live {
			out = append(out, l.Lease)
		}
	}
	return out
}

// Credit is a tenant's tokens waiting to be moved.
func (c *Core) Credit(tenant string) quota.Micro {
	if ts := c.tenants[tenant]; ts != nil {
		return ts.credit
	}
	return 0
}

// Tenant returns a tenant's configuration, with defaults.
func (c *Core) Tenant(name string) (quota.Tenant, bool) {
	ts := c.tenants[name]
	if ts == nil {
		return quota.Tenant{}, false
	}
	return ts.t, true
}
