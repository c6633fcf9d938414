package coordinator

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"slices"
	"time"

	"github.com/afloat/afloat/quota"
)

// Incarnations: one agent spends for a region at a time.
//
// The core counts a region's live leases by their peak, not their sum,
// because a region spends under one lease at a time; and a request that
// says it holds lease H ends the region's older leases, because a region
// never goes back to one. Two processes under one region name break both:
// each spends under its own lease, and each may end the other's. So an
// agent attaches before it renews: the runner draws an incarnation at
// random, and the core makes it the region's holder — for every tenant
// of the region — only once no lease of the region counts any more,
// whoever it was granted to. From then on only that incarnation may renew
// or return for the region (Renew and Return refuse any other with
// quota.ErrSuperseded), until it detaches or another agent attaches after
// its leases have all stopped counting. Every lease that counts for a
// region was therefore granted to its holder: never two spending at once.
//
// The holder is written to the ledger, before the attach is answered, so
// that a successor enforces it. Callers that never attach — limiters in
// the coordinator's process, the chaos harness — renew with incarnation
// 0, which is taken for a region no agent has ever attached, and refused
// from its first attach on.

// admit checks what a renewal or a return claims: an epoch this
// coordinator can verify, and the incarnation that holds the region.
func (c *Core) admit(region string, epoch, incarnation uint64) error {
	if epoch > c.epoch {
		// No proof that a successor exists: anyone with a region's token
		// can write a number. A coordinator that was in truth fenced
		// learns it from its ledger, whose next write fails — and until
		// then it cannot grant, since a grant is written first.
		return fmt.Errorf("%w: region %q claims epoch %d, above this coordinator's %d; it leads on until its ledger fences it",
			quota.ErrUnverifiedEpoch, region, epoch, c.epoch)
	}
	if c.broken.noIncarnations() {
		return nil // wrong on purpose: any incarnation spends
	}
	return c.Verify(region, incarnation)
}

// Verify says whether incarnation may renew and return for region: nil,
// or an error wrapping quota.ErrSuperseded.
func (c *Core) Verify(region string, incarnation uint64) error {
	h := c.holders[region]
	switch {
	case h == nil && incarnation == 0:
		return nil // no agent ever attached: an in-process caller
	case h == nil:
		return fmt.Errorf("%w: region %q: no agent holds it here; attach", quota.ErrSuperseded, region)
	case h.id != 0 && h.id == incarnation:
		return nil
	case h.id == 0:
		return fmt.Errorf("%w: region %q: its agent detached; attach", quota.ErrSuperseded, region)
	case incarnation == 0:
		return fmt.Errorf("%w: region %q is held by an agent (%s): attach", quota.ErrSuperseded, region, h.agent)
	}
	// The holder's incarnation is a secret of its own: never in a message.
	return fmt.Errorf("%w: region %q is held by another agent (%s), which attached after this one", quota.ErrSuperseded, region, h.agent)
}

// counts reports when the last of the region's leases that count at now
// stops counting, over every tenant; false if none counts.
func (c *Core) counts(region string, now time.Duration) (time.Duration, bool) {
	var last time.Duration
	any := false
	for _, ts := range c.leasing(region) {
		for _, l := range ts.regionOf(region).live {
			if l.until > now {
				last, any = max(last, l.until), true
			}
		}
	}
	return last, any
}

// leasing lists, by name, the tenants that may hold leases of region —
// every one that held one since it was last looked at here (count adds
// it): an attach or a detach then visits those, not 100,000 tenants. A
// tenant whose leases of the region have all ended leaves the list.
func (c *Core) leasing(region string) []*tenantState {
	set := c.byRegion[region]
	out := make([]*tenantState, 0, len(set))
	for ts := range set {
		if rs := ts.regionOf(region); rs == nil || len(rs.live) == 0 {
			delete(set, ts)
			continue
		}
		out = append(out, ts)
	}
	slices.SortFunc(out, func(a, b *tenantState) int { return cmp.Compare(a.t.Name, b.t.Name) })
	return out
}

// endRegion ends the region's leases, of every tenant, for which drop
// says so.
func (x *Step) endRegion(c *Core, region string, why EndReason, drop func(counted) bool) {
	for _, ts := range c.leasing(region) {
		x.end(ts.regionOf(region), why, drop)
	}
}

// Attach makes incarnation id — drawn by the runner at random, not 0 —
// the holder of region, for agent (how the agent describes itself), once
// no lease of the region counts: leases of every tenant, granted to any
// incarnation. While one does, it refuses with a *quota.HeldError that
// names the holder and says when the last one stops counting (a new agent
// waits for a crashed one's leases to run out). Attaching the incarnation
// that holds the region again succeeds and changes nothing. The answer
// may be sent only once the step's ops are written.
func (c *Core) Attach(now time.Duration, region string, id uint64, agent string) (x Step, err error) {
	defer func() { x.at = now }()
	if c.stopped != nil {
		return Step{}, c.stopped
	}
	if region == "" || id == 0 {
		return Step{}, fmt.Errorf("%w: coordinator: attach region %q as incarnation %d: want a region and an incarnation other than 0",
			quota.ErrConfig, region, id)
	}
	h := c.holders[region]
	if h != nil && h.id == id {
		return Step{}, nil
	}
	if last, ok := c.counts(region, now); ok && !c.broken.noIncarnations() {
		who := "an in-process limiter that never attached"
		switch {
		case h != nil && h.id != 0:
			who = h.agent
		case h != nil:
			who = "an agent that detached"
		}
		return Step{}, &quota.HeldError{Region: region, Holder: who, Wait: last - now}
	}
	x.endRegion(c, region, Expired, func(l counted) bool { return l.until <= now })
	x.at = now
	c.background(&x)
	c.holders[region] = &holder{id: id, agent: agent}
	x.Ops = append(x.Ops, Op{Kind: PutHolder, Holder: &Holder{Region: region, Incarnation: id, Agent: agent}})
	return x, nil
}

// Detach ends incarnation id's hold on region: every lease of the region
// stops counting, of every tenant, and the region is free for the next
// agent at once. Only the holder may detach (quota.ErrSuperseded
// otherwise), and only once it spends nothing more: an agent detaches
// after giving its leases back, as it shuts down. The answer may be sent
// only once the step's ops are written.
func (c *Core) Detach(now time.Duration, region string, id uint64) (x Step, err error) {
	defer func() { x.at = now }()
	if c.stopped != nil {
		return Step{}, c.stopped
	}
	if h := c.holders[region]; id == 0 || h == nil || h.id != id {
		if err := c.Verify(region, id); err != nil {
			return Step{}, err
		}
		return Step{}, fmt.Errorf("%w: region %q: incarnation 0 never attached, so cannot detach", quota.ErrSuperseded, region)
	}
	// Every lease ends: those whose time is up as expired, the others as
	// detached — in one pass over the region's tenants, which at 100,000
	// tenants is most of the detach's time, under the server's lock.
	tenants := c.leasing(region)
	x.Ops = slices.Grow(x.Ops, len(tenants))
	x.Ended = slices.Grow(x.Ended, len(tenants))
	for _, ts := range tenants {
		rs := ts.regionOf(region)
		x.end(rs, Expired, func(l counted) bool { return l.until <= now })
		x.end(rs, Detached, func(counted) bool { return true })
	}
	// The ends' events go with the detach; their records may go later.
	x.at = now
	c.background(&x)
	c.holders[region] = &holder{}
	x.Ops = append(x.Ops, Op{Kind: PutHolder, Holder: &Holder{Region: region}})
	return x, nil
}

// Holder returns the region's holder, as the ledger keeps it; false if no
// agent ever attached the region.
func (c *Core) Holder(region string) (Holder, bool) {
	h := c.holders[region]
	if h == nil {
		return Holder{}, false
	}
	return Holder{Region: region, Incarnation: h.id, Agent: h.agent}, true
}

// newIncarnation draws an incarnation: random, so that no one who holds
// only the region's token can guess it, and below 2⁵³, so that it reads
// exactly in every JSON parser (JavaScript's and jq's numbers are
// doubles) — a space still far too large to guess, each guess costing a
// request.
func newIncarnation() uint64 {
	var b [8]byte
	for {
		rand.Read(b[:]) // never fails (crypto/rand's contract since Go 1.24)
		if id := binary.LittleEndian.Uint64(b[:]) & (1<<53 - 1); id != 0 {
			return id
		}
	}
}

// Attach attaches a new incarnation of region's agent (Core.Attach) and
// returns it once written: the agent sends it with every renewal and
// return. agent describes the agent (host and process, say); the server
// adds when it attached.
func (s *Server) Attach(ctx context.Context, region, agent string) (uint64, error) {
	id := newIncarnation()
	agent += ", attached " + time.Now().UTC().Format(time.RFC3339)
	err := s.call(ctx, func(at time.Duration) (Step, error) { return s.core.Attach(at, region, id, agent) })
	if err != nil {
		return 0, err
	}
	return id, nil
}

// Detach ends incarnation's hold on region (Core.Detach) and returns once
// it is written.
func (s *Server) Detach(ctx context.Context, region string, incarnation uint64) error {
	return s.call(ctx, func(at time.Duration) (Step, error) { return s.core.Detach(at, region, incarnation) })
}

// Verify says whether incarnation holds region (Core.Verify).
func (s *Server) Verify(region string, incarnation uint64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.core.Verify(region, incarnation)
}

// Holder returns the region's holder (Core.Holder).
func (s *Server) Holder(region string) (Holder, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.core.Holder(region)
}
