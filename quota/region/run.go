package region

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/afloat/afloat/quota"
)

// Coordinator is what a region's runner calls: a region renews and
// returns per region, many tenants in one call, not one call per tenant.
// coordinator.Server implements it in process, and quota/remote's Client
// over the network. Both calls must be safe for concurrent use.
//
// The call's context carries the caller's patience: its deadline is when
// the region stops waiting for the answer, and a coordinator drops the
// work it cannot answer by then rather than grant what nobody installs.
// An error means the call as a whole failed — nothing in it was answered
// (quota.ErrBusy: the coordinator sheds load and says how long to wait;
// or it is unreachable, or not the leader) — and the region backs off as
// a whole; otherwise each request or return has its own answer, in order.
type Coordinator interface {
	RenewBatch(ctx context.Context, reqs []quota.Request) ([]quota.Result, error)
	ReturnBatch(ctx context.Context, rets []quota.Return) ([]error, error)
}

// runEvery is how often Run looks at its schedule: a few tens of
// milliseconds is small beside a lease, and tenants that come due within
// it share a call.
const runEvery = 50 * time.Millisecond

// minBatch is the least a timeout shrinks a call to.
const minBatch = 64

// shutdownGrace bounds the returns Run sends once ctx has ended.
const shutdownGrace = 2 * time.Second

// exitGrace bounds the exit's call (WithExit), longer than the returns':
// one call, but it ends every lease of the region at the coordinator, a
// few hundred milliseconds of its time at 100,000 tenants, and when it
// fails the region's next agent waits a whole lease for them to end.
const exitGrace = 5 * time.Second

// Journal records what Run does to the leases, for the region's event
// log, which an audit holds against the global bound (afloat quota check
// merges the logs of every process). Each call returns once its record is
// written, or with the error that kept it from being written. Run calls
// it on its goroutines, concurrently: it must be safe for concurrent use.
//
// A return goes to the coordinator only after the journal has written it:
// the coordinator may grant the returned tokens to another region at once,
// and the log must not show them spent twice. An install is written once
// the lease is in use (what Install did is known only then), with the
// instant it began.
//
// When a record cannot be written, Run keeps the region serving and says
// so:
//   - an installed lease stays in use: the coordinator granted it and
//     counts it whatever the region does, so refusing it would give no
//     token back to anyone, and would turn a full disk into an outage of
//     every tenant in the region;
//   - a return is not sent: the coordinator counts the lease until it
//     ends, as when a return is lost (under-use, never overshoot);
//   - Run counts the failure (RunStats.JournalFailures), logs it
//     (WithLogger: at level Error, once each time the journal starts
//     failing), and when ctx ends returns it, wrapped in ErrJournal.
//
// The three records are the limiter's own account of the lease each
// tenant spends under — which, from when, until when — so that the
// journal keeps no copy of its own: package eventlog turns them into the
// log's events (eventlog.InstallEvents, ExpireEvent, ReturnEvent), for a
// process and for the chaos harness alike.
type Journal interface {
	// Installed records that a grant was put into use at at (this
	// limiter's clock); in.Dropped is the lease it replaced, if that was
	// still valid, or in.Expired the one that had run out before, at
	// in.ExpiredAt, unsaid.
	Installed(at int64, in Installed) error
	// Expired records that the region stopped spending under lease at
	// at, when it ran out (Limiter.Expired): Run says it once the lease's
	// end has come, or at its next install, whichever is first.
	Expired(at int64, lease quota.Lease) error
	// Returned records that the region stopped spending under ret's lease
	// at at, and is about to give it back.
	Returned(at int64, ret quota.Return) error
}

// ErrJournal is what Run returns, with ctx's error, when its Journal
// failed to write a record.
var ErrJournal = errors.New("region: journal write failed")

// ErrRunning is what Run returns at once when another Run of the same
// limiter is running: one runner renews a limiter's leases.
var ErrRunning = errors.New("region: Run is already running on this limiter")

// RunOption is an option of Run.
type RunOption func(*runOptions)

type runOptions struct {
	journal Journal
	logger  *slog.Logger
	exit    func(context.Context) error
	// handover receives the leases at the end instead of any return
	// (WithHandover).
	handover *Handover
}

// WithJournal has Run record what it does to the leases in j (see
// Journal for what Run does when a record fails). By default it records
// nothing.
func WithJournal(j Journal) RunOption { return func(o *runOptions) { o.journal = j } }

// WithExit has Run end its leases, when ctx ends, with one call of exit
// instead of giving them back one by one: Run takes every valid lease out
// of use and records it given back (Journal.Returned), then calls exit,
// which must end every lease of the region at the coordinator at once —
// an agent's detach (quota/remote Client.Detach, coordinator.Core.Detach)
// — within the grace period Run gives it (its context: 5 s). A return is a
// write at the coordinator, one for each lease: a region of 100,000
// tenants cannot have its returns written in a grace period, and a detach
// that queues behind them is not written either, so that the next agent
// of the region waits for every lease to run out (docs/benchmarks.md,
// "Quota at scale"). The detach is one write. What it does not do is move
// the leases' unspent balances to the other regions (quota.Lease.Transfer):
// they get the region's share at their next renewal, and fill it at the
// rate. If exit fails, the leases count at the coordinator until they
// end, as returns that were lost; Run says so (WithLogger) and counts them
// (RunStats.ReturnFailures).
func WithExit(exit func(context.Context) error) RunOption {
	return func(o *runOptions) { o.exit = exit }
}

// WithLogger logs what goes wrong in Run to logger, at level Warn: each
// call to the coordinator that fails as a whole (with the wait the region
// then takes), and, a line per call, the renewals a coordinator refused
// and the returns lost in a call it answered — but not calls or renewals
// refused because another agent holds the region (quota.ErrRegionHeld),
// which come every retry until its leases end: the Coordinator the caller
// passes sees those, for the caller to say once. A journal that starts
// failing is logged at level Error. By default Run logs nothing, and
// counts them (RunStats).
func WithLogger(logger *slog.Logger) RunOption { return func(o *runOptions) { o.logger = logger } }

// RunStats counts what Run did, since New, and says what it is doing.
type RunStats struct {
	Renewals int64 `json:"renewals"` // requests answered with a grant
	// RenewFailures counts the requests not answered with a grant: those
	// the coordinator refused one by one (Refused…) and those in calls
	// that failed as a whole (Batches…).
	RenewFailures  int64 `json:"renew_failures"`
	Installed      int64 `json:"installed"`       // grants put into use
	Kept           int64 `json:"kept"`            // answers that kept the lease in use (quota.Grant.Unchanged): no write at the coordinator
	Ignored        int64 `json:"ignored"`         // grants not installed (Outcome other than Accepted and Kept)
	Returns        int64 `json:"returns"`         // leases given back and acknowledged
	ReturnFailures int64 `json:"return_failures"` // returns that failed (the coordinator counts the lease until it expires); not one whose tenant was deleted
	// JournalFailures counts the records the Journal failed to write: the
	// installs among them stayed in use, the returns were not sent.
	JournalFailures int64 `json:"journal_failures"`

	// Batches and ReturnBatches count the calls Run sent: each carries up
	// to Config.BatchSize renewals, or returns.
	Batches       int64 `json:"batches"`
	ReturnBatches int64 `json:"return_batches"`
	// The calls that failed as a whole, by reason: the coordinator shed
	// load (quota.ErrBusy); no answer within the region's patience; no
	// leader answered, or the call failed otherwise (unreachable, refused
	// credentials); another agent holds the region (quota.ErrRegionHeld).
	// After each the region waits before it sends again (Backoff).
	BatchesBusy        int64 `json:"batches_busy"`
	BatchesTimedOut    int64 `json:"batches_timed_out"`
	BatchesUnavailable int64 `json:"batches_unavailable"`
	BatchesHeld        int64 `json:"batches_held"`
	// The renewals refused one by one in calls the coordinator answered,
	// by reason: the tenant, or its traffic in this region, unknown to it
	// (quota.ErrUnknownTenant, quota.ErrUnknownRegion); a stale or
	// unverified epoch, or an incarnation superseded (quota.ErrStaleEpoch,
	// quota.ErrUnverifiedEpoch, quota.ErrSuperseded); dropped to shed load
	// (quota.ErrBusy); anything else (the ledger did not take the write in
	// time, say). Each such tenant asks again after its retry interval.
	RefusedUnknown int64 `json:"refused_unknown"`
	RefusedFenced  int64 `json:"refused_fenced"`
	RefusedBusy    int64 `json:"refused_busy"`
	RefusedOther   int64 `json:"refused_other"`

	// InFlight is the calls under way now, and Backlog the tenants due
	// that wait for a place in one.
	InFlight int64 `json:"in_flight"`
	Backlog  int64 `json:"backlog"`
	// Backoff is how long until Run sends again, after calls that failed;
	// 0 when it is not backing off. Patience is the deadline it gives
	// each call now.
	Backoff  time.Duration `json:"backoff_ns"`
	Patience time.Duration `json:"patience_ns"`
	// BatchSize is the most requests Run puts in a call now:
	// Config.BatchSize, halved by each call that timed out (down to 64)
	// and doubled again by each answered within half its patience.
	BatchSize int64 `json:"batch_size"`
}

type runCounters struct {
	renewals, renewFailures, installed, kept, ignored, returns, returnFailures, journalFailures atomic.Int64
	outcomes                                                                                    [numOutcomes]atomic.Int64 // grants Run received, by what Install did (Grants)

	batches, returnBatches        atomic.Int64
	failed                        [numFailures]atomic.Int64 // calls failed as a whole, by reason
	refusedUnknown, refusedFenced atomic.Int64
	refusedBusy, refusedOther     atomic.Int64
	inFlight, backlog             atomic.Int64
	backoffUntil, patience, size  atomic.Int64 // on the limiter's clock; ns; requests
}

// RunStats reports Run's counters. Safe for concurrent use.
func (l *Limiter) RunStats() RunStats {
	c := &l.counters
	return RunStats{
		Renewals: c.renewals.Load(), RenewFailures: c.renewFailures.Load(),
		Installed: c.installed.Load(), Kept: c.kept.Load(), Ignored: c.ignored.Load(),
		Returns: c.returns.Load(), ReturnFailures: c.returnFailures.Load(),
		JournalFailures: c.journalFailures.Load(),

		Batches: c.batches.Load(), ReturnBatches: c.returnBatches.Load(),
		BatchesBusy: c.failed[failBusy].Load(), BatchesTimedOut: c.failed[failTimeout].Load(),
		BatchesUnavailable: c.failed[failUnavailable].Load(), BatchesHeld: c.failed[failHeld].Load(),
		RefusedUnknown: c.refusedUnknown.Load(), RefusedFenced: c.refusedFenced.Load(),
		RefusedBusy: c.refusedBusy.Load(), RefusedOther: c.refusedOther.Load(),
		InFlight: c.inFlight.Load(), Backlog: c.backlog.Load(),
		Backoff:  time.Duration(max(0, c.backoffUntil.Load()-l.Now())),
		Patience: time.Duration(c.patience.Load()), BatchSize: c.size.Load(),
	}
}

// Run is the limiter's runner: it renews the tenants' leases per region,
// not per tenant, installs the grants, and gives back the leases they
// replace and those of tenants removed.
//
// It keeps a schedule of when each tenant next needs a look (schedule.go),
// so that a pass — every 50 ms, whenever a call ends, and whenever a
// tenant is added or nudged — asks Due of the tenants whose time has come
// and of no others. It sends those due, renewals of valid leases first
// (the closest to its end first), then the tenants without one — a call
// carries one kind or the other, since renewals mostly need no write and
// first leases all do — in calls of at most
// Config.BatchSize requests, at most Config.InFlight calls at once — and
// one call of first leases more while renewals hold every place and the
// coordinator has kept up (no call refused, timed out or with requests
// not written by their deadline) for MaxPatience, so that slow renewals
// do not starve them: a region that starts with many tenants gets their
// first leases as fast as the coordinator answers, a coordinator short of
// writes spends them on renewals first, and a slow coordinator holds at
// most (InFlight + 1) × BatchSize of the region's requests. Run spreads each lease's
// ordinary renewal over Config.Spread of a lease around its half, drawn
// from Config.Seed, so that tenants granted together do not renew
// together.
//
// Each call has a deadline, the region's patience: the retry interval,
// doubled by each call that timed out (up to MaxRetry), and halved again
// once answers come back within half the shorter one; and at least what
// a busy refusal said a call needs now (quota.BusyError.Need, up to
// MaxPatience): a coordinator behind on its writes takes in only what it
// can write by a call's deadline, and says how long that is. (Timeouts
// alone do not take the patience past MaxRetry: an answer that comes
// late carries a lease measured from the request's sending, already
// partly gone, and a leader that stopped answering is left for the next
// one only once the patience has run out.) A timeout also halves what a
// call carries (down to 64 requests), so that calls get through a
// coordinator too slow to answer a whole batch in time; answers within
// half the patience double it again, up to BatchSize. A call that fails as a whole — the coordinator busy, no
// answer in time, no leader, the region held by another agent, or every
// renewal in it refused for the coordinator's own reasons (not written,
// dropped past its deadline) — makes the whole region wait before it
// sends anything again: the retry interval doubled with each call failed
// in a row (up to MaxRetry), times a draw in [0.5, 1.5) from Config.Seed,
// and at least the wait a quota.BusyError asks for. The requests it
// carried stay due. A renewal refused for its tenant's reason (unknown
// tenant or region, a fenced epoch or incarnation) waits its tenant's own
// retry interval (Due).
//
// Run runs at most InFlight goroutines besides its own, and its memory is
// linear in the tenants served, whatever the backlog. It returns when ctx
// ends, after giving every valid lease back (within a grace period of its
// own) — or ending them all with one call, WithExit — so that a region
// that shuts down cleanly hands its share on at once instead of letting
// its leases expire. It returns ctx's error, joined with
// one wrapping ErrJournal if its Journal failed; ErrRunning at once if
// another Run of the limiter is running.
func (l *Limiter) Run(ctx context.Context, c Coordinator, opts ...RunOption) error {
	if !l.running.CompareAndSwap(false, true) {
		return ErrRunning
	}
	defer l.running.Store(false)
	r := &runner{l: l, c: c, timers: bucketHeap{which: timersHeap}, ready: bucketHeap{which: readyHeap},
		fresh: bucketHeap{which: readyHeap}, done: make(chan callDone, l.cfg.InFlight+1), size: l.cfg.BatchSize}
	for _, f := range opts {
		f(&r.runOptions)
	}
	// Returns outlive ctx, for the grace period: cut short, they would
	// be lost (the coordinator counting the leases until they end).
	var stopReturns context.CancelFunc
	r.retCtx, stopReturns = context.WithCancel(context.WithoutCancel(ctx))
	defer stopReturns()
	// Every tenant is looked at in the first pass; those added later are
	// put up by SetTenants.
	now := l.Now()
	for _, n := range l.idx.Load().list {
		n.b.run = runState{at: now}
		r.timers.push(n.b)
	}
	t := time.NewTicker(runEvery)
	defer t.Stop()
	// A call's end sends only full calls: at the start, so that the
	// first leases come as fast as the coordinator answers; what is left
	// waits for the tick, and shares a call with what comes due by then.
	onlyFull := false
	for {
		r.pass(ctx, onlyFull)
		select {
		case <-ctx.Done():
			sctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
			defer cancel()
			defer context.AfterFunc(sctx, stopReturns)()
			for r.inFlight > 0 { // renewals end at once, cancelled with ctx (WithHandover: answered); returns within the grace
				r.finish(<-r.done)
			}
			r.returnAll(sctx)
			r.publish()
			return errors.Join(ctx.Err(), r.journalErr())
		case d := <-r.done:
			r.finish(d)
			onlyFull = true
		case <-t.C:
			onlyFull = false
		case <-l.wake:
			onlyFull = false
		}
	}
}

// runner is one call of Run. Its schedule, queue and backoff belong to
// Run's goroutine; the calls' goroutines report through done.
type runner struct {
	runOptions
	l      *Limiter
	c      Coordinator
	retCtx context.Context // the returns' calls': ctx's values, and the grace period past it

	// timers: when to look at a tenant next; ready: the tenants due with
	// a valid lease (renewals), by its end; fresh: those due without one
	// (first leases), first come, first served. A tenant is in one of
	// them at most (ready and fresh share the heap index).
	timers, ready, fresh bucketHeap
	order                uint64         // tenants made ready so far: ties go first come, first served
	returns              []quota.Return // recorded, waiting for a call
	inFlight             int            // calls under way
	inFlightFresh        int            // of them, calls of first leases
	done                 chan callDone  // their ends
	fails                int            // calls failed in a row
	failedCalls          uint64         // calls failed in all: draws the backoff's jitter
	level                int            // the patience is Retry·2^level, up to MaxRetry
	// need is the patience the coordinator last said a call needs
	// (quota.BusyError.Need), up to MaxPatience: the patience is at least
	// that, until answers come in half of it.
	need time.Duration
	// strainedAt is when a call last ended with the coordinator saying
	// it could not keep up (callDone.strained, or a failed call); 0 for
	// never.
	strainedAt int64
	size       int   // the most requests a call carries now: Config.BatchSize, halved by timeouts
	waitUntil  int64 // nothing is sent before, on the limiter's clock

	failing  atomic.Bool // the journal's last record failed
	mu       sync.Mutex
	failures int64 // records the journal failed to write, in this Run (under mu)
	first    error // the first of them (under mu)
}

// failure is why a call failed as a whole.
type failure int

const (
	answered failure = iota
	failBusy
	failTimeout
	failUnavailable
	failHeld

	numFailures
)

func (f failure) String() string {
	switch f {
	case failBusy:
		return "busy"
	case failTimeout:
		return "timeout"
	case failUnavailable:
		return "unavailable"
	case failHeld:
		return "held"
	}
	return "answered"
}

// failureOf classifies a call's error; timedOut says that its deadline
// passed.
func failureOf(err error, timedOut bool) (f failure, wait, need time.Duration) {
	var busy *quota.BusyError
	switch {
	case errors.As(err, &busy):
		return failBusy, busy.Wait, busy.Need
	case errors.Is(err, quota.ErrBusy):
		return failBusy, 0, 0
	case errors.Is(err, quota.ErrRegionHeld):
		return failHeld, 0, 0
	case timedOut || errors.Is(err, context.DeadlineExceeded):
		return failTimeout, 0, 0
	}
	return failUnavailable, 0, 0
}

// callDone is what a call's goroutine reports when the call ends.
type callDone struct {
	renewals []*bucket      // the tenants whose requests it carried (a renewal call)
	returns  []quota.Return // leases its grants replaced, recorded, to give back
	took     time.Duration
	patience time.Duration // the call's
	why      failure
	wait     time.Duration // the coordinator's, if it said busy
	need     time.Duration // the patience it said a call needs, if it said busy — the call, or some of its requests
	err      error
	what     string // "renewals" or "returns", for the log
	n        int    // requests or returns it carried
	fresh    bool   // a call of first leases
	shutdown bool   // ctx ended: no failure of the coordinator's
	// noLeader: the call failed unavailable with no answer from a
	// leader (none elected, or none reachable), rather than refused by
	// one for its own reasons.
	noLeader bool
	// strained: the coordinator said it could not keep up — the call
	// failed as a whole (busy, timed out, every request refused for its
	// own reasons), or some of its requests were refused busy or not
	// written by their deadline.
	strained bool
}

// pass is one look at the schedule: the tenants put up, then those whose
// time has come, then what can be sent (onlyFull: full calls only).
func (r *runner) pass(ctx context.Context, onlyFull bool) {
	l := r.l
	now := l.Now()
	l.up.take(func(b *bucket) { r.attend(now, b) })
	for r.timers.len() > 0 && r.timers.min().run.at <= now {
		r.look(now, r.timers.pop())
	}
	for _, ret := range l.takeLeaving() {
		if r.record(now, ret) {
			r.returns = append(r.returns, ret)
		}
	}
	for _, lp := range l.takeLapsed() {
		r.lapsed(lp.at, lp.lease)
	}
	if ctx.Err() == nil && now >= r.waitUntil {
		r.send(ctx, now, onlyFull)
	}
	r.publish()
}

// attend looks at a tenant put up by an event, at once unless it already
// waits for a call or an answer.
func (r *runner) attend(now int64, b *bucket) {
	switch {
	case r.l.bucket(b.name) != b:
		r.drop(b) // removed
	case b.run.calling, r.ready.has(b), r.fresh.has(b):
	default:
		r.timers.remove(b)
		r.look(now, b)
	}
}

// look asks Due about b: due, it waits for a call (ready); else it is
// looked at again when time alone may make it due.
func (r *runner) look(now int64, b *bucket) {
	l := r.l
	if l.bucket(b.name) != b {
		r.drop(b)
		return
	}
	// A lease's end is one of the instants a tenant is looked at: said
	// here, when it comes (or at the next install, if a call is under
	// way then).
	b.mu.Lock()
	lease, at, ok := b.expired(now)
	resumedUntil := b.resumedUntil // 0 once anything is installed
	b.mu.Unlock()
	if ok {
		r.lapsed(at, lease)
	}
	if l.due(now, b) {
		b.run.order = r.order
		r.order++
		if s := b.cur.Load(); s.valid(now) {
			b.run.urgency = s.until
			r.ready.push(b)
		} else if resumedUntil > now {
			// A lease handed over (Resume) is renewed as the previous
			// agent would have: among the renewals, by its end —
			// renewed once it has ended, it costs a write.
			b.run.urgency = resumedUntil
			r.ready.push(b)
		} else {
			b.run.urgency = noLease
			r.fresh.push(b)
		}
		return
	}
	r.later(now, b)
}

// later schedules b's next look.
func (r *runner) later(now int64, b *bucket) {
	b.run.at = max(r.l.nextLook(now, b), now+1)
	r.timers.push(b)
}

// drop forgets a removed tenant's bucket.
func (r *runner) drop(b *bucket) {
	r.timers.remove(b)
	r.ready.remove(b)
	r.fresh.remove(b)
}

// send starts calls while there is room: returns first (they free share
// for other regions at once), then renewals, most urgent first; with
// onlyFull, only calls of BatchSize.
func (r *runner) send(ctx context.Context, now int64, onlyFull bool) {
	l := r.l
	size := r.size
	least := 1
	if onlyFull {
		least = size
	}
	for r.inFlight < l.cfg.InFlight && len(r.returns) >= least {
		n := min(len(r.returns), size)
		rets := r.returns[:n:n]
		if n == len(r.returns) {
			r.returns = nil
		} else {
			r.returns = append([]quota.Return(nil), r.returns[n:]...)
		}
		r.start(func(patience time.Duration) callDone { return r.sendReturns(r.retCtx, rets, patience) })
		l.counters.returnBatches.Add(1)
	}
	// Renewals first, within InFlight; then first leases, within
	// InFlight too — or, when renewals hold every place, no call of first
	// leases is under way and the coordinator has not said it could not
	// keep up for MaxPatience, in one call more, so that tenants without
	// a lease are not starved by slow renewals. A coordinator that
	// refuses or times out is short of writes, not slow to answer: there
	// a call of first leases more would take writes from renewals, leases
	// would lapse, and each lapse would cost a first lease more — the
	// spiral that took a run of 100,000 tenants from 246,432 pairs
	// leased down to 34,676 in 11 s (docs/benchmarks.md).
	for r.inFlight < l.cfg.InFlight && r.ready.len() >= least {
		if !r.sendRenewals(ctx, now, &r.ready, size, false) {
			break
		}
	}
	unstrained := r.strainedAt == 0 || now-r.strainedAt >= int64(l.cfg.MaxPatience)
	for (r.inFlight < l.cfg.InFlight || unstrained && r.inFlightFresh == 0 && r.inFlight < l.cfg.InFlight+1) && r.fresh.len() >= least {
		if !r.sendRenewals(ctx, now, &r.fresh, size, true) {
			break
		}
	}
}

// sendRenewals starts a call of up to size of the tenants in h, most
// urgent first; false if none of them was due after all.
func (r *runner) sendRenewals(ctx context.Context, now int64, h *bucketHeap, size int, fresh bool) bool {
	l := r.l
	var batch []*bucket
	var reqs []quota.Request
	for len(batch) < size && h.len() > 0 {
		b := h.pop()
		if l.bucket(b.name) != b {
			r.drop(b)
			continue
		}
		if !l.due(now, b) { // no longer (its demand settled, say)
			r.later(now, b)
			continue
		}
		req := l.request(now, b) // b is the tenant's bucket (above)
		b.run.calling = true
		batch, reqs = append(batch, b), append(reqs, req)
	}
	if len(batch) == 0 {
		return false
	}
	least := min(l.cfg.MaxPatience, time.Duration(1+len(reqs)/sizePatience)*l.cfg.Retry)
	if fresh {
		r.inFlightFresh++
		least = max(least, min(l.cfg.MaxPatience, freshPatience*l.cfg.Retry))
	}
	// With a handover, a call under way when ctx ends is answered (within
	// its patience) rather than cancelled: its grants are installed and
	// handed over. Cancelled, its tenants would hand over the leases they
	// held before it — while the coordinator had answered it, and was
	// still writing its grants — and the next agent's first requests,
	// naming the older leases, would need writes of their own behind those
	// (docs/benchmarks.md, "The quota at scale").
	cctx := ctx
	if r.handover != nil {
		cctx = context.WithoutCancel(ctx)
	}
	r.start(func(patience time.Duration) callDone {
		d := r.renew(cctx, batch, reqs, max(patience, least))
		d.fresh = fresh
		return d
	})
	l.counters.batches.Add(1)
	return true
}

// freshPatience is, in retry intervals, the least patience of a call of
// first leases (2 s with DefaultConfig's retry, 1 s with the agent's): each of them is a write, a
// call of 2,048 is two or three of etcd's transactions and more behind
// the writes queued ahead, and one given up on halfway wastes the
// writes made (a grant the region never installs counts against its
// tenant until it expires). At the renewals' 500 ms, the restart of every
// region at 20,000 tenants took 24 s to lease every tenant again, its
// first calls timing out; 11 s with this, and a start at 100,000 tenants
// 37 s instead of 60–66 s (docs/benchmarks.md).
const freshPatience = 4

// sizePatience is how many requests a call carries for each retry
// interval its patience takes at least beyond the first (750 ms for a
// full call with the agent's retry, 1.5 s with DefaultConfig's): its
// body and its answer are read, written and sent in time that grows with
// what it carries, and a coordinator on busy cores took longer than the
// quarter of the patience its handler leaves for that. Calls of 2,048
// renewals then timed out every few seconds at 100,000 tenants with two
// busy loops on the cores, each throwing away the answers the coordinator
// had given (mostly covered renewals) and backing the region off;
// their tenants' leases lapsed, and every lapse cost a first lease —
// writes the coordinator was short of (docs/benchmarks.md).
const sizePatience = 1024

// start runs a call on a goroutine of its own, with the region's patience.
func (r *runner) start(call func(patience time.Duration) callDone) {
	r.inFlight++
	patience := r.patience()
	go func() { r.done <- call(patience) }()
}

// patience is the deadline Run gives a call now.
func (r *runner) patience() time.Duration {
	return max(min(r.l.cfg.MaxRetry, r.l.cfg.Retry<<r.level), min(r.need, r.l.cfg.MaxPatience))
}

// finish takes in a call's end: its tenants back into the schedule, the
// returns its grants made queued, and the region's backoff.
func (r *runner) finish(d callDone) {
	l := r.l
	r.inFlight--
	if d.fresh {
		r.inFlightFresh--
	}
	now := l.Now()
	for _, b := range d.renewals {
		b.run.calling = false
		r.look(now, b)
	}
	r.returns = append(r.returns, d.returns...)
	if d.strained || !d.shutdown && d.why != answered && d.why != failHeld {
		r.strainedAt = max(now, 1)
	}
	switch {
	case d.shutdown:
	case d.why == answered:
		r.fails = 0
		// An answer within half the call's patience: a call twice the
		// size would have made it.
		if d.took < d.patience/2 {
			r.size = min(l.cfg.BatchSize, 2*r.size)
		}
		// Answers within half the shorter patience: it will do again.
		if r.level > 0 && d.took < min(l.cfg.MaxRetry, l.cfg.Retry<<(r.level-1))/2 {
			r.level--
		}
		if r.need > 0 && d.took < r.need/2 {
			r.need /= 2
			if r.need < l.cfg.Retry {
				r.need = 0
			}
		}
		if d.fresh && d.need > r.patience() {
			// Some of its first leases were refused for the writes queued
			// ahead of them: asked again with the same patience, they
			// would be refused again. (A renewal is not refused so where
			// the coordinator can keep its shares on no write instead,
			// coordinator.Core.Keep; and a longer patience for every
			// renewal would leave a paused leader later.)
			r.need = min(d.need, l.cfg.MaxPatience)
		}
	default:
		r.failed(now, d)
	}
}

// failed backs the region off after a call that failed as a whole.
func (r *runner) failed(now int64, d callDone) {
	l := r.l
	l.counters.failed[d.why].Add(1)
	r.fails++
	r.failedCalls++
	base := min(l.cfg.MaxRetry, l.cfg.Retry<<min(r.fails-1, 30))
	wait := time.Duration(float64(base) * (0.5 + l.draw("", r.failedCalls)))
	wait = max(wait, d.wait)
	if d.noLeader {
		// No coordinator answered as the leader: one is being elected
		// (a successor leads within the session's TTL, 5 s by default,
		// about half a default lease), or none is reachable. The call
		// cost no coordinator any work, so waiting longer spares none;
		// but a region whose doubled wait ran past the end of the
		// leases it was renewing would let them lapse, and every lapse
		// is a first lease the new leader must write to give back — a
		// storm of them just as it takes over. So the region asks again
		// within half the time left to the soonest of those leases,
		// never sooner than half the first retry.
		if end := soonestEnd(now, d.renewals); end > now {
			wait = min(wait, max(time.Duration(end-now)/2, l.cfg.Retry/2))
		}
	}
	r.waitUntil = max(r.waitUntil, now+int64(wait))
	if d.why == failBusy && d.need > r.patience() {
		// Refused because what the coordinator has queued ahead would not
		// be written by the call's deadline: the next call waits as long
		// as it said a call needs now, rather than be refused again.
		r.need = min(d.need, l.cfg.MaxPatience)
	}
	if d.why == failTimeout {
		// The coordinator is slow: wait longer for it, and ask it for
		// less at a time, so that some calls make it even when it cannot
		// answer a whole batch within the patience.
		if r.l.cfg.Retry<<r.level < l.cfg.MaxRetry {
			r.level++
		}
		r.size = max(r.size/2, min(minBatch, l.cfg.BatchSize))
	}
	if r.logger != nil && d.why != failHeld {
		r.logger.Warn("quota region: a call to the coordinator failed; the region waits before it asks again",
			"region", l.cfg.Region, "call", d.what, "n", d.n, "reason", d.why.String(), "wait", wait, "err", d.err)
	}
}

// soonestEnd is the earliest end of a valid lease among the tenants of a
// call, at now; 0 when none holds one (a call of first leases).
func soonestEnd(now int64, batch []*bucket) int64 {
	var end int64
	for _, b := range batch {
		if s := b.cur.Load(); s != nil && s.valid(now) && (end == 0 || s.until < end) {
			end = s.until
		}
	}
	return end
}

// publish updates what RunStats says of Run's state.
func (r *runner) publish() {
	c := &r.l.counters
	c.inFlight.Store(int64(r.inFlight))
	c.backlog.Store(int64(r.ready.len() + r.fresh.len()))
	c.backoffUntil.Store(r.waitUntil)
	c.patience.Store(int64(r.patience()))
	c.size.Store(int64(r.size))
}

// renew sends one call of renewals, and installs its grants. It runs on
// the call's goroutine.
func (r *runner) renew(ctx context.Context, batch []*bucket, reqs []quota.Request, patience time.Duration) callDone {
	l := r.l
	d := callDone{renewals: batch, what: "renewals", n: len(reqs), patience: patience}
	cctx, cancel := context.WithTimeout(ctx, patience)
	defer cancel()
	began := time.Now()
	res, err := r.c.RenewBatch(cctx, reqs)
	d.took = time.Since(began)
	if err == nil && len(res) != len(reqs) {
		err = fmt.Errorf("region: %d answers to %d requests", len(res), len(reqs))
	}
	d.shutdown = ctx.Err() != nil
	timedOut := !d.shutdown && cctx.Err() != nil
	if err != nil {
		for _, req := range reqs {
			l.lose(req.Tenant, req.Seq) // due again, when the region asks again
		}
		if !d.shutdown { // else no failure of the coordinator's
			l.counters.renewFailures.Add(int64(len(reqs)))
			d.why, d.wait, d.need = failureOf(err, timedOut)
			d.err = err
			d.noLeader = d.why == failUnavailable
		}
		return d
	}
	if own, busy := refusedByCoordinator(res); own {
		// Every renewal refused for the coordinator's own reasons — shed,
		// dropped past the deadline, not written — and none for its
		// tenant's: the call failed as a whole, in effect, and the region
		// backs off as a whole. An answer that took half the patience or
		// more says the coordinator is slow (it drops what it cannot write
		// by the deadline): a timeout.
		l.counters.renewFailures.Add(int64(len(reqs)))
		for _, req := range reqs {
			l.lose(req.Tenant, req.Seq)
		}
		switch {
		case busy:
			d.why = failBusy
		case timedOut || d.took >= patience/2:
			d.why = failTimeout
		default:
			d.why = failUnavailable
		}
		d.err = res[0].Err
		return d
	}
	var refused int
	var firstErr error
	var firstTenant string
	for i, res := range res {
		if res.Err != nil {
			l.counters.renewFailures.Add(1)
			if timedOut {
				// Answered past the region's patience: the region backs
				// off as a whole, and the tenant is due again with the
				// others when it asks again.
				l.lose(reqs[i].Tenant, reqs[i].Seq)
			}
			refusal(&l.counters, res.Err).Add(1)
			if !tenants(res.Err) && !errors.Is(res.Err, quota.ErrRegionHeld) {
				d.strained = true
			}
			var busy *quota.BusyError
			if errors.As(res.Err, &busy) {
				// Refused for the writes queued ahead of it: it says how
				// long a call needs (finish).
				d.need = max(d.need, busy.Need)
			}
			if !errors.Is(res.Err, quota.ErrRegionHeld) {
				if refused++; firstErr == nil {
					firstErr, firstTenant = res.Err, reqs[i].Tenant
				}
			}
			continue
		}
		if ret, ok := r.install(res.Grant); ok {
			d.returns = append(d.returns, ret)
		}
	}
	if timedOut && refused > 0 {
		d.why, d.err = failTimeout, firstErr
	}
	if refused > 0 && r.logger != nil && !d.shutdown {
		r.logger.Warn("quota region: renewals refused",
			"region", l.cfg.Region, "refused", refused, "of", len(reqs), "tenant", firstTenant, "err", firstErr)
	}
	return d
}

// refusedByCoordinator says whether every result of a call is a refusal
// for the coordinator's own reasons (not an unknown tenant or region, not
// an epoch or incarnation fenced), and whether all of those said busy.
func refusedByCoordinator(res []quota.Result) (own, busy bool) {
	if len(res) == 0 {
		return false, false
	}
	busy = true
	for _, r := range res {
		if r.Err == nil || tenants(r.Err) {
			return false, false
		}
		busy = busy && errors.Is(r.Err, quota.ErrBusy)
	}
	return true, busy
}

// tenants says whether a renewal's refusal is for its tenant's reasons:
// the coordinator knows no such tenant or region, or the epoch or the
// agent's incarnation is fenced — asking again soon changes nothing.
func tenants(err error) bool {
	return errors.Is(err, quota.ErrUnknownTenant) || errors.Is(err, quota.ErrUnknownRegion) ||
		errors.Is(err, quota.ErrStaleEpoch) || errors.Is(err, quota.ErrUnverifiedEpoch) || errors.Is(err, quota.ErrSuperseded)
}

// refusal is the counter of a renewal refused with err.
func refusal(c *runCounters, err error) *atomic.Int64 {
	switch {
	case errors.Is(err, quota.ErrUnknownTenant), errors.Is(err, quota.ErrUnknownRegion):
		return &c.refusedUnknown
	case errors.Is(err, quota.ErrStaleEpoch), errors.Is(err, quota.ErrUnverifiedEpoch), errors.Is(err, quota.ErrSuperseded):
		return &c.refusedFenced
	case errors.Is(err, quota.ErrBusy):
		return &c.refusedBusy
	}
	return &c.refusedOther
}

// install puts a grant into use, and says what to give back: the lease it
// replaced, once recorded.
func (r *runner) install(g quota.Grant) (quota.Return, bool) {
	l := r.l
	l.counters.renewals.Add(1)
	now := l.Now()
	in := l.Install(now, g)
	l.counters.outcomes[in.Outcome].Add(1)
	if in.Outcome == Kept {
		l.counters.kept.Add(1)
		return quota.Return{}, false // the lease in use stands: nothing to install or return
	}
	if !in.OK() {
		l.counters.ignored.Add(1)
		return quota.Return{}, false
	}
	l.counters.installed.Add(1)
	l.spreadLease(g.Lease.Tenant, in.Lease.ID)
	if r.journal != nil {
		// The lease stays in use even if its record fails (see Journal).
		r.recorded(r.journal.Installed(now, in), "install", g.Lease.Tenant)
	}
	if in.Return != nil && r.record(now, *in.Return) {
		return *in.Return, true
	}
	return quota.Return{}, false
}

// lapsed has the journal record that lease ran out at at.
func (r *runner) lapsed(at int64, lease quota.Lease) {
	if r.journal != nil {
		r.recorded(r.journal.Expired(at, lease), "expire", lease.Tenant)
	}
}

// record has the journal record a return at at, and says whether it may
// be sent.
func (r *runner) record(at int64, ret quota.Return) bool {
	if r.journal == nil {
		return true
	}
	// Not recorded, not sent: the coordinator counts the lease until it
	// ends.
	return r.recorded(r.journal.Returned(at, ret), "return", ret.Tenant)
}

// sendReturns sends one call of returns, recorded already. It runs on
// the call's goroutine (or returnAll's).
func (r *runner) sendReturns(ctx context.Context, rets []quota.Return, patience time.Duration) callDone {
	l := r.l
	d := callDone{what: "returns", n: len(rets), patience: patience}
	cctx, cancel := context.WithTimeout(ctx, patience)
	defer cancel()
	began := time.Now()
	errs, err := r.c.ReturnBatch(cctx, rets)
	d.took = time.Since(began)
	if err == nil && len(errs) != len(rets) {
		err = fmt.Errorf("region: %d answers to %d returns", len(errs), len(rets))
	}
	d.shutdown = ctx.Err() != nil
	if err != nil {
		l.counters.returnFailures.Add(int64(len(rets)))
		d.why, d.wait, d.need = failureOf(err, cctx.Err() != nil)
		d.err = err
		return d
	}
	var lost int
	var firstErr error
	var first quota.Return
	for i, err := range errs {
		if errors.Is(err, quota.ErrUnknownTenant) {
			// The tenant was deleted (the usual reason a region gives its
			// lease back without being asked): its leases went with it, so
			// nothing is left to count, and the return is done rather than
			// lost.
			err = nil
		}
		if err != nil {
			l.counters.returnFailures.Add(1)
			if lost++; firstErr == nil {
				firstErr, first = err, rets[i]
			}
			continue
		}
		l.counters.returns.Add(1)
	}
	if lost > 0 && r.logger != nil {
		r.logger.Warn("quota region: returns lost; the coordinator counts the leases until they expire",
			"region", l.cfg.Region, "lost", lost, "of", len(rets), "tenant", first.Tenant, "lease", first.LeaseID, "err", firstErr)
	}
	return d
}

// exitAll ends rets — every lease Run held, taken out of use and
// recorded given back — with one call of exit (WithExit).
func (r *runner) exitAll(ctx context.Context, rets []quota.Return) {
	l := r.l
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), exitGrace)
	defer cancel()
	if err := r.exit(ctx); err != nil {
		l.counters.returnFailures.Add(int64(len(rets)))
		if r.logger != nil {
			r.logger.Warn("quota region: the leases could not be ended at once at shutdown; the coordinator counts them until they expire",
				"region", l.cfg.Region, "leases", len(rets), "err", err)
		}
		return
	}
	l.counters.returns.Add(int64(len(rets)))
}

// recorded notes the journal's answer to a record of what (install or
// return) for tenant, and says whether it was written.
func (r *runner) recorded(err error, what, tenant string) bool {
	if err == nil {
		if r.failing.Load() && r.failing.CompareAndSwap(true, false) && r.logger != nil {
			r.logger.Info("quota region: the journal writes again", "region", r.l.cfg.Region)
		}
		return true
	}
	r.l.counters.journalFailures.Add(1)
	r.mu.Lock()
	if r.failures++; r.first == nil {
		r.first = err
	}
	r.mu.Unlock()
	if !r.failing.Swap(true) && r.logger != nil {
		r.logger.Error("quota region: the journal failed: installed leases stay in use, returns wait for it (RunStats.JournalFailures counts the records lost)",
			"region", r.l.cfg.Region, "record", what, "tenant", tenant, "err", err)
	}
	return false
}

// journalErr is the journal's failures in this Run, if any.
func (r *runner) journalErr() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.first == nil {
		return nil
	}
	return fmt.Errorf("%w: %d records not written; the first: %w", ErrJournal, r.failures, r.first)
}

// handOver takes every valid lease out of use and puts it in h, giving
// nothing back (WithHandover). A lease whose record fails stays out of
// use but is not handed on: the journal must say where spending under
// it stopped before anyone spends under it again.
func (r *runner) handOver(h *Handover) {
	l := r.l
	h.Region = l.cfg.Region
	h.Leases = h.Leases[:0]
	for _, n := range l.idx.Load().list {
		now := l.Now()
		if ret, hl, ok := l.handedOver(now, n.tenant, n.b); ok {
			if r.record(now, ret) {
				h.Leases = append(h.Leases, hl)
			}
		} else if lease, at, ok := l.Expired(now, n.tenant); ok {
			r.lapsed(at, lease)
		}
	}
}

// returnAll gives back, once Run's ctx has ended, what is queued and
// every valid lease, in batches, InFlight calls at a time, until ctx (the
// grace period) ends; or, WithExit, ends them all with one call of exit.
func (r *runner) returnAll(ctx context.Context) {
	l := r.l
	rets := r.returns
	r.returns = nil
	now := l.Now()
	for _, ret := range l.takeLeaving() {
		if r.record(now, ret) {
			rets = append(rets, ret)
		}
	}
	for _, lp := range l.takeLapsed() {
		r.lapsed(lp.at, lp.lease)
	}
	if h := r.handover; h != nil {
		r.handOver(h)
		return
	}
	for _, n := range l.idx.Load().list {
		now := l.Now()
		if ret, ok := l.giveBack(now, n.tenant, n.b); ok && r.record(now, ret) {
			rets = append(rets, ret)
		} else if lease, at, ok := l.Expired(now, n.tenant); ok {
			r.lapsed(at, lease)
		}
	}
	if r.exit != nil {
		r.exitAll(ctx, rets)
		return
	}
	var wg sync.WaitGroup
	sem := make(chan struct{}, l.cfg.InFlight)
	for len(rets) > 0 {
		n := min(len(rets), l.cfg.BatchSize)
		batch := rets[:n:n]
		rets = rets[n:]
		sem <- struct{}{}
		l.counters.returnBatches.Add(1)
		wg.Go(func() {
			defer func() { <-sem }()
			d := r.sendReturns(ctx, batch, shutdownGrace)
			if d.err != nil && r.logger != nil {
				r.logger.Warn("quota region: returns lost at shutdown; the coordinator counts the leases until they expire",
					"region", l.cfg.Region, "returns", d.n, "reason", d.why.String(), "err", d.err)
			}
		})
	}
	wg.Wait()
}
