package eventlog

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"time"

	"github.com/afloat/afloat/quota"
)

// Checker verifies a run from its event log alone — it sees what the
// components said they did, never their state — and reports every broken
// promise:
//
//   - the bound: for every window [s, t] of the run (every start, every
//     length), the tokens admitted are at most R·(t − s) + B, plus
//     regions·E in best-effort mode. It is exact: with A(t) the tokens
//     admitted up to t, the worst window ending at t starts just before
//     the admission that minimises A(s⁻) − R·s, so one pass keeps that
//     minimum and the worst excess;
//   - the conservation invariants at every instant: over the leases'
//     counted intervals, Σ of each region's largest rate ≤ R, and Σ of
//     each region's largest burst plus the credit held ≤ B;
//   - no share granted twice: lease IDs unique; no grant at all — not
//     even one without a write (a covered lease) — from an epoch older
//     than a successor that has taken over (its restart) or granted: a
//     write is fenced, and a coordinator answers without one only while
//     it can prove it still leads; no more tokens
//     transferred than were returned; a lease spent only by the region it
//     was granted to, only within its counted interval, and by a region
//     holding one lease at a time;
//   - in hard mode, no admission by a region that holds no lease.
//
// A region spends under a lease from its install until it says it
// stopped (supersede, expire, return), or until the process that
// installed it wrote its last event: a process spends nothing after its
// last event, whether it stopped or was killed. Merge (and so CheckLogs)
// marks where each process's events end, for every lease it still
// spent under; the next process of the region begins at its start events
// — in a log of its own, or appended to the same log, as an agent
// restarted after a kill -9 does. The dead agent's lease then stops
// counting for spending at its last line, not at its successor's first
// install: the successor's admissions before an install of its own are
// admissions without a lease, and an end of use it writes for the dead
// agent's lease is of a lease it was not using. Events written without
// Merge keep a use open until its end or Finish.
//
// Counts (a counts event, of a region's decisions over an interval ending
// at its time) are checked conservatively, in both directions: a count's
// tokens may have been admitted anywhere in its interval, so a window
// takes a count whole if the count's end is in it, and its bound is
// stretched back by the longest interval I to cover the count's start:
// with R the largest rate the tenant has had, the checker allows R·I
// more than R·Δ + B (Report.Slack). A violation it reports is then
// certain — the tokens of the counts in [s, t] were all admitted in
// [s − I, t], beyond that window's own R·Δ + B. A pass proves every
// window within R·Δ + B + 2·R·I: a window [s, t] holds at most the
// counts that end in [s, t + I]. In hard mode, a count of admissions is
// one without a lease only if its region held no lease at any time in
// its interval. Logs of decision lines alone have no slack: the bound
// is exact.
//
// A tenant event changes R and B (and E, the mode, the regions) from its
// time on, by the coordinator's shrink rule: a grow holds at once; after
// a shrink the old limits hold until every lease granted before the
// change has expired (the latest expiry among the leases the log has
// granted by then), the new ones from there. The bound is then, for a
// window [s, t], ∫ₛᵗ R(u) du + B(s), with R(u) and B(u) the larger of the
// limits in force at u; the invariants are checked against the same
// limits at each instant; the allowed excess is the largest regions·E the
// tenant has had. A start event for a tenant that a tenant event has
// changed is a process announcing its config file, which the ledger's
// tenants overrule: it is not checked against them.
//
// Feed it events in order (Write), then call Finish. A Checker is not
// safe for concurrent use.
type Checker struct {
	tenants map[string]*tenantCheck
	leases  map[uint64]*leaseCheck
	covered map[uint64][]uint64 // a cover's covered leases
	fenced  uint64
	// firstGrant is when each epoch granted its first lease: no older
	// epoch may grant after it.
	firstGrant map[uint64]int64
	// unlogged are the leases a successor restored from the ledger
	// (restart, Live) that no log granted: a deposed leader's write of
	// unknown outcome (paused or cut off between sending it and its
	// answer) that etcd applied but that leader, fenced, could not
	// settle, so it never logged or answered it.
	unlogged map[uint64]bool
	last     int64
	report   Report
}

type tenantCheck struct {
	name      string
	r         float64 // tokens per second
	rate      quota.Micro
	b         float64 // tokens
	burst     quota.Micro
	regions   int
	e         float64
	mode      string
	admitted  float64 // A(t), tokens
	minPrefix float64 // min over s of A(s⁻) − R·s
	minAt     int64
	lastAdmit int64
	started   bool
	credit    quota.Micro
	creditAt  int64
	spans     []quota.Span // credit held, as a pseudo-region
	using     map[string]*usage
	uses      []usage
	// Changes of the configuration (tenant events).
	changed    bool
	allowed    float64     // the largest regions·E so far
	maxExpires int64       // the latest expiry of the leases granted so far
	holds      []capHold   // old limits holding after a shrink
	history    []capChange // every change, for the invariants over time
	f          float64     // ∫ R(u) du from the tenant's start to fAt, tokens
	fAt        int64
	minF, minB float64 // F(s) and B(s) at minAt
	// Counts: the longest interval so far, the largest R, and when each
	// region last stopped spending under a lease.
	span    int64
	rMax    float64
	stopped map[string]int64
}

// slack is what the checker allows beyond the bound for the tenant's
// counts: R·I.
func (tc *tenantCheck) slack() float64 { return tc.rMax * float64(tc.span) / 1e9 }

// capHold: after a shrink, the old limits hold until the leases granted
// before it have expired.
type capHold struct {
	until       int64
	r, b        float64
	rate, burst quota.Micro
}

type capChange struct {
	at, until         int64
	oldRate, oldBurst quota.Micro
	newRate, newBurst quota.Micro
}

// rcap and bcap are the limits in force at u ≥ fAt.
func (tc *tenantCheck) rcap(u int64) float64 {
	r := tc.r
	for _, h := range tc.holds {
		if h.until > u {
			r = max(r, h.r)
		}
	}
	return r
}

func (tc *tenantCheck) bcap(u int64) float64 {
	b := tc.b
	for _, h := range tc.holds {
		if h.until > u {
			b = max(b, h.b)
		}
	}
	return b
}

// advance integrates R(u) up to t.
func (tc *tenantCheck) advance(t int64) {
	for tc.fAt < t {
		next := t
		for _, h := range tc.holds {
			if h.until > tc.fAt && h.until < next {
				next = h.until
			}
		}
		tc.f += tc.rcap(tc.fAt) * float64(next-tc.fAt) / 1e9
		tc.fAt = next
	}
	tc.holds = slices.DeleteFunc(tc.holds, func(h capHold) bool { return h.until <= t })
}

// change applies a tenant event to a known tenant.
func (c *Checker) change(tc *tenantCheck, e *Event) {
	tc.changed = true
	if e.Why == "delete" {
		return // its leases count on, under the limits they were granted under
	}
	tc.advance(e.T)
	until := max(e.T, tc.maxExpires)
	if until > e.T && (e.Rate < tc.rate || e.Burst < tc.burst) {
		tc.holds = append(tc.holds, capHold{until: until, r: tc.r, b: tc.b, rate: tc.rate, burst: tc.burst})
	}
	tc.history = append(tc.history, capChange{at: e.T, until: until, oldRate: tc.rate, oldBurst: tc.burst, newRate: e.Rate, newBurst: e.Burst})
	tc.r, tc.rate, tc.b, tc.burst = e.Rate.Float(), e.Rate, e.Burst.Float(), e.Burst
	tc.rMax = max(tc.rMax, tc.r)
	tc.regions, tc.mode, tc.e = int(e.N), e.Mode, 0
	if tc.mode == quota.BestEffort.String() {
		tc.e = e.Balance.Float()
	}
	tc.allowed = max(tc.allowed, float64(tc.regions)*tc.e)
	c.report.Allowed = max(c.report.Allowed, tc.allowed)
}

// capsAt are the limits the invariants hold at u, from the history.
func (tc *tenantCheck) capsAt(u int64) (rate, burst quota.Micro) {
	rate, burst = tc.history[0].oldRate, tc.history[0].oldBurst
	for _, h := range tc.history {
		if h.at <= u {
			rate, burst = h.newRate, h.newBurst
		}
	}
	for _, h := range tc.history {
		if h.at <= u && u < h.until {
			rate, burst = max(rate, h.oldRate), max(burst, h.oldBurst)
		}
	}
	return rate, burst
}

type leaseCheck struct {
	l     quota.Lease // Activates/Expires on the log's clock
	ended int64       // when the coordinator stopped counting it; 0 if it did not
	// cover is, for a covered lease, the written lease whose ledger record
	// stands for it (coordinator.Config.Reserve); 0 for a written lease.
	cover uint64
}

type usage struct {
	region   string
	id       uint64
	from, to int64
}

// Report is what the checker found.
type Report struct {
	Violations int      `json:"violations"`
	Messages   []string `json:"messages,omitempty"` // the first few
	// WorstExcess is the largest (tokens admitted in a window) − (R·Δ + B)
	// over every window, in tokens: ≤ 0 when the hard bound holds.
	WorstExcess float64 `json:"worst_excess"`
	WorstFrom   int64   `json:"worst_from_ns"`
	WorstTo     int64   `json:"worst_to_ns"`
	Allowed     float64 `json:"allowed_excess"` // regions·E in best-effort mode, else 0 (the largest of any tenant)
	PeakRate    float64 `json:"peak_rate"`      // largest Σ of rate shares, tokens/s
	PeakBurst   float64 `json:"peak_burst"`     // largest Σ of burst shares + credit
	// Counts is the number of counts events checked; CountInterval the
	// longest interval of them (ns), and Slack the most the checker
	// allowed beyond R·Δ + B for them, R·I tokens, of the tenant for
	// which it is largest (Checker).
	Counts          int     `json:"counts,omitempty"`
	CountInterval   int64   `json:"count_interval_ns,omitempty"`
	Slack           float64 `json:"slack,omitempty"`
	Leases          int     `json:"leases"`
	Admitted        int64   `json:"admitted"`
	Rejected        int64   `json:"rejected"`
	NoLeaseAdmitted int64   `json:"admitted_without_lease"`
	// UnloggedCovers counts leases covered by a lease the ledger held
	// but no log granted (Checker.unlogged): no region can have spent
	// that one, and the covered lease is checked as any other.
	UnloggedCovers int `json:"unlogged_covers,omitempty"`
}

const maxMessages = 20

// NewChecker returns a checker with no tenant yet: a start event names
// each.
func NewChecker() *Checker {
	return &Checker{tenants: map[string]*tenantCheck{}, leases: map[uint64]*leaseCheck{}, covered: map[uint64][]uint64{},
		firstGrant: map[uint64]int64{}, unlogged: map[uint64]bool{}, report: Report{WorstExcess: math.Inf(-1)}}
}

func (c *Checker) violate(t int64, format string, args ...any) {
	c.report.Violations++
	if len(c.report.Messages) < maxMessages {
		c.report.Messages = append(c.report.Messages, fmt.Sprintf("at %v: ", time.Duration(t))+fmt.Sprintf(format, args...))
	}
}

// Write implements Writer: it checks the event's order, then hands it to
// the check of its kind. Kinds no promise depends on (the harness's
// faults and samples, stop, the summary line) are only ordered.
func (c *Checker) Write(e *Event) {
	if e.T < c.last {
		c.violate(e.T, "event %q out of order (after %v)", e.Kind, time.Duration(c.last))
	}
	c.last = e.T
	if int(e.Kind) < len(checks) {
		if check := checks[e.Kind]; check != nil {
			check(c, e)
		}
	}
}

// checks are the checks of each kind.
var checks = [...]func(*Checker, *Event){
	Start:     (*Checker).start,
	Tenant:    (*Checker).tenant,
	Admit:     (*Checker).admit,
	Reject:    (*Checker).reject,
	Counts:    (*Checker).counts,
	Lease:     (*Checker).lease,
	End:       (*Checker).end,
	Credit:    (*Checker).credit,
	Install:   (*Checker).install,
	Supersede: (*Checker).supersede,
	Expire:    (*Checker).expire,
	Return:    (*Checker).returned,
	Restart:   (*Checker).restart,
	exit:      (*Checker).exited,
}

// start: a run's or a process's tenant. Every process of a cluster
// announces the tenants it serves: one tenant, one configuration — unless
// an operator has changed it (a tenant event), when a start is a
// process's config file, which the ledger overrules.
func (c *Checker) start(e *Event) {
	old := c.tenants[e.Tenant]
	if old == nil {
		c.addTenant(e, e.Why, false)
		return
	}
	if old.changed {
		return
	}
	if old.rate != e.Rate || old.burst != e.Burst || old.regions != int(e.N) || old.mode != e.Why {
		c.violate(e.T, "tenant %q started again with another configuration", e.Tenant)
	}
}

// tenant: an operator's change, or the first the log says of a tenant.
func (c *Checker) tenant(e *Event) {
	if old := c.tenants[e.Tenant]; old != nil {
		c.change(old, e)
		return
	}
	c.addTenant(e, e.Mode, true)
}

// addTenant starts checking the tenant a start or tenant event states.
func (c *Checker) addTenant(e *Event, mode string, changed bool) {
	tc := &tenantCheck{
		name: e.Tenant, r: e.Rate.Float(), rate: e.Rate, b: e.Burst.Float(), burst: e.Burst,
		regions: int(e.N), mode: mode, minPrefix: math.Inf(1), using: map[string]*usage{},
		fAt: e.T, changed: changed, rMax: e.Rate.Float(), stopped: map[string]int64{},
	}
	if mode == quota.BestEffort.String() {
		tc.e = e.Balance.Float()
	}
	tc.allowed = float64(tc.regions) * tc.e
	c.tenants[e.Tenant] = tc
	c.report.Allowed = max(c.report.Allowed, tc.allowed)
}

// admit: the bound over every window ending now, and in hard mode a lease
// for the admitting region.
func (c *Checker) admit(e *Event) {
	tc := c.known(e)
	if tc == nil {
		return
	}
	c.report.Admitted += e.N
	if u := tc.using[e.Region]; u == nil && tc.mode == quota.Hard.String() {
		c.report.NoLeaseAdmitted += e.N
		c.violate(e.T, "hard mode: region %s admitted %d without a lease", e.Region, e.N)
	} else if u == nil {
		c.report.NoLeaseAdmitted += e.N
	}
	c.bound(tc, e.T, e.N)
}

// counts: a region's decisions over an interval, as admissions at its
// end, the bound's slack stretched to the interval (Checker); in hard
// mode, admissions need a lease at some time in the interval.
func (c *Checker) counts(e *Event) {
	tc := c.known(e)
	if tc == nil {
		return
	}
	c.report.Counts++
	c.report.Rejected += e.Rejected
	if e.N == 0 {
		return
	}
	c.report.Admitted += e.N
	from := e.T - e.Span
	if tc.using[e.Region] == nil {
		if last, ok := tc.stopped[e.Region]; !ok || last <= from {
			c.report.NoLeaseAdmitted += e.N
			if tc.mode == quota.Hard.String() {
				c.violate(e.T, "hard mode: region %s admitted %d in the interval from %v without a lease", e.Region, e.N, time.Duration(from))
			}
		}
	}
	tc.span = max(tc.span, e.Span)
	c.report.CountInterval = max(c.report.CountInterval, e.Span)
	c.report.Slack = max(c.report.Slack, tc.slack())
	c.bound(tc, e.T, e.N)
}

// bound adds n tokens admitted at t and checks the windows ending at t.
func (c *Checker) bound(tc *tenantCheck, t, n int64) {
	// With F(t) = ∫ R(u) du, the window [s, t] may admit
	// F(t) − F(s) + B(s): the worst start minimises A(s⁻) − F(s) + B(s).
	tc.advance(t)
	if !tc.started || t != tc.lastAdmit {
		b := tc.bcap(t)
		if tc.span > 0 && len(tc.history) > 0 {
			// A count ending at s may hold tokens from s − I, under the B
			// of then (larger than now's, if a shrink has taken hold
			// since).
			_, old := tc.capsAt(t - tc.span)
			b = max(b, old.Float())
		}
		if p := tc.admitted - tc.f + b; p < tc.minPrefix {
			tc.minPrefix, tc.minAt, tc.minF, tc.minB = p, t, tc.f, b
		}
		tc.started, tc.lastAdmit = true, t
	}
	tc.admitted += float64(n)
	excess := tc.admitted - tc.f - tc.minPrefix
	if excess > c.report.WorstExcess {
		c.report.WorstExcess, c.report.WorstFrom, c.report.WorstTo = excess, tc.minAt, t
	}
	if allowed := tc.allowed + tc.slack(); excess > allowed+1e-6 {
		bound := tc.f - tc.minF + tc.minB
		c.violate(t, "tenant %s: %.6g tokens admitted in the window from %v: R·Δ + B is %.6g (allowed excess %.6g)",
			tc.name, excess+bound, time.Duration(tc.minAt), bound, allowed)
	}
}

// reject is only counted.
func (c *Checker) reject(e *Event) {
	c.report.Rejected += e.N
}

// lease: a grant, unique, from an unfenced epoch, well formed, and
// transferring no more than was returned.
func (c *Checker) lease(e *Event) {
	tc := c.known(e)
	if tc == nil {
		return
	}
	c.report.Leases++
	tc.maxExpires = max(tc.maxExpires, e.Expires)
	if _, dup := c.leases[e.ID]; dup {
		c.violate(e.T, "lease %d granted twice", e.ID)
		return
	}
	lc := &leaseCheck{l: quota.Lease{
		ID: e.ID, Tenant: e.Tenant, Region: e.Region, Epoch: e.Epoch, Rate: e.Rate, Burst: e.Burst,
		Transfer: e.Transfer, Activates: time.Duration(e.Activates), Expires: time.Duration(e.Expires),
	}, cover: e.Cover}
	// A covered lease is not written: its cover's record stands for it,
	// so it needs a cover of its own region and shares, and counts only
	// while its cover does — also across a restart; spent after its cover
	// ended, it is a violation (Finish). No write refuses it, so only the
	// coordinator's proof of leadership keeps a deposed one from granting
	// it: a lease of any kind from an epoch older than one that has taken
	// over or granted already is a violation (below).
	if e.Cover != 0 {
		cv := c.leases[e.Cover]
		switch {
		case cv == nil && c.unlogged[e.Cover]:
			// The successor covers a renewal with the ledger's record of
			// a grant whose answer never left its deposed leader: what it
			// limits, the covered lease's own shares, is checked as any
			// lease's are; only its comparison with the record is not.
			c.report.UnloggedCovers++
		case cv == nil:
			c.violate(e.T, "lease %d covered by lease %d, which was never granted", e.ID, e.Cover)
		case cv.cover != 0 || cv.l.Tenant != e.Tenant || cv.l.Region != e.Region:
			c.violate(e.T, "lease %d covered by lease %d, which is not a written lease of the same region", e.ID, e.Cover)
		case e.Rate > cv.l.Rate || e.Burst > cv.l.Burst || e.Transfer != 0:
			c.violate(e.T, "lease %d (rate %v, burst %v, transfer %v) is more than its cover %d (rate %v, burst %v)",
				e.ID, e.Rate, e.Burst, e.Transfer, e.Cover, cv.l.Rate, cv.l.Burst)
		case cv.ended != 0 && cv.ended <= e.T:
			lc.ended = e.T
		}
		c.covered[e.Cover] = append(c.covered[e.Cover], e.ID)
	}
	if _, ok := c.firstGrant[e.Epoch]; !ok {
		c.firstGrant[e.Epoch] = e.T
	}
	switch {
	case e.Epoch < c.fenced && e.Cover == 0:
		c.violate(e.T, "lease %d granted at epoch %d after epoch %d fenced the ledger", e.ID, e.Epoch, c.fenced)
	case e.Epoch < c.fenced:
		c.violate(e.T, "covered lease %d granted at epoch %d after epoch %d took over: an answer without a write needs a proof that its coordinator still leads",
			e.ID, e.Epoch, c.fenced)
	default:
		for f, t0 := range c.firstGrant {
			if f > e.Epoch && t0 <= e.T {
				c.violate(e.T, "lease %d granted at epoch %d after epoch %d granted its first lease (at %v)", e.ID, e.Epoch, f, time.Duration(t0))
				break
			}
		}
	}
	if e.Rate < 0 || e.Burst < 0 || e.Transfer < 0 || e.Transfer > e.Burst || e.Expires <= e.Activates {
		c.violate(e.T, "lease %d malformed: rate %v burst %v transfer %v from %d to %d", e.ID, e.Rate, e.Burst, e.Transfer, e.Activates, e.Expires)
	}
	c.leases[e.ID] = lc
	if e.Transfer > 0 {
		// The credit moves into the lease as it activates — one step of
		// the coordinator's, one instant — which the log may write a
		// nanosecond before the event's own time, mapping clocks.
		at := e.T
		if e.Activates < at && e.Activates >= tc.creditAt {
			at = e.Activates
		}
		tc.setCredit(at, tc.credit-e.Transfer)
		if tc.credit < 0 {
			c.violate(e.T, "lease %d transfers %v tokens; only %v were returned and not yet moved", e.ID, e.Transfer, tc.credit+e.Transfer)
		}
	}
}

// end: the coordinator stopped counting a lease; the earliest end holds.
func (c *Checker) end(e *Event) { c.endAt(e.ID, e.T) }

// endAt ends lease id at t, and the leases it covers with it.
func (c *Checker) endAt(id uint64, t int64) {
	if lc := c.leases[id]; lc != nil && (lc.ended == 0 || t < lc.ended) {
		lc.ended = t
	}
	for _, cid := range c.covered[id] {
		if lc := c.leases[cid]; lc != nil && (lc.ended == 0 || t < lc.ended) {
			lc.ended = t
		}
	}
}

// credit: returned tokens held for a later transfer (or dropped, when
// negative).
func (c *Checker) credit(e *Event) {
	if tc := c.known(e); tc != nil {
		tc.setCredit(e.T, tc.credit+e.Balance)
	}
}

// install: a region spends only a lease granted to it, one at a time.
// Whether it spent it only while it counted is checked at Finish.
func (c *Checker) install(e *Event) {
	tc := c.known(e)
	if tc == nil {
		return
	}
	lc := c.leases[e.ID]
	switch {
	case lc == nil:
		c.violate(e.T, "region %s installed lease %d, which was never granted", e.Region, e.ID)
	case lc.l.Region != e.Region || lc.l.Tenant != e.Tenant:
		c.violate(e.T, "region %s installed lease %d, granted to %s", e.Region, e.ID, lc.l.Region)
	}
	if u := tc.using[e.Region]; u != nil {
		c.violate(e.T, "region %s installed lease %d while still spending under %d", e.Region, e.ID, u.id)
		tc.close(e.Region, e.T)
	}
	tc.using[e.Region] = &usage{region: e.Region, id: e.ID, from: e.T}
}

// supersede: a region stopped spending under the lease it was using.
func (c *Checker) supersede(e *Event) { c.stopSpending(e, true) }

// expire: a region stopped spending under the lease it was using.
func (c *Checker) expire(e *Event) { c.stopSpending(e, true) }

// returned: a region gave a lease back, which it may have stopped
// spending under already (superseded, expired).
func (c *Checker) returned(e *Event) { c.stopSpending(e, false) }

// exited: the process spending under lease e.ID wrote its last event
// (Merge's mark): a process spends nothing after it, whether it stopped or
// was killed. If the region spends under another lease by now, another
// process installed it, and the install was checked.
func (c *Checker) exited(e *Event) { c.stopSpending(e, false) }

// stopSpending closes the region's use of lease e.ID; using says that it
// must have been using it.
func (c *Checker) stopSpending(e *Event, using bool) {
	tc := c.known(e)
	if tc == nil {
		return
	}
	if u := tc.using[e.Region]; u != nil && u.id == e.ID {
		tc.close(e.Region, e.T)
	} else if using {
		c.violate(e.T, "region %s stopped spending under lease %d, which it was not using", e.Region, e.ID)
	}
}

// restart: a successor fenced the ledger at a higher epoch; with its live
// leases, the older ones it did not restore stopped counting.
func (c *Checker) restart(e *Event) {
	if e.Epoch <= c.fenced {
		c.violate(e.T, "restart at epoch %d, not above %d", e.Epoch, c.fenced)
	}
	c.fenced = max(c.fenced, e.Epoch)
	if e.Live == nil {
		return
	}
	// The successor's ledger is the truth: an older lease it did not
	// restore had stopped counting by now, though its end may be missing
	// from the log (its coordinator died between the write and the line)
	// — unless the ledger was restored from a backup, which may lack
	// leases still in use: then the successor grants nothing for Fence,
	// and such a lease counts until the fence ends.
	live := make(map[uint64]bool, len(*e.Live))
	for _, id := range *e.Live {
		live[id] = true
		if c.leases[id] == nil {
			c.unlogged[id] = true
		}
	}
	end := e.T + max(0, e.Fence)
	for id, lc := range c.leases {
		if lc.l.Epoch < e.Epoch && !live[id] && !(lc.cover != 0 && live[lc.cover]) && (lc.ended == 0 || lc.ended > end) {
			lc.ended = end
		}
	}
}

// checkInvariants checks the sums of the spans against the limits in
// force: one sweep for each interval in which they are constant.
func (c *Checker) checkInvariants(tc *tenantCheck, spans []quota.Span) {
	type seg struct {
		from, to    int64
		rate, burst quota.Micro
	}
	segs := []seg{{math.MinInt64, math.MaxInt64, tc.rate, tc.burst}}
	if len(tc.history) > 0 {
		var cuts []int64
		for _, h := range tc.history {
			cuts = append(cuts, h.at, h.until)
		}
		slices.Sort(cuts)
		cuts = slices.Compact(cuts)
		segs = segs[:0]
		from := int64(math.MinInt64)
		for _, cut := range append(cuts, math.MaxInt64) {
			if cut > from {
				r, b := tc.capsAt(from)
				segs = append(segs, seg{from, cut, r, b})
			}
			from = cut
		}
	}
	for _, sg := range segs {
		in := spans
		if len(segs) > 1 {
			in = nil
			for _, s := range spans {
				s.From, s.To = max(s.From, time.Duration(sg.from)), min(s.To, time.Duration(sg.to))
				if s.To > s.From {
					in = append(in, s)
				}
			}
		}
		p := quota.PeakOf(in)
		c.report.PeakRate = max(c.report.PeakRate, p.Rate.Float())
		c.report.PeakBurst = max(c.report.PeakBurst, p.Burst.Float())
		if p.Rate > sg.rate {
			c.violate(int64(p.RateAt), "tenant %s: rate shares sum to %v, R is %v", tc.name, p.Rate, sg.rate)
		}
		if p.Burst > sg.burst {
			c.violate(int64(p.BurstAt), "tenant %s: burst shares and credit sum to %v, B is %v", tc.name, p.Burst, sg.burst)
		}
	}
}

// known is the tenant of an event that needs one, or nil after a
// violation: the log has not stated its limits.
func (c *Checker) known(e *Event) *tenantCheck {
	tc := c.tenants[e.Tenant]
	if tc == nil {
		c.violate(e.T, "event %q for tenant %q before its start event", e.Kind, e.Tenant)
	}
	return tc
}

func (tc *tenantCheck) setCredit(t int64, v quota.Micro) {
	if tc.credit > 0 && t > tc.creditAt {
		tc.spans = append(tc.spans, quota.Span{Region: "\x00credit", Burst: tc.credit, From: time.Duration(tc.creditAt), To: time.Duration(t)})
	}
	tc.credit, tc.creditAt = v, t
}

func (tc *tenantCheck) close(region string, t int64) {
	u := tc.using[region]
	u.to = t
	tc.stopped[region] = t
	tc.uses = append(tc.uses, *u)
	delete(tc.using, region)
}

// Finish closes the run at time end and checks what needs the whole log:
// the invariants over time and each lease's use within its interval.
func (c *Checker) Finish(end int64) Report {
	// The leases by tenant, each tenant's by ID: one pass over them all,
	// not one per tenant (10,000 tenants and 500,000 leases took more
	// than a quarter of an hour that way).
	byTenant := make(map[string][]*leaseCheck, len(c.tenants))
	for _, id := range slices.Sorted(maps.Keys(c.leases)) {
		lc := c.leases[id]
		byTenant[lc.l.Tenant] = append(byTenant[lc.l.Tenant], lc)
	}
	for _, name := range slices.Sorted(maps.Keys(c.tenants)) {
		tc := c.tenants[name]
		for _, r := range slices.Sorted(maps.Keys(tc.using)) {
			tc.close(r, end)
		}
		tc.setCredit(end, tc.credit)
		spans := slices.Clone(tc.spans)
		for _, lc := range byTenant[name] {
			spans = append(spans, quota.SpanOf(lc.l, time.Duration(lc.ended)))
		}
		c.checkInvariants(tc, spans)
		for _, u := range tc.uses {
			lc := c.leases[u.id]
			if lc == nil {
				continue // reported at install
			}
			to := int64(lc.l.Expires)
			if lc.ended > 0 && lc.ended < to {
				to = lc.ended
			}
			if u.from < int64(lc.l.Activates) || u.to > to {
				c.violate(u.from, "region %s spent under lease %d from %v to %v; it counted only from %v to %v",
					u.region, u.id, time.Duration(u.from), time.Duration(u.to), lc.l.Activates, time.Duration(to))
			}
		}
	}
	if math.IsInf(c.report.WorstExcess, -1) {
		c.report.WorstExcess = 0
	}
	return c.report
}

// WindowExcess is, over the events written so far, the most tokens
// admitted in a window ending at t beyond R·Δ (Δ the window's length;
// ∫R over the window when a tenant event changed R),
// over every start: A(t) − R·t − min over admissions s of (A(s⁻) − R·s),
// the quantity the checker bounds by B. 0 for a tenant that admitted
// nothing (the empty window). t must not precede the last admission.
func (c *Checker) WindowExcess(tenant string, t int64) float64 {
	tc := c.tenants[tenant]
	if tc == nil || !tc.started {
		return 0
	}
	if t > tc.fAt {
		tc.advance(t)
	}
	// The worst window's admissions beyond ∫R: its bound less B(s).
	return max(0, tc.admitted-tc.f-tc.minPrefix+tc.minB)
}

// Spending says whether, by the events written so far, region spends
// tenant's tokens under a lease: it installed one and has not since
// stopped (superseded, expired, returned). An admission while it does not
// is one without a lease.
func (c *Checker) Spending(tenant, region string) bool {
	tc := c.tenants[tenant]
	return tc != nil && tc.using[region] != nil
}
