package coordinator

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/afloat/afloat/quota"
)

// Tenants as data. A coordinator's tenants live in its ledger beside the
// leases, written by the leader in its fenced transactions; an operator
// creates, updates and deletes them through PutTenant and DeleteTenant,
// and a change takes effect at each region's next renewal.
//
// The shrink rule: from the change on, no grant raises the sum of live
// shares above the new R or B. A grant only fills the room that the
// new limits leave beside every lease still counting — also those
// granted under the old limits — so the sums, if they were above the new
// limits, only fall, and are within them once every lease granted before
// the change has stopped counting: at the latest one lease duration and
// skew margin after it. Credit (returned tokens waiting to be moved) is
// cut at once to what the new B leaves beside the live bursts. A delete
// keeps the tenant's leases counting until they end, also against a
// tenant created again under the same name.

// Errors of the tenant operations.
var (
	// ErrTenantExists: a create named a tenant that exists.
	ErrTenantExists = errors.New("coordinator: the tenant exists")
	// ErrVersionMismatch: an update or delete named a version of the
	// tenant that is no longer its newest: someone else changed it since.
	ErrVersionMismatch = errors.New("coordinator: the tenant changed since that version")
)

// SeedBy is who made a tenant the config file seeded.
const SeedBy = "config file"

// TenantRecord is a tenant as the ledger keeps it: its configuration,
// the version of it (1 for the first, one more at each change) and who
// made it.
type TenantRecord struct {
	quota.Tenant
	Version uint64
	By      string
}

// TenantChange is a change of a tenant's configuration, for the audit log
// and the event log: Op is create, update, delete or seed; Old is the
// configuration before (zero for a create or seed), New after (zero for a
// delete); Dropped is the credit the change cut.
type TenantChange struct {
	Op       string
	By       string
	Old, New quota.Tenant
	Version  uint64
	Dropped  quota.Micro
}

func newTenantState(t quota.Tenant, version uint64, by string) *tenantState {
	ts := &tenantState{t: t, version: version, by: by}
	for _, r := range t.Regions {
		ts.region(r)
	}
	return ts
}

// region returns the region's state, adding it if it is new.
func (ts *tenantState) region(name string) *regionState {
	if rs := ts.regionOf(name); rs != nil {
		return rs
	}
	rs := &regionState{ts: ts, name: name}
	i, _ := slices.BinarySearch(ts.names, name)
	ts.names = slices.Insert(ts.names, i, name)
	ts.states = slices.Insert(ts.states, i, rs)
	return rs
}

// regionOf is the region's state, nil if the tenant has no such region.
func (ts *tenantState) regionOf(name string) *regionState {
	if i, ok := slices.BinarySearch(ts.names, name); ok {
		return ts.states[i]
	}
	return nil
}

// bursts is the sum of the regions' largest live bursts.
func (ts *tenantState) bursts() quota.Micro {
	var sum quota.Micro
	for _, rs := range ts.states {
		_, b := peak(rs)
		sum += b
	}
	return sum
}

// forget drops the regions a tenant no longer has and the deleted
// tenants, once none of their leases counts; it notes whether any is
// left to wait out (Core.forgetting), so that Expire calls it only then.
func (c *Core) forget() {
	pending := false
	c.order = slices.DeleteFunc(c.order, func(ts *tenantState) bool {
		gone := func(name string) bool { return ts.deleted || !ts.t.HasRegion(name) }
		if !ts.deleted && !slices.ContainsFunc(ts.names, gone) {
			return false
		}
		for _, name := range slices.Clone(ts.names) {
			if !gone(name) {
				continue
			}
			if rs := ts.regionOf(name); len(rs.live) == 0 {
				i := slices.Index(ts.names, name)
				ts.names = slices.Delete(ts.names, i, i+1)
				ts.states = slices.Delete(ts.states, i, i+1)
			} else {
				pending = true
			}
		}
		if ts.deleted && len(ts.names) == 0 {
			delete(c.tenants, ts.t.Name)
			return true
		}
		return false
	})
	c.forgetting = pending
}

// Seeding returns the steps that write the config's tenants the ledger
// lacks, one step each, and mark the ledger seeded (in the last); none
// once it is. The runner writes them before anything else.
func (c *Core) Seeding() []Step {
	if c.seeded {
		return nil
	}
	var steps []Step
	for _, name := range c.seed {
		ts := c.tenants[name]
		if ts == nil || ts.deleted || ts.by != SeedBy || ts.version != 1 {
			continue // changed by an operator since: that write holds it
		}
		rec := TenantRecord{Tenant: ts.t, Version: ts.version, By: ts.by}
		steps = append(steps, Step{Ops: []Op{{Kind: PutTenant, Tenant: name, Record: &rec}},
			Tenant: &TenantChange{Op: "seed", By: SeedBy, New: ts.t, Version: ts.version}})
	}
	if len(steps) == 0 {
		steps = append(steps, Step{})
	}
	last := &steps[len(steps)-1]
	last.Ops = append(last.Ops, Op{Kind: MarkSeeded})
	c.seeded, c.seed = true, nil
	return steps
}

// PutTenant creates (create true) or replaces a tenant's configuration.
// ifVersion, if not 0, must be the tenant's version: an update computed
// from an older read is refused (ErrVersionMismatch) rather than undo a
// change it did not see. The change applies to the next renewal of each
// region; the step writes it, and its leases count on as the shrink rule
// says (see the file's comment).
func (c *Core) PutTenant(now time.Duration, t quota.Tenant, by string, create bool, ifVersion uint64) (TenantRecord, Step, error) {
	if c.stopped != nil {
		return TenantRecord{}, Step{}, c.stopped
	}
	if err := t.Validate(); err != nil {
		return TenantRecord{}, Step{}, err
	}
	t = t.WithDefaults()
	t.Regions = slices.Clone(t.Regions)
	t.Costs = maps.Clone(t.Costs)
	ts := c.tenants[t.Name]
	exists := ts != nil && !ts.deleted
	switch {
	case create && exists:
		return TenantRecord{}, Step{}, fmt.Errorf("%w: %q (version %d)", ErrTenantExists, t.Name, ts.version)
	case !create && !exists:
		return TenantRecord{}, Step{}, fmt.Errorf("%w: %q", quota.ErrUnknownTenant, t.Name)
	case !create && ifVersion != 0 && ts.version != ifVersion:
		return TenantRecord{}, Step{}, fmt.Errorf("%w: %q is at version %d, not %d", ErrVersionMismatch, t.Name, ts.version, ifVersion)
	}
	ch := &TenantChange{Op: "update", By: by}
	if create {
		ch.Op = "create"
	}
	var x Step
	if ts == nil {
		ts = newTenantState(t, 0, by)
		c.tenants[t.Name] = ts
		i, _ := slices.BinarySearchFunc(c.order, t.Name, func(a *tenantState, n string) int {
			return cmpString(a.t.Name, n)
		})
		c.order = slices.Insert(c.order, i, ts)
	} else {
		x.expire(ts, now)
		if exists {
			ch.Old = ts.t
		}
	}
	ts.t, ts.by, ts.deleted = t, by, false
	ts.split = nil // drawn again for the new limits and regions
	ts.drawn, ts.drawnFrom = nil, nil
	c.forgetting = true // regions it no longer has go once their leases end
	c.tenantsGen++
	ts.version++
	for _, r := range t.Regions {
		ts.region(r)
	}
	if limit := max(0, t.Burst-ts.bursts()); ts.credit > limit {
		ch.Dropped = ts.credit - limit
		ts.credit = limit
		x.Ops = append(x.Ops, Op{Kind: SetCredit, Tenant: t.Name, Credit: ts.credit})
	}
	rec := TenantRecord{Tenant: t, Version: ts.version, By: by}
	x.Ops = append(x.Ops, Op{Kind: PutTenant, Tenant: t.Name, Record: &rec})
	ch.New, ch.Version = t, ts.version
	x.Tenant = ch
	return rec, x, nil
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// DeleteTenant deletes a tenant: it grants nothing more, its credit is
// dropped, and its leases count until they end. ifVersion as PutTenant's.
func (c *Core) DeleteTenant(now time.Duration, name, by string, ifVersion uint64) (Step, error) {
	if c.stopped != nil {
		return Step{}, c.stopped
	}
	ts := c.tenants[name]
	if ts == nil || ts.deleted {
		return Step{}, fmt.Errorf("%w: %q", quota.ErrUnknownTenant, name)
	}
	if ifVersion != 0 && ts.version != ifVersion {
		return Step{}, fmt.Errorf("%w: %q is at version %d, not %d", ErrVersionMismatch, name, ts.version, ifVersion)
	}
	var x Step
	x.expire(ts, now)
	ch := &TenantChange{Op: "delete", By: by, Old: ts.t, Version: ts.version + 1, Dropped: ts.credit}
	ts.deleted = true
	c.forgetting = true
	c.tenantsGen++
	ts.version++
	if ts.credit > 0 {
		ts.credit = 0
		x.Ops = append(x.Ops, Op{Kind: SetCredit, Tenant: name, Credit: 0})
	}
	x.Ops = append(x.Ops, Op{Kind: DeleteTenant, Tenant: name})
	x.Tenant = ch
	c.forget()
	return x, nil
}

// TenantsGen changes whenever the tenants' list or a tenant's
// configuration does (PutTenant, DeleteTenant): a region that polls the
// list asks whether it changed, not for the list again.
func (c *Core) TenantsGen() uint64 { return c.tenantsGen }

// Tenants lists the tenants, by name.
func (c *Core) Tenants() []TenantRecord {
	var out []TenantRecord
	for _, ts := range c.order {
		if !ts.deleted {
			out = append(out, TenantRecord{Tenant: ts.t, Version: ts.version, By: ts.by})
		}
	}
	return out
}

// TenantRecord returns one tenant.
func (c *Core) TenantRecord(name string) (TenantRecord, bool) {
	ts := c.tenants[name]
	if ts == nil || ts.deleted {
		return TenantRecord{}, false
	}
	return TenantRecord{Tenant: ts.t, Version: ts.version, By: ts.by}, true
}

// PutTenant creates or updates a tenant (Core.PutTenant) and returns once
// the change is written to the ledger. An error wrapping ErrNotWritten
// says that the core took the change but the write failed: the change
// holds in this coordinator and is written again with its next write.
func (s *Server) PutTenant(ctx context.Context, t quota.Tenant, by string, create bool, ifVersion uint64) (TenantRecord, error) {
	var rec TenantRecord
	err := s.call(ctx, func(at time.Duration) (step Step, err error) {
		rec, step, err = s.core.PutTenant(at, t, by, create, ifVersion)
		return step, err
	})
	if err != nil {
		return TenantRecord{}, err
	}
	return rec, nil
}

// DeleteTenant deletes a tenant (Core.DeleteTenant) and returns once the
// delete is written; errors as PutTenant's.
func (s *Server) DeleteTenant(ctx context.Context, name, by string, ifVersion uint64) error {
	return s.call(ctx, func(at time.Duration) (Step, error) { return s.core.DeleteTenant(at, name, by, ifVersion) })
}

// TenantsVersion names the tenants' list as it is now (Core.TenantsGen,
// and this server's epoch): it changes whenever the list or a tenant's
// configuration does.
func (s *Server) TenantsVersion() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return strconv.FormatUint(s.core.Epoch(), 10) + "." + strconv.FormatUint(s.core.TenantsGen(), 10)
}

// Tenants lists the tenants.
func (s *Server) Tenants() []TenantRecord {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.core.Tenants()
}

// TenantRecord returns one tenant.
func (s *Server) TenantRecord(name string) (TenantRecord, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.core.TenantRecord(name)
}

// RegionShare is a region's part of a tenant as the core counts it: the
// largest rate and burst of the tenant's live leases there, and how many
// leases count there (an old one not yet confirmed returned and its
// replacement are two).
type RegionShare struct {
	Region      string
	Rate, Burst quota.Micro
	Leases      int
}

// Shares calls f for each tenant served (not deleted) whose name comes
// after after, in name order, at most limit of them, with its
// configuration and its regions' shares: every region of its
// configuration, and any other where a lease of it still counts. It
// returns the last name it visited, and whether more tenants follow. f
// must keep neither t nor shares, which are the core's and reused.
func (c *Core) Shares(after string, limit int, f func(t *quota.Tenant, shares []RegionShare)) (last string, more bool) {
	i := 0
	if after != "" {
		i, _ = slices.BinarySearchFunc(c.order, after, func(a *tenantState, n string) int { return strings.Compare(a.t.Name, n) })
		if i < len(c.order) && c.order[i].t.Name == after {
			i++
		}
	}
	var shares []RegionShare
	for n := 0; i < len(c.order) && n < limit; i++ {
		ts := c.order[i]
		if ts.deleted {
			continue
		}
		n++
		shares = shares[:0]
		for k, name := range ts.names {
			s := RegionShare{Region: name}
			for _, l := range ts.states[k].live {
				s.Rate, s.Burst, s.Leases = max(s.Rate, l.Rate), max(s.Burst, l.Burst), s.Leases+1
			}
			shares = append(shares, s)
		}
		f(&ts.t, shares)
		last = ts.t.Name
	}
	return last, i < len(c.order)
}

// sharesChunk is how many tenants Server.Shares visits under one hold of
// the server's lock: renewals go on between the holds.
const sharesChunk = 2048

// Shares is Core.Shares over every tenant served, taking the server's
// lock for sharesChunk tenants at a time: a metrics scrape at 100,000
// tenants holds it some fifty times briefly, where a hold a tenant (and
// its leases copied out) cost the leader as much CPU as its renewals
// while Prometheus scraped it every second (docs/benchmarks.md). A
// tenant created or deleted meanwhile is visited or not, as its name
// falls; none is visited twice. f runs under the lock: it must not call
// the server.
func (s *Server) Shares(f func(t *quota.Tenant, shares []RegionShare)) {
	after := ""
	for {
		s.mu.Lock()
		last, more := s.core.Shares(after, sharesChunk, f)
		s.mu.Unlock()
		if !more || last == "" {
			return
		}
		after = last
	}
}
