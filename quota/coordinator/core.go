package coordinator

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"time"

	"github.com/afloat/afloat/internal/heap"
	"github.com/afloat/afloat/quota"
)

// Core is the coordinator's logic: it grants, renews, shrinks and moves
// leases, and keeps the conservation invariants. It steps on explicit
// time — every method takes now, the coordinator's monotonic clock — and
// starts no goroutine; Server is the runner that adds a clock and a lock.
// A Core is not safe for concurrent use.
//
// Each call proposes a Step: the ledger ops to write. Its answer comes
// only from Advance, once the runner has persisted the step and says so —
// raft's Ready, then Advance. A proposal counts at once (a lease proposed
// counts against every later proposal, so that steps can be persisted
// together), but nothing is answered from it before it is acknowledged.
//
// A Core is one epoch: New fences the ledger, so every older Core that
// shares it can no longer write, and stops with quota.ErrStaleEpoch at
// its next write. A Core that has stopped stays stopped.
type Core struct {
	epoch   uint64
	nextID  uint64
	tenants map[string]*tenantState
	order   []*tenantState // by name: Expire's order, so that runs replay exactly
	stopped error
	broken  faults   // none but in a build with the tag mutation (faults.go)
	seed    []string // the config's tenants the ledger lacks, to write (Seeding)
	seeded  bool
	holders map[string]*holder // by region: the agent incarnation that holds it (Attach)
	// A restored ledger's fence (restore.go): no grant before fenceUntil;
	// unfence says the step that clears the mark is still to propose, and
	// dropped names the tenants whose credit the restore dropped.
	fenceUntil time.Duration
	unfence    bool
	dropped    []string
	// Covered renewals (cover.go): the IDs the ledger has reserved
	// (every ID below idsAck; idsProposed is a reservation on its way),
	// and the steps to persist that no caller waits for (Deferred).
	idsAck      uint64
	idsProposed uint64
	deferred    []Step
	// The proof of leadership (Led): the ledger, asked at provenAt, said
	// that no successor can lead before provenUntil. A step that writes
	// nothing is answered only if it was taken by then (Proven).
	provenAt, provenUntil time.Duration
	// ends holds when each lease counted stops counting, and whose it
	// is, so that Expire visits only the tenants with a lease to end —
	// not every tenant ten times a second (100,000 of them took more
	// than a core). An entry whose lease ended sooner costs a visit.
	ends heap.Heap[endAt]
	// expiring numbers Expire's passes, to visit a tenant once a pass.
	expiring uint64
	// forgetting: a tenant was deleted or lost a region, and forget has
	// leases to wait out before it can drop them.
	forgetting bool
	// tenantsGen counts the changes of the tenants' list and
	// configurations (TenantsGen).
	tenantsGen uint64
	// byRegion holds, for each region, the tenants that may hold leases
	// of it (leasing).
	byRegion map[string]map[*tenantState]struct{}
}

// endAt is when a lease of ts stops counting (Core.ends).
type endAt struct {
	until time.Duration
	ts    *tenantState
}

// count adds a counted lease to a region and watches its end. A region
// renewing steadily counts three leases (the written cover, the lease it
// holds and the one it is granted): room for three at once, where
// append's doubling made it four, 100,000 tenants × 3 regions over.
func (c *Core) count(ts *tenantState, rs *regionState, l counted) {
	if len(rs.live) == cap(rs.live) {
		rs.live = slices.Grow(rs.live, max(3, len(rs.live)))
	}
	rs.live = append(rs.live, l)
	c.ends.Push(endAt{l.until, ts})
	set := c.byRegion[rs.name]
	if set == nil {
		set = map[*tenantState]struct{}{}
		c.byRegion[rs.name] = set
	}
	set[ts] = struct{}{}
}

// holder is the agent incarnation that holds a region; id 0 once it
// detached.
type holder struct {
	id    uint64
	agent string
}

type tenantState struct {
	t      quota.Tenant
	credit quota.Micro
	// names are its regions — t.Regions, and removed regions whose leases
	// still count — sorted: the order steps end leases in; states[i] is
	// names[i]'s state (regionOf). Two slices, not a map: a map of three
	// regions was a quarter of a kilobyte a tenant.
	names   []string
	states  []*regionState
	version uint64 // of its configuration; 0 for a tenant restored only from leases
	by      string // who made the configuration
	// deleted: an operator deleted the tenant, or the ledger holds leases
	// of a tenant it no longer has. It grants nothing, and is forgotten
	// once its leases have stopped counting; until then they count, also
	// against a tenant created again under its name.
	deleted bool
	// split is the burst split in force (stickySplit): each region's
	// target burst share, in the order of t.Regions; nil until the first
	// is drawn, and after a change of the tenant's configuration.
	split []quota.Micro
	// The targets last drawn (targets), and what they were drawn from:
	// most calls of a settled tenant draw the same again.
	drawnFrom []targetIn
	drawn     []quota.Share // in the order of t.Regions
	// expiring is the Expire pass that last visited it.
	expiring uint64
}

// targetIn is what a region's target is drawn from.
type targetIn struct {
	active       bool
	demand, peak quota.Micro
}

type regionState struct {
	live   []counted // ascending ID
	demand quota.Micro
	// peak is the largest demand the region reported, as of peakAt; it
	// decays from there (peakNow). spanTok and span add up the reports
	// not yet taken into it (notePeak).
	peak     quota.Micro
	peakAt   time.Duration
	spanTok  float64 // demand × interval, Micro·ns
	span     time.Duration
	balance  quota.Micro
	nudgedAt time.Duration
	nudged   bool
	heard    time.Duration // last request
	ever     bool          // heard at all
	// last is the newest grant acknowledged written (Advance): a retry
	// of its request (the same Seq) gets it again rather than a second
	// lease. proposed is the Seq of the newest grant proposed and not yet
	// acknowledged: a retry of that request waits for the answer to it.
	last     quota.Grant
	proposed uint64
	// cover is the written lease whose ledger record stands for the
	// region's newest grant (cover.go), as acknowledged written.
	cover uint64
	// ts and name are whose region this is and its name (lease).
	ts   *tenantState
	name string
}

// counted is a lease and the end of the interval in which it counts. It
// holds the lease's terms, not its tenant's and region's names, which its
// region has (regionState.lease): the core counts two or three leases in
// each of hundreds of thousands of regions, and the names were a third
// of each.
type counted struct {
	terms
	until time.Duration
	// cover is, for a covered lease (one not written to the ledger:
	// cover.go), the written lease whose record stands for it; 0 for a
	// written lease.
	cover uint64
}

// terms are a lease's own fields (quota.Lease's but its names).
type terms struct {
	ID                 uint64
	Epoch              uint64
	Rate, Burst        quota.Micro
	Activates, Expires time.Duration
	Transfer           quota.Micro
}

// termsOf is l's terms.
func termsOf(l quota.Lease) terms {
	return terms{ID: l.ID, Epoch: l.Epoch, Rate: l.Rate, Burst: l.Burst, Activates: l.Activates, Expires: l.Expires, Transfer: l.Transfer}
}

// lease is the whole lease l of the region.
func (rs *regionState) lease(l counted) quota.Lease {
	return quota.Lease{ID: l.ID, Tenant: rs.ts.t.Name, Region: rs.name, Epoch: l.Epoch, Rate: l.Rate, Burst: l.Burst,
		Activates: l.Activates, Expires: l.Expires, Transfer: l.Transfer}
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
	// Detached: the region's agent detached, having stopped spending.
	Detached EndReason = "detached"
)

// Config configures a Core.
type Config struct {
	// Tenants seed the ledger: while it has never been seeded
	// (Snapshot.Seeded false), the core serves these and the ledger's
	// own, and Seeding writes the ones the ledger lacks. Once the ledger
	// is seeded its tenants are the truth and Tenants are ignored.
	Tenants []quota.Tenant
}

// nudgeEvery is how often a region may be nudged: once per round trip or
// so is plenty, and a storm of nudges would only repeat itself.
const nudgeEvery = 250 * time.Millisecond

// New starts a coordinator from a fenced ledger's snapshot: a new epoch
// that keeps counting every unexpired lease of the old ones. It cannot
// read the old coordinator's clock, so each restored lease counts for a
// whole lease duration and margin from now — longer than it can be in
// use. Open fences a ledger and calls New.
func New(cfg Config, snap Snapshot, now time.Duration) (*Core, error) {
	// Nothing is proven yet (Led): not even the instant 0.
	c := &Core{tenants: map[string]*tenantState{}, holders: map[string]*holder{}, provenAt: -1, provenUntil: -1,
		byRegion: map[string]map[*tenantState]struct{}{},
		ends:     heap.New(func(a, b endAt) bool { return a.until < b.until }, nil)}
	for _, h := range snap.Holders {
		c.holders[h.Region] = &holder{id: h.Incarnation, agent: h.Agent}
	}
	for i, r := range snap.Tenants {
		if err := r.Tenant.Validate(); err != nil {
			return nil, fmt.Errorf("coordinator: the ledger's tenant %d: %w", i, err)
		}
		if _, dup := c.tenants[r.Name]; dup {
			return nil, fmt.Errorf("%w: the ledger holds tenant %q twice", quota.ErrConfig, r.Name)
		}
		c.tenants[r.Name] = newTenantState(r.Tenant.WithDefaults(), max(r.Version, 1), r.By)
	}
	seen := map[string]bool{}
	for i, t := range cfg.Tenants {
		if err := t.Validate(); err != nil {
			return nil, fmt.Errorf("tenants[%d]: %w", i, err)
		}
		if seen[t.Name] {
			return nil, fmt.Errorf("%w: tenant %q configured twice", quota.ErrConfig, t.Name)
		}
		seen[t.Name] = true
		if snap.Seeded || c.tenants[t.Name] != nil {
			continue // the ledger's tenants are the truth
		}
		c.tenants[t.Name] = newTenantState(t.WithDefaults(), 1, SeedBy)
		c.seed = append(c.seed, t.Name)
	}
	c.seeded = snap.Seeded
	c.epoch, c.nextID = snap.Epoch, max(snap.NextID, 1)
	c.idsAck = c.nextID // every ID below is used already; none reserved
	for _, l := range snap.Leases {
		c.nextID = max(c.nextID, l.ID+1)
		ts := c.tenants[l.Tenant]
		if ts == nil {
			// A deleted tenant's lease may still be spent: it counts, and
			// against a tenant created again under the name.
			ts = &tenantState{t: quota.Tenant{Name: l.Tenant}, deleted: true}
			c.tenants[l.Tenant] = ts
			c.forgetting = true
		}
		rs := ts.region(l.Region)
		if !ts.t.HasRegion(l.Region) {
			c.forgetting = true
		}
		l.Tenant, l.Region = ts.t.Name, rs.name
		// As long as it was granted for (its tenant's lease duration may
		// have shrunk since), and a whole one from now.
		d := max(ts.t.LeaseDuration+ts.t.Margin(), l.Expires-l.Activates)
		c.count(ts, rs, counted{terms: termsOf(l), until: now + d})
	}
	for _, name := range slices.Sorted(maps.Keys(c.tenants)) {
		c.order = append(c.order, c.tenants[name])
	}
	for _, rs := range c.allRegions() {
		slices.SortFunc(rs.live, func(a, b counted) int { return cmp.Compare(a.ID, b.ID) })
	}
	// IDs for covered leases from the start: a successor covers its
	// predecessor's regions' renewals at once (takenOver), not after a
	// written grant has reserved some.
	var d Step
	c.reserveIDs(&d)
	c.deferred = append(c.deferred, d)
	if d := c.fenceFor(snap, cfg); d > 0 {
		// A restored ledger: grant nothing for the longest lease, and keep
		// none of its credit (restore.go).
		c.fenceUntil, c.unfence = now+d, true
		for _, name := range slices.Sorted(maps.Keys(snap.Credit)) {
			if snap.Credit[name] > 0 {
				c.dropped = append(c.dropped, name)
			}
		}
		return c, nil
	}
	for name, cr := range snap.Credit {
		if ts := c.tenants[name]; ts != nil {
			ts.credit = cr
		}
	}
	return c, nil
}

// Open fences the ledger — every older coordinator that shares it can no
// longer write — and starts a coordinator on its contents.
func Open(ctx context.Context, cfg Config, ledger Ledger, now time.Duration) (*Core, error) {
	if ledger == nil {
		return nil, fmt.Errorf("%w: nil ledger", quota.ErrConfig)
	}
	snap, err := ledger.Fence(ctx)
	if err != nil {
		return nil, fmt.Errorf("coordinator: fencing the ledger: %w", err)
	}
	return New(cfg, snap, now)
}

func (c *Core) allRegions() []*regionState {
	var out []*regionState
	for _, ts := range c.tenants {
		out = append(out, ts.states...)
	}
	return out
}

// Epoch is this coordinator's epoch.
func (c *Core) Epoch() uint64 { return c.epoch }

// Stopped is why the coordinator stopped (quota.ErrStaleEpoch), or nil.
func (c *Core) Stopped() error { return c.stopped }

// Fenced stops the coordinator for good, with err: its runner stopped
// (Advance calls it when a write was refused for a stale epoch).
func (c *Core) Fenced(err error) {
	if c.stopped == nil {
		c.stopped = err
	}
}

func (c *Core) lookup(tenant, region string) (*tenantState, *regionState, error) {
	ts := c.tenants[tenant]
	if ts == nil || ts.deleted {
		return nil, nil, fmt.Errorf("%w: %q", quota.ErrUnknownTenant, tenant)
	}
	rs := ts.regionOf(region)
	if rs == nil || !ts.t.HasRegion(region) {
		return nil, nil, fmt.Errorf("%w: tenant %q has no region %q", quota.ErrUnknownRegion, tenant, region)
	}
	return ts, rs, nil
}

// Step is what one call proposes and what its runner must do about it:
// write Ops to the ledger in one transaction (and, where it keeps one,
// record the step in its journal), then acknowledge it with Advance,
// which gives the call's answer. The core counts the step at once: every
// later proposal is computed beside it. If persisting fails, the step's
// call gets no answer, and the core keeps what it proposed on the side of
// granting less: a lease proposed counts until it ends (the ledger may
// hold it, since a write can fail after it applied) though it is never
// sent, and leases it ended stay ended (they were expired or superseded).
// The runner may write a failed step's ops again — they set absolute
// values, so writing them twice is harmless — so that the ledger catches
// up; a write refused for a stale epoch stops the core (Advance).
type Step struct {
	Ops   []Op
	Ended []Ended
	// Granted is the lease a renewal proposed; ID 0 for none (a retry of
	// a request proposes none: it is answered with its grant).
	Granted quota.Lease
	// Tenant is the tenant change the step writes; nil for none.
	Tenant *TenantChange
	// Returned is the return that added Credit to its tenant's credit.
	Returned quota.Return
	Credit   quota.Micro
	// Covered says the step's answer rests on no write (cover.go): its
	// Ops are empty, and the runner answers it as soon as it is recorded
	// in its journal, ahead of the steps queued for the ledger. Cover is
	// the written lease whose ledger record stands for Granted.
	Covered bool
	Cover   uint64
	// Background says that the step only deletes records of leases that
	// no longer count here — it answers nobody, and nothing later depends
	// on it — so the runner may persist it after steps proposed later,
	// when the ledger has nothing else to do: after every agent of a
	// region restarted, tens of thousands of such ends would otherwise
	// stand in the way of the grants that bring the region back. Until
	// it is written a successor counts those leases on (safe: it counts
	// more, never less).
	Background bool

	ans answer // the call's answer, for Advance to give
	// ext is what a step that reserves IDs tells Advance once written
	// (cover.go).
	ext extension
	// at is when the step was taken, on the core's clock: a step that
	// writes nothing is answered only under a proof of leadership that
	// covers it (Proven).
	at time.Duration
}

// At is when the step was taken, on the core's clock.
func (x Step) At() time.Duration { return x.at }

// Unwritten says whether the step's answer and its events rest on no
// write of its own: it has no ops, so nothing but a proof of leadership
// (Led) shows that its coordinator still led when it took it.
func (x Step) Unwritten() bool { return len(x.Ops) == 0 }

// answer is what a step's call is answered once the step is persisted.
type answer struct {
	grant  quota.Grant // proposed (fresh), or acknowledged before (a retry)
	nudges []quota.Nudge
	fresh  bool // grant is the step's own proposal
	// pending: a retry of request seq of tenant's region, whose grant was
	// proposed and not yet acknowledged: answered with that grant if it is
	// acknowledged by then, and refused if it is not.
	pending        bool
	tenant, region string
	seq            uint64
}

// Answer is a call's answer, which Advance gives once the call's step is
// persisted: for a renewal, the grant and the regions to nudge (those
// holding more than their target while this region gets less than its
// own, and, when the step ended leases, the refusing regions that could
// take the share freed); for a return, the regions to nudge; zero for the
// other calls.
type Answer struct {
	Grant  quota.Grant
	Nudges []quota.Nudge
}

// ErrNotWritten: a call's step is not confirmed persisted — the ledger
// write or the journal failed, or the runner stopped or the caller gave
// up before — so the call has no answer. A renewal's region asks again
// and gets a fresh grant. A tenant change the core took holds in this
// coordinator and is written again with its next write (unless it was
// fenced, and its successor does not have it): read the tenant to see
// where it stands.
var ErrNotWritten = errors.New("coordinator: not confirmed written")

// Advance acknowledges a step its runner has persisted (err nil), and
// returns the step's answer; or it tells the core that persisting failed
// (err, which the error returned wraps with ErrNotWritten): the call has
// no answer, a grant it proposed is never given, and a retry of its
// request is a new request. A write refused for a stale epoch (err wraps
// quota.ErrStaleEpoch) stops the core. The runner acknowledges each step
// once, in the order it took them; an answer never rests on a step not
// yet acknowledged: a retry of a request whose grant is still pending is
// answered with it only if it was acknowledged by then.
func (c *Core) Advance(x Step, err error) (Answer, error) {
	if errors.Is(err, quota.ErrStaleEpoch) {
		c.Fenced(err)
	}
	if err == nil && x.Unwritten() && !c.Proven(x.at) {
		err = fmt.Errorf("%w: a step taken at %v that writes nothing; leadership proven up to %v", ErrUnproven, x.at, max(c.provenAt, c.provenUntil))
	}
	a := x.ans
	var rs *regionState
	if ts := c.tenants[a.tenant]; ts != nil && a.tenant != "" {
		rs = ts.regionOf(a.region)
	}
	if a.fresh && rs != nil && rs.proposed == a.seq {
		rs.proposed = 0
	}
	c.extended(x, err)
	if err != nil {
		return Answer{}, fmt.Errorf("%w: %w", ErrNotWritten, err)
	}
	switch {
	case a.fresh && rs != nil && a.grant.Lease.ID > rs.last.Lease.ID:
		rs.last = a.grant
		if !x.Covered {
			// Written: its record is the region's cover from now on.
			rs.cover = a.grant.Lease.ID
		}
	case a.pending:
		if rs == nil || rs.last.Seq != a.seq || rs.last.Lease.ID == 0 {
			return Answer{}, fmt.Errorf("%w: the grant proposed for request %d of tenant %q in region %q was not written; ask again",
				ErrNotWritten, a.seq, a.tenant, a.region)
		}
		a.grant = rs.last
	}
	return Answer{Grant: a.grant, Nudges: a.nudges}, nil
}

// ErrUnproven: a step that writes nothing — a covered or unchanged
// lease, a return that ends covered leases only — was to be answered
// without a proof that its coordinator still led when it took it (Led).
// A write proves leadership as it lands (the ledger is fenced); an answer
// without one must not come from a leader that was paused or cut off
// while a successor took over, so the runner confirms with its ledger
// (Ledger.Confirm) first. The call has no answer; the region asks again.
var ErrUnproven = errors.New("coordinator: leadership not proven for an answer without a write")

// Led records a proof of leadership (Ledger.Proof), on the core's clock:
// the ledger, asked at at, answered that this epoch leads, and that no
// successor can lead before until (until ≤ at: a proof of the instant at
// alone). A successful write is such a proof as of its sending.
func (c *Core) Led(at, until time.Duration) {
	c.provenAt, c.provenUntil = max(c.provenAt, at), max(c.provenUntil, until)
}

// Proven says whether a step taken at at may be answered, and its events
// recorded, without a write of its own: a proof of leadership was asked
// for no earlier than at (leadership, once lost, never comes back to an
// epoch, so it held at at), or says no successor can lead before a time
// after at.
//
// Why this suffices. A successor restores every lease the ledger holds
// and counts each for a whole lease duration and margin from its
// take-over (New); a covered lease stands on a written lease of the same
// shares that the ledger holds for as long as the covered one counts
// (cover.go). A step proven so was taken before any successor took
// over, so the lease it answers with ends, on the coordinator's count,
// within a lease duration and margin of a moment before that take-over —
// inside what the successor counts. An unproven one could be taken after
// it: a leader paused for longer than its proof, woken, would grant
// beside its successor leases the successor never counts.
func (c *Core) Proven(at time.Duration) bool {
	return at <= c.provenAt || at < c.provenUntil || c.broken.noLeaderProof()
}

// Abandon takes back a renewal's step that was proposed and is not yet
// persisted, whose caller has given up waiting (its deadline passed, or
// will before the write can land): the lease it proposed is never written
// nor sent, so it stops counting at once instead of holding its share
// until it expires — the orphan grants of a retry storm, each counting
// against its tenant while the region asks again. The step keeps only
// what must still be persisted — the ends it made, and nothing that
// answers anyone — and the runner persists that as any step no caller
// waits for. ok is false for a step that cannot be taken back: one that
// moves credit, changes a tenant, attaches or detaches an agent, or
// returns a lease (a return only ever frees share: written late, it is
// still right); the runner persists it whole. Call it at most once per
// step, before any part of it is written.
func (c *Core) Abandon(x Step) (rest Step, ok bool) {
	if x.Tenant != nil || x.Credit != 0 || x.Returned.LeaseID != 0 {
		return x, false
	}
	for _, op := range x.Ops {
		switch {
		case op.Kind == EndLease, op.Kind == ReserveIDs:
		case op.Kind == PutLease && op.Lease.ID == x.Granted.ID:
		default:
			return x, false
		}
	}
	a := x.ans
	if ts := c.tenants[a.tenant]; ts != nil && a.tenant != "" {
		if rs := ts.regionOf(a.region); rs != nil {
			if x.Granted.ID != 0 && a.fresh {
				id := x.Granted.ID
				rs.live = slices.DeleteFunc(rs.live, func(l counted) bool { return l.ID == id })
			}
			if a.fresh && rs.proposed == a.seq {
				rs.proposed = 0
			}
		}
	}
	// A reservation of IDs it carried is not on its way any more: the
	// next step proposes another.
	c.extended(x, ErrAbandoned)
	rest = Step{Ended: x.Ended, at: x.at}
	for _, op := range x.Ops {
		if op.Kind == EndLease {
			rest.Ops = append(rest.Ops, op)
		}
	}
	return rest, true
}

// ErrAbandoned: a step was taken back before it was written (Abandon):
// its caller gave up waiting.
var ErrAbandoned = errors.New("coordinator: abandoned: the caller's deadline passed before the write")

// Ended is a lease that stopped counting, and why.
type Ended struct {
	Lease quota.Lease
	Why   EndReason
}

// end drops leases from a region's live set: those for which drop says so.
func (x *Step) end(rs *regionState, why EndReason, drop func(counted) bool) {
	kept := rs.live[:0]
	for _, l := range rs.live {
		if !drop(l) {
			kept = append(kept, l)
			continue
		}
		x.ended(rs, l, why)
	}
	clear(rs.live[len(kept):])
	rs.live = kept
}

// background moves x's ends of written leases (EndLease ops) into a step
// of their own that the runner may persist later (Step.Background); x
// keeps its other ops and every end's event. For leases that stop counting
// now but whose ledger records may go when the ledger is idle: an agent's
// detach ends every lease of its region at once.
func (c *Core) background(x *Step) {
	n := 0
	for _, op := range x.Ops {
		if op.Kind == EndLease {
			n++
		}
	}
	if n == 0 {
		return
	}
	// Sized at once: a detach moves 100,000 of them.
	ends, rest := make([]Op, 0, n), make([]Op, 0, len(x.Ops)-n)
	for _, op := range x.Ops {
		if op.Kind == EndLease {
			ends = append(ends, op)
		} else {
			rest = append(rest, op)
		}
	}
	x.Ops = rest
	// In steps of at most backgroundOps, so that a call's writes can go
	// between them: a detach of a region of 100,000 tenants was one step
	// of 100,000 ends, written over a hundred transactions that nothing
	// could pass.
	for len(ends) > 0 {
		n := min(len(ends), backgroundOps)
		c.deferred = append(c.deferred, Step{Ops: ends[:n:n], Background: true, at: x.at})
		ends = ends[n:]
	}
}

// backgroundOps is the most ends a background step takes (background).
const backgroundOps = 512

// ended records the end of lease l.
func (x *Step) ended(rs *regionState, l counted, why EndReason) {
	if l.cover == 0 { // a covered lease was never written
		x.Ops = append(x.Ops, Op{Kind: EndLease, ID: l.ID, Tenant: rs.ts.t.Name})
	}
	x.Ended = append(x.Ended, Ended{rs.lease(l), why})
}

// expire ends the leases of a tenant whose counted interval is over. (A
// loop of its own, not end with a closure: it runs on every call, and a
// closure that escapes is an allocation each time.)
//
// It runs on every renewal and at every lease's end, 100,000 tenants' worth
// a second at scale: it looks the regions up by position (states) and
// leaves a list with nothing expired untouched, rather than copying
// every lease of it over itself.
func (x *Step) expire(ts *tenantState, now time.Duration) {
	for _, rs := range ts.states {
		live := rs.live
		k := 0
		for k < len(live) && live[k].until > now {
			k++
		}
		if k == len(live) {
			continue
		}
		kept := live[:k]
		for i := k; i < len(live); i++ {
			if live[i].until > now {
				kept = append(kept, live[i])
				continue
			}
			x.ended(rs, live[i], Expired)
		}
		clear(live[len(kept):])
		rs.live = kept
	}
}

// targets are the regions' target shares (quota.Allocate) on the demand
// they last reported and their peaks (peakNow), with the burst split
// kept steady (stickySplit). A region not heard from for a whole lease is
// not spending (its lease has run out): its last demand and its peak no
// longer hold a share.
//
// The targets returned are the tenant's own, kept for the next call: a
// settled tenant — the same demands and peaks — gets the same targets
// without drawing them again. Kept as a slice in the order of t.Regions,
// not Allocate's map: a map of three shares was a third of a kilobyte a
// tenant.
func (ts *tenantState) targets(now time.Duration) targetShares {
	t := ts.t
	var buf [8]targetIn
	in := buf[:0]
	for _, name := range t.Regions {
		var ti targetIn
		if r := ts.regionOf(name); r.ever && now-r.heard < t.LeaseDuration+t.Margin() {
			ti = targetIn{active: true, demand: r.demand, peak: r.peakNow(t, now)}
		}
		in = append(in, ti)
	}
	if ts.drawn != nil && slices.Equal(in, ts.drawnFrom) {
		return targetShares{t.Regions, ts.drawn}
	}
	ts.drawnFrom = append(ts.drawnFrom[:0], in...)
	demand := make(map[string]quota.Micro, len(t.Regions))
	peaks := make(map[string]quota.Micro, len(t.Regions))
	for i, name := range t.Regions {
		if in[i].active {
			demand[name], peaks[name] = in[i].demand, in[i].peak
		}
	}
	shares := quota.Allocate(t, demand, peaks)
	ts.stickySplit(shares)
	ts.drawn = make([]quota.Share, len(t.Regions))
	for i, name := range t.Regions {
		ts.drawn[i] = shares[name]
	}
	return targetShares{t.Regions, ts.drawn}
}

// targetShares are the regions' target shares (tenantState.targets).
type targetShares struct {
	regions []string
	shares  []quota.Share
}

// of is the region's target share; zero for a region the tenant does
// not have.
func (s targetShares) of(region string) quota.Share {
	for i, r := range s.regions {
		if r == region {
			return s.shares[i]
		}
	}
	return quota.Share{}
}

// A region's peak is the largest demand it reported lately, averaged
// over at least a tenth of a lease (a second with the default lease): a
// region reports what was offered since its previous request, and one
// nudged or retrying right after its last may report a few requests over
// a few milliseconds — noise, not a peak. A higher average raises the
// peak at once; a peak is then held whole for peakHold lease durations,
// and after that halves every peakHalfLife lease durations until a
// report meets it again — a minute each with the default lease. So the
// burst moves towards a region as soon as its traffic jumps, and away
// from it only once its traffic has stayed lower for minutes: a region
// whose traffic spikes now and then keeps room for the next spike, and
// the split changes slowly enough to stay put between spikes. The hold,
// rather than decay from the first instant, keeps regions with the same
// steady demand level: with decay alone, whichever reported last would
// hold the highest peak.
const (
	peakSpan     = 10 // the shortest average, as a fraction of a lease
	peakHold     = 6
	peakHalfLife = 6
)

// peakNow is the region's peak at now.
func (rs *regionState) peakNow(t quota.Tenant, now time.Duration) quota.Micro {
	age := now - rs.peakAt - peakHold*t.LeaseDuration
	if rs.peak <= 0 || age <= 0 {
		return max(0, rs.peak)
	}
	half := float64(peakHalfLife * t.LeaseDuration)
	return quota.Micro(float64(rs.peak) * math.Exp2(-float64(age)/half))
}

// notePeak takes a region's report of its demand, received at now, into
// its peak: the report covers the time since the region's previous
// request, which the coordinator heard at rs.heard (the delays on the way
// differ a little; over a tenth of a lease that is small). Reports are
// added up until they span peakSpan, and their average is the candidate.
// The first report the coordinator hears from a region, whose span it
// cannot tell, is a candidate on its own (a region's first request
// reports no demand; one that does reports what it saw before).
func (rs *regionState) notePeak(t quota.Tenant, now time.Duration, demand quota.Micro) {
	avg := demand
	if rs.ever {
		d := max(0, now-rs.heard)
		rs.spanTok += float64(demand) * float64(d)
		rs.span += d
		if rs.span < max(1, t.LeaseDuration/peakSpan) {
			return
		}
		avg = quota.Micro(rs.spanTok / float64(rs.span))
		rs.spanTok, rs.span = 0, 0
	}
	if avg >= rs.peakNow(t, now) {
		rs.peak, rs.peakAt = avg, now
	}
}

// splitSlack is how far, as a fraction of B, the burst split Allocate
// draws may move from the one in force before it replaces it: 1/32.
const splitSlack = 32

// stickySplit keeps the tenant's burst split steady: it replaces the
// burst shares in shares with the split in force unless some region's
// burst share in shares is more than B/splitSlack away from it, in which
// case shares becomes the split in force. Peaks follow reports, and a
// report slightly above a region's decayed peak moves every region's
// share a little; without the slack each such move would change the
// leases of regions whose rate has not changed (a tenant over its limit
// holds steady rates) and cost each a durable write (Renew's unchanged).
// The split in force was drawn by Allocate for the same configuration,
// so it sums to at most B and keeps every floor; the price is that a
// region's burst may lag its peak by up to B/32.
func (ts *tenantState) stickySplit(shares map[string]quota.Share) {
	regions := ts.t.Regions // Allocate's keys
	slack := ts.t.Burst / splitSlack
	keep := len(ts.split) == len(regions) && len(shares) == len(regions)
	for i, name := range regions {
		if !keep {
			break
		}
		if s, ok := shares[name]; !ok || ts.split[i] > s.Burst+slack || s.Burst > ts.split[i]+slack {
			keep = false
		}
	}
	if !keep {
		ts.split = make([]quota.Micro, len(regions))
		for i, name := range regions {
			ts.split[i] = shares[name].Burst
		}
		return
	}
	for i, name := range regions {
		s := shares[name]
		s.Burst = ts.split[i]
		shares[name] = s
	}
}

// peak is the largest rate and burst of a region's live leases: what the
// region counts for, since it spends under one lease at a time.
func peak(rs *regionState) (rate, burst quota.Micro) {
	for _, l := range rs.live {
		rate, burst = max(rate, l.Rate), max(burst, l.Burst)
	}
	return rate, burst
}

// Renew proposes a new lease for the region, in answer to a request: its
// target share of the tenant's rate and burst, as far as the other
// regions' live leases leave room — a share another region still holds
// moves only once that region has confirmed its smaller lease or its old
// lease has expired — and the regions to nudge.
//
// The grant is the step's answer (Advance). A retry of the region's newest
// request (the same Seq) proposes nothing: an empty step answered with
// the grant the request got, once that is acknowledged. Requests are
// idempotent.
//
// Writes follow change: when the new lease would be the one the region
// holds — same shares, nothing to transfer, and young enough (keepFor) —
// the answer is that lease marked Unchanged, and the step writes nothing
// but the ends it makes (unchanged says why that is safe). A region whose
// tenant is over its limit so costs a write per ordinary renewal, not one
// per ask.
func (c *Core) Renew(now time.Duration, req quota.Request) (x Step, err error) {
	defer func() { x.at = now }()
	if c.stopped != nil {
		return Step{}, c.stopped
	}
	ts, rs, err := c.lookup(req.Tenant, req.Region)
	if err != nil {
		return Step{}, err
	}
	// The tenant's own strings for the names, not the request's: the
	// leases and answers the core keeps would hold each request's.
	req.Tenant, req.Region = ts.t.Name, rs.name
	if err := c.admit(req.Region, req.Epoch, req.Incarnation); err != nil {
		return Step{}, err
	}
	if err := c.restoring(now); err != nil {
		return Step{}, err
	}
	if req.Seq != 0 && rs.last.Seq == req.Seq && rs.last.Lease.ID != 0 {
		return Step{ans: answer{grant: rs.last}}, nil
	}
	if req.Seq != 0 && rs.proposed == req.Seq {
		return Step{ans: answer{pending: true, tenant: req.Tenant, region: req.Region, seq: req.Seq}}, nil
	}
	t := ts.t
	x.expire(ts, now)
	// The region holds req.Holding and never goes back to an older lease
	// — but the record that stands for a covered lease it holds counts on
	// (cover.go), and a lease this coordinator does not count (one a
	// predecessor covered and never wrote) ends nothing: the record that
	// stands for it may be among the older ones.
	if req.Holding != 0 && slices.ContainsFunc(rs.live, func(l counted) bool { return l.ID == req.Holding }) {
		keep := coverOf(rs, req.Holding)
		x.end(rs, Superseded, func(l counted) bool { return l.ID < req.Holding && l.ID != keep })
	}
	if req.Demand >= 0 {
		rs.demand = req.Demand
		rs.notePeak(t, now, req.Demand)
	}
	rs.balance = max(0, req.Balance)
	rs.heard, rs.ever = now, true
	targets := ts.targets(now)
	target := targets.of(req.Region)
	var otherRate, otherBurst quota.Micro
	for i, r := range ts.states {
		name := ts.names[i]
		if name != req.Region {
			pr, pb := peak(r)
			otherRate += pr
			otherBurst += pb
		}
	}
	rate := max(0, min(target.Rate, t.Rate-otherRate))
	// The burst B leaves beside the other regions' and the credit held.
	// Credit — tokens returned and confirmed — starts the lease with a
	// balance instead of an empty bucket, as far as it fits; what moves
	// into the lease is no longer held as credit, so the lease's burst
	// may take its room: with the region's own balance within what is
	// left (avail), Σ burst + credit stays within B whether all of the
	// credit moves (burst ≤ avail + credit) or only what fits above the
	// balance (burst − transfer = balance ≤ avail). Else the credit waits,
	// and only avail is the lease's. (Without this, credit returned as
	// every region shut down crowded the regions' next leases out of the
	// burst it stood for: each got a sliver and took that sliver of the
	// credit, so that every renewal for minutes changed the burst and
	// cost a write — the writes a restarted region's tenants wait for.)
	avail := t.Burst - ts.credit - otherBurst
	burst := max(0, min(target.Burst, avail))
	if rs.balance <= avail {
		burst = max(0, min(target.Burst, avail+ts.credit))
	}
	if c.broken.fullToEvery() {
		rate, burst = t.Rate, t.Burst
	}
	transfer := min(ts.credit, max(0, burst-rs.balance))
	short := rate < target.Rate || burst < target.Burst
	if g, ok := c.unchanged(t, rs, req, now, rate, burst, transfer); ok {
		// Nothing durable changes: the region keeps the lease it holds,
		// and the step writes only the ends above, if any.
		g.Seq, g.Unchanged, g.Short = req.Seq, true, short
		nudges := c.nudges(ts, req.Region, targets, now, short, len(x.Ended) > 0)
		x.ans = answer{grant: g, nudges: nudges, tenant: req.Tenant, region: req.Region, seq: req.Seq}
		return x, nil
	}
	if c.coverable(t, rs, req, rate, burst, transfer) {
		return c.renewCovered(x, ts, rs, req, targets, now, short), nil
	}
	lease := quota.Lease{
		ID: c.nextID, Tenant: t.Name, Region: req.Region, Epoch: c.epoch,
		Rate: rate, Burst: burst, Transfer: transfer,
		Activates: now, Expires: now + t.LeaseDuration + t.Margin(),
	}
	x.Ops = append(x.Ops, Op{Kind: PutLease, Lease: &lease})
	c.reserveIDs(&x)
	x.Granted = lease
	if transfer > 0 {
		ts.credit -= transfer
		x.Ops = append(x.Ops, Op{Kind: SetCredit, Tenant: t.Name, Credit: ts.credit})
	}
	if c.broken.reuseBeforeConfirm() {
		// Wrong on purpose: forget the old leases now, unconfirmed.
		x.end(rs, Superseded, func(counted) bool { return true })
	}
	c.nextID++
	c.count(ts, rs, counted{terms: termsOf(lease), until: lease.Expires})

	c.grant(&x, ts, rs, req, targets, now, lease, short)
	return x, nil
}

// grant makes lease, which x proposes, the answer to req: the grant the
// region installs, and the regions to nudge; and marks the request's
// grant as on its way (rs.proposed) until Advance.
func (c *Core) grant(x *Step, ts *tenantState, rs *regionState, req quota.Request, targets targetShares, now time.Duration, lease quota.Lease, short bool) {
	t := ts.t
	nudges := c.nudges(ts, req.Region, targets, now, short, len(x.Ended) > 0)
	g := quota.Grant{
		Lease: lease, Seq: req.Seq,
		ValidFor: t.LeaseDuration, Margin: t.Margin(),
		Mode: t.Mode, Emergency: t.Emergency, Ceiling: quota.MaxBurstShare(t),
		Short: short,
	}
	rs.proposed = req.Seq
	x.ans = answer{grant: g, nudges: nudges, fresh: true, tenant: req.Tenant, region: req.Region, seq: req.Seq}
}

// keepFor is the part of a lease's duration during which a request from
// the region that holds it, asking for the same shares, is answered with
// that lease unchanged and no write (Grant.Unchanged). A region renews at
// half a lease, measured from when it sent the request its lease answers;
// the coordinator, which activated the lease when that request arrived,
// sees the renewal at least half a lease less that request's delay (and
// the clocks' drift) later. A quarter leaves that delay a quarter of a
// lease — longer than a region waits for an answer before it retries,
// with the default lease and retry interval — so an ordinary renewal
// always extends, while a region that asks early (nudged, refusing while
// Short, or its demand doubled) costs a write at most every quarter of a
// lease when nothing else changes. Should a renewal arrive earlier still,
// the region keeps its lease and asks again (region.Limiter.Due).
const keepFor = 4 // the fraction's denominator: a quarter

// unchanged says whether a request can be answered with the lease the
// region holds, unchanged and without a write, and gives that answer: the
// region holds the newest lease this coordinator granted it and
// acknowledged (rs.last: written to the ledger), no newer one is on its
// way to the ledger, the new shares would equal its shares with nothing
// to transfer, the tenant's terms (mode, allowance, ceiling, duration)
// are those it was granted under, and it is younger than 1/keepFor of
// the lease's duration.
//
// Why no write is safe. The invariants are sums over the leases that
// count, and the answer adds none and changes none: the held lease still
// counts, in this coordinator and in the ledger, until the end it was
// written with, and the region still stops spending under it at the end
// it measured when it installed it (it does not restart the lease from
// this request: Grant.Unchanged), which is before the coordinator stops
// counting it. So Σ rate ≤ R and Σ burst ≤ B hold as they held, and with
// them the bound R·Δ + B on admissions in any window Δ. Nothing the
// answer says rests on an unwritten step: the lease was acknowledged
// written before (rs.last), and the step still writes the ends it makes
// (older leases superseded, expired ones). Fencing is unchanged: the
// lease carries this coordinator's epoch (rs.last is only ever set by
// its own Advance), an answer comes only from a coordinator that has not
// stopped, and a successor restores the lease from the ledger — where it
// is, as written — and counts it for a whole lease from its start, as
// any lease.
func (c *Core) unchanged(t quota.Tenant, rs *regionState, req quota.Request, now time.Duration, rate, burst, transfer quota.Micro) (quota.Grant, bool) {
	last := rs.last
	held := last.Lease
	switch {
	case req.Holding == 0 || held.ID != req.Holding || rs.proposed != 0 || req.Resumed:
		return quota.Grant{}, false
	case len(rs.live) == 0 || rs.live[len(rs.live)-1].ID != held.ID:
		return quota.Grant{}, false // ended (expired), or a newer lease counts
	case rate != held.Rate || burst != held.Burst || transfer != 0:
		return quota.Grant{}, false
	case last.Mode != t.Mode || last.Emergency != t.Emergency || last.Ceiling != quota.MaxBurstShare(t) ||
		last.ValidFor != t.LeaseDuration || last.Margin != t.Margin():
		return quota.Grant{}, false
	case now-held.Activates >= t.LeaseDuration/keepFor:
		return quota.Grant{}, false // the end must move: a renewal
	}
	return last, true
}

// nudges are the regions of ts to nudge when region from asks: while
// from gets less than its target (short), those holding more than
// theirs, to give it up; and when this step ended leases (ended), so
// that share may be free, the refusing regions that could take it —
// room appearing is signalled so, and not by regions asking over and
// over. Each region at most once per nudgeEvery.
func (c *Core) nudges(ts *tenantState, from string, targets targetShares, now time.Duration, short, ended bool) []quota.Nudge {
	t := ts.t
	var out []quota.Nudge
	nudge := func(name string, r *regionState) {
		if r.nudged && now-r.nudgedAt < nudgeEvery {
			return
		}
		r.nudged, r.nudgedAt = true, now
		out = append(out, quota.Nudge{Tenant: t.Name, Region: name, Epoch: c.epoch})
	}
	if short {
		for _, name := range t.Regions {
			r := ts.regionOf(name)
			pr, pb := peak(r)
			if name == from || (pr <= targets.of(name).Rate && pb <= targets.of(name).Burst) {
				continue
			}
			nudge(name, r)
		}
	}
	if ended {
		room(ts, from, targets, nudge)
	}
	return out
}

// room nudges, through nudge, the regions of ts other than from that are
// refusing (their demand is above their lease's rate), whose target is
// above what they hold, and for which the tenant's rate has room now
// beside the live leases: a region that refuses asks at the ordinary
// cadence unless told so. A small room (under 1/64 of R) is left to the
// next renewal.
func room(ts *tenantState, from string, targets targetShares, nudge func(string, *regionState)) {
	t := ts.t
	var used quota.Micro
	for _, r := range ts.states {
		pr, _ := peak(r)
		used += pr
	}
	free := t.Rate - used
	if free < max(1, t.Rate/64) {
		return
	}
	for _, name := range t.Regions {
		r := ts.regionOf(name)
		pr, _ := peak(r)
		if name == from || !r.ever || r.demand <= pr || min(free, targets.of(name).Rate-pr) < max(1, t.Rate/64) {
			continue
		}
		nudge(name, r)
	}
}

// Return handles a region's return of a lease: the lease stops counting,
// and so do the region's older leases of the tenant (superseded), and the
// tokens it handed back become credit, as far as those ends freed burst
// share (so credit and live bursts together stay within B). A duplicate,
// a late return of a lease that has expired, or one of an unknown lease
// changes nothing: returns are idempotent. Its answer (Advance) carries
// the nudges for the refusing regions that could take the share freed.
func (c *Core) Return(now time.Duration, ret quota.Return) (x Step, err error) {
	defer func() { x.at = now }()
	if c.stopped != nil {
		return Step{}, c.stopped
	}
	ts, rs, err := c.lookup(ret.Tenant, ret.Region)
	if err != nil {
		return Step{}, err
	}
	if err := c.admit(ret.Region, ret.Epoch, ret.Incarnation); err != nil {
		return Step{}, err
	}
	x.expire(ts, now)
	if !slices.ContainsFunc(rs.live, func(l counted) bool { return l.ID == ret.LeaseID }) {
		return x, nil
	}
	_, before := peak(rs)
	// A region that gives lease H back uses no older lease again (it
	// never goes back to one), so those stop counting too: a region that
	// shuts down frees its share now, though the returns of leases it
	// replaced were lost. Sound because one incarnation spends for the
	// region (Attach), and only for a lease H the region was granted.
	// Except the records that stand for newer covered leases (cover.go):
	// a region gives its old lease back as it installs a covered one.
	keep := map[uint64]bool{}
	for _, l := range rs.live {
		if l.cover != 0 && l.ID > ret.LeaseID {
			keep[l.cover] = true
		}
		if l.ID == ret.LeaseID && mayCover(l, c.epoch) {
			keep[l.ID] = true
		}
	}
	x.end(rs, Superseded, func(l counted) bool { return l.ID < ret.LeaseID && !keep[l.ID] })
	x.end(rs, Returned, func(l counted) bool { return l.ID == ret.LeaseID && !keep[l.ID] })
	_, after := peak(rs)
	// Within what the burst freed, and within B: after a shrink of B the
	// freed share may be more than the new B leaves room for.
	credit := min(max(0, ret.Balance), before-after, max(0, ts.t.Burst-ts.credit-ts.bursts()))
	if credit > 0 {
		ts.credit += credit
		x.Credit, x.Returned = credit, ret
		x.Ops = append(x.Ops, Op{Kind: SetCredit, Tenant: ts.t.Name, Credit: ts.credit})
	}
	// The share the return freed: the refusing regions that could take
	// it are nudged (they do not ask over and over while refusing).
	x.ans.nudges = c.nudges(ts, ret.Region, ts.targets(now), now, false, true)
	// A return that changes nothing in the ledger (it ends covered
	// leases only) waits for no write: a region returns its old lease as
	// it installs each renewal, and would otherwise wait for the ledger.
	x.Covered = len(x.Ops) == 0
	return x, nil
}

// Expire ends every lease whose counted interval is over, one step per
// tenant that had any (so that no step grows with the number of
// tenants); the runner calls it now and then so that the ledger does not
// keep dead leases.
func (c *Core) Expire(now time.Duration) ([]Step, error) {
	if c.stopped != nil {
		return nil, c.stopped
	}
	var steps []Step
	if x, ok := c.unfenceStep(now); ok {
		x.at = now
		steps = append(steps, x)
	}
	c.expiring++
	var due []*tenantState
	for c.ends.Len() > 0 && c.ends.Min().until <= now {
		ts := c.ends.Pop().ts
		if ts.expiring != c.expiring {
			ts.expiring = c.expiring
			due = append(due, ts)
		}
	}
	// By name, so that runs replay exactly.
	slices.SortFunc(due, func(a, b *tenantState) int { return cmp.Compare(a.t.Name, b.t.Name) })
	for _, ts := range due {
		x := Step{at: now, Background: true}
		x.expire(ts, now)
		// A covered lease ends without an op, and with no event either:
		// it ends when its own lease event says it expires.
		if len(x.Ops) > 0 {
			steps = append(steps, x)
		}
	}
	if c.forgetting {
		c.forget()
	}
	return steps, nil
}

// Live returns the leases that count now, for inspection and tests.
func (c *Core) Live(tenant string) []quota.Lease {
	ts := c.tenants[tenant]
	if ts == nil {
		return nil
	}
	var out []quota.Lease
	for _, r := range ts.names {
		for _, l := range ts.regionOf(r).live {
			out = append(out, ts.regionOf(r).lease(l))
		}
	}
	return out
}

// LiveIDs lists every lease that counts, of every tenant (a deleted
// tenant's too), in ascending order.
func (c *Core) LiveIDs() []uint64 {
	var out []uint64
	for _, rs := range c.allRegions() {
		for _, l := range rs.live {
			out = append(out, l.ID)
		}
	}
	slices.Sort(out)
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
	if ts == nil || ts.deleted {
		return quota.Tenant{}, false
	}
	return ts.t, true
}
