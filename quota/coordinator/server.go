package coordinator

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/afloat/afloat/bulkhead"
	"github.com/afloat/afloat/quota"
)

// Server runs a Core: a lock around it, the machine's monotonic clock, and
// a committer that persists the core's steps. The core proposes under the
// lock; the committer writes outside it, batched across concurrent calls —
// every step that arrives while a write is in flight goes into the next
// transaction, as many as fit in the ledger's limit of operations per
// transaction, and a step too large for one is split over several — then
// records the steps in the journal (WithJournal), and only then
// acknowledges them to the core (Core.Advance), which gives each call its
// answer: a grant is never sent before it is durable and logged.
//
// It keeps its own head above water. Calls are admitted through a
// bulkhead (WithAdmission): a bounded number in flight, a bounded queue,
// and beyond it a *quota.BusyError saying how long to wait, at once.
// Work whose caller has given up is dropped: a call's context deadline
// is its caller's patience, and a renewal still queued when that
// deadline is too near for its write to land is taken back (Core.Abandon)
// — never written, never sent, never counted. A write the ledger refuses
// for its size (ErrTxnTooLarge) is split smaller, never written again as
// it was. An answer that rests on no write of its own (a covered or
// unchanged lease) is given only under the ledger's proof that this
// coordinator still leads (Ledger.Proof, Core.Proven), asked for anew
// (Ledger.Confirm) when the last one has lapsed.
//
// It implements region.Coordinator, so limiters in the same process renew
// through it, and package quota/remote serves it over HTTP. It is safe for
// concurrent use.
type Server struct {
	ledger     Ledger
	start      time.Time
	opts       serverOptions
	admit      *bulkhead.Bulkhead // calls of more than SmallCall requests
	admitSmall *bulkhead.Bulkhead // the others

	mu    sync.Mutex
	jmu   sync.Mutex // one journal append at a time: the committer's and covered answers'
	core  *Core
	queue []pending // steps not yet persisted, in order
	// bg holds the background steps (Step.Background), persisted when
	// queue is empty and the calls' writes have paused (idle).
	bg []pending
	// callWrote is when the committer last wrote calls' steps (not the
	// background's).
	callWrote time.Time
	kick      chan struct{}
	stopped   chan struct{}
	stopErr   error
	stats     Stats
	// maxOps is the most operations a transaction carries: the ledger's
	// limit (MaxOpser), halved each time the ledger refuses a write for
	// its size.
	maxOps int
	// writeTime is a moving average of how long the committer takes over
	// a transaction — the ledger's write, the journal, the answers, all
	// that keeps it from the next one: how many operations a call's
	// deadline leaves room for behind those queued (fits), how close to
	// its deadline a queued step may be and still be written in time
	// (drop), and how long a busy refusal asks callers to wait.
	writeTime time.Duration
	// flushOps is how many operations of the batch the committer took
	// from the queue are not written yet: ahead of any step queued now.
	flushOps int
	// draining: Run's context ended; the calls queued are being written,
	// and new ones are refused (ErrStopping).
	draining bool
	// unresolved: a write of unknown outcome could not be resolved yet
	// (the ledger unreachable): the next write resolves it first.
	unresolved bool
}

// pending is a step on its way to the ledger and the journal, and who
// waits for its answer.
type pending struct {
	at   time.Duration
	step Step
	done chan outcome // nil: nobody waits (an expiry, the seeding)
	// again: the step failed to persist and was acknowledged so (its call
	// has failed); it is written again for the ledger to catch up, and
	// answers nobody.
	again bool
	// deadline is when its caller stops waiting, on the server's clock;
	// 0 for none.
	deadline time.Duration
}

// outcome is what a call waits for: its answer, or why it has none.
type outcome struct {
	ans Answer
	err error
}

// Stats counts what a server did; for metrics and benchmarks.
type Stats struct {
	Txns     int64 // ledger transactions written
	Ops      int64 // operations in them
	Steps    int64 // steps persisted
	Failures int64 // transactions that failed to persist (ledger or journal)
	// Unknown counts the writes whose outcome was unknown
	// (ErrOutcomeUnknown), each resolved by reading the ledger back;
	// Landed those of them the ledger had applied, which counted as
	// written.
	Unknown int64
	Landed  int64
	// JournalFailures counts the journal's failed appends (their calls
	// failed).
	JournalFailures int64
	// Covered counts the calls answered without a write (cover.go).
	Covered int64
	// Busy counts the calls refused busy (quota.ErrBusy) — at admission,
	// or with requests whose writes would land past the call's deadline
	// behind the writes queued ahead — and Abandoned the steps taken back
	// because their caller's deadline passed before they could be
	// written (Core.Abandon).
	Busy      int64
	Abandoned int64
	// Kept counts the renewals whose write would have landed after their
	// call's deadline, answered instead with a covered lease at the
	// shares the region held (Core.Keep).
	Kept int64
	// Split counts the writes the ledger refused for their size, each
	// then split smaller; MaxOps is the most operations a transaction
	// carries now.
	Split  int64
	MaxOps int
	// Confirms counts the proofs of leadership asked of the ledger
	// (Ledger.Confirm) before answers without a write, and Unproven the
	// calls that failed for want of one.
	Confirms int64
	Unproven int64
	// Queued is the steps waiting for the committer now, and QueuedOps
	// their operations (the background's included: Step.Background).
	Queued    int
	QueuedOps int
}

// Journal is where a Server records what it does — an event log — before
// it answers: a call is answered only once its step is written to the
// ledger and appended here, and a failed Append fails the calls of its
// steps as a failed ledger write does (they are written and appended
// again with the next write, so that neither misses a step).
type Journal interface {
	// Append records the steps of one ledger transaction, in the order
	// they were taken — or covered steps, which no write carries
	// (cover.go) — and returns once they are stored. Never two at once;
	// it must not call the server.
	Append(entries []Entry) error
}

// Entry is a step as a Journal records it: At is when it was taken, on
// the server's clock (Server.Since).
type Entry struct {
	At   time.Duration
	Step Step
}

type serverOptions struct {
	nudge    func(quota.Nudge)
	journal  Journal
	logger   *slog.Logger
	expiry   time.Duration
	drain    time.Duration
	inFlight int
	queued   int
	// The places of calls of at most SmallCall requests
	// (WithSmallAdmission).
	smallInFlight int
	smallQueued   int
}

// ServerOption is an option of NewServer.
type ServerOption func(*serverOptions)

// WithNudges delivers the nudges for other regions, once the grant that
// caused them is answered.
func WithNudges(f func(quota.Nudge)) ServerOption {
	return func(o *serverOptions) { o.nudge = f }
}

// WithJournal records every step in j after its ledger write and before
// its call is answered (Journal); by default nothing is recorded.
func WithJournal(j Journal) ServerOption { return func(o *serverOptions) { o.journal = j } }

// WithLogger logs each failed write (at Warn) to logger; by default the
// server logs nothing and counts them (Stats.Failures).
func WithLogger(logger *slog.Logger) ServerOption {
	return func(o *serverOptions) { o.logger = logger }
}

// WithDrain bounds how long Run, once its context ends, goes on writing
// the calls it has taken and resolving a write of unknown outcome before
// it gives up on them (their calls fail); default DefaultDrain. 0 gives
// up at once, as a kill would.
func WithDrain(d time.Duration) ServerOption { return func(o *serverOptions) { o.drain = d } }

// WithAdmission bounds the calls the server takes in: at most inFlight
// at once (each a batch of up to a region's whole renewal), at most
// queued more waiting for one of those places, none waiting past its
// deadline; beyond that a call is refused at once with a
// *quota.BusyError. Returns, attaches and detaches go ahead of renewals
// in the queue: they free share. Defaults DefaultInFlight and
// DefaultQueued; both at least 1.
//
// Calls of at most SmallCall requests have places of their own
// (WithSmallAdmission): the bound is on the steps a call brings, and a
// call of one renewal — an agent that does not batch, a return, an
// attach — brings a 2,048th of what a region's full batch does. Counted
// in the same places, sixteen of them capped a coordinator on a fast
// etcd at 3,100 single renewals a second (docs/benchmarks.md).
func WithAdmission(inFlight, queued int) ServerOption {
	return func(o *serverOptions) { o.inFlight, o.queued = inFlight, queued }
}

// WithSmallAdmission bounds the calls of at most SmallCall requests the
// server takes in, as WithAdmission does the others: at most inFlight at
// once, queued more waiting. Defaults DefaultSmallInFlight and
// DefaultSmallQueued; both at least 1.
func WithSmallAdmission(inFlight, queued int) ServerOption {
	return func(o *serverOptions) { o.smallInFlight, o.smallQueued = inFlight, queued }
}

// SmallCall is the most requests of a call that takes one of the places
// of WithSmallAdmission.
const SmallCall = 128

// The small calls' defaults: as many steps in flight as the large calls'
// (DefaultInFlight batches of remote.MaxBatch = 256 calls of SmallCall),
// and sixteen times as many calls waiting — a waiting call holds its
// body and a goroutine, no step — so that a client renewing one lease a
// call at 6,000 a second rides out an etcd write that stalls for half a
// second (1,024 did not: one in seven of such renewals was refused busy).
const (
	DefaultSmallInFlight = 256
	DefaultSmallQueued   = 4096
)

// The admission's defaults: a region sends a few batches at once, so that
// sixteen calls in flight keep three regions' renewals and returns moving
// while bounding the steps queued for the ledger to some thirty thousand
// (sixteen batches of remote.MaxBatch), a few seconds of writes at the
// worst; sixty-four more may wait for a place.
const (
	DefaultInFlight = 16
	DefaultQueued   = 64
)

// DefaultDrain is how long a stopping Server finishes its writes:
// several etcd round trips and an election's worth of waiting, well
// inside the 10 s a supervisor gives a process between SIGTERM and
// SIGKILL.
const DefaultDrain = 5 * time.Second

// ErrStopping: the server's Run is stopping (its context ended); it
// writes the calls it has taken and takes no new one. The caller asks
// again, of the next leader.
var ErrStopping = errors.New("coordinator: stopping")

// MaxOpser is implemented by a ledger with a limit on the operations of
// one Commit.
type MaxOpser interface{ MaxOps() int }

// DefaultMaxOps is etcd's default limit on the operations of a
// transaction (--max-txn-ops).
const DefaultMaxOps = 128

// NewServer fences the ledger and starts a coordinator on it. Run must run
// for calls to be answered.
func NewServer(ctx context.Context, cfg Config, ledger Ledger, opts ...ServerOption) (*Server, error) {
	s := &Server{ledger: ledger, start: time.Now(), kick: make(chan struct{}, 1), stopped: make(chan struct{})}
	// Often, so that each pass ends few leases: a pass a second over
	// thousands of tenants ended thousands of leases at once, under the
	// lock, and every call waited behind it.
	s.opts.expiry = 100 * time.Millisecond
	s.opts.drain = DefaultDrain
	s.opts.inFlight, s.opts.queued = DefaultInFlight, DefaultQueued
	s.opts.smallInFlight, s.opts.smallQueued = DefaultSmallInFlight, DefaultSmallQueued
	for _, o := range opts {
		o(&s.opts)
	}
	if s.opts.inFlight < 1 || s.opts.queued < 1 {
		return nil, fmt.Errorf("%w: coordinator: admission of %d calls in flight and %d queued: want at least 1 each", quota.ErrConfig, s.opts.inFlight, s.opts.queued)
	}
	if s.opts.smallInFlight < 1 || s.opts.smallQueued < 1 {
		return nil, fmt.Errorf("%w: coordinator: admission of %d small calls in flight and %d queued: want at least 1 each", quota.ErrConfig, s.opts.smallInFlight, s.opts.smallQueued)
	}
	if ledger == nil {
		return nil, fmt.Errorf("%w: nil ledger", quota.ErrConfig)
	}
	s.maxOps = DefaultMaxOps
	if m, ok := ledger.(MaxOpser); ok && m.MaxOps() > 0 {
		s.maxOps = m.MaxOps()
	}
	s.writeTime = 20 * time.Millisecond
	var err error
	if s.admit, err = bulkhead.New(s.opts.inFlight, bulkhead.WithQueue(s.opts.queued)); err != nil {
		return nil, err
	}
	if s.admitSmall, err = bulkhead.New(s.opts.smallInFlight, bulkhead.WithQueue(s.opts.smallQueued)); err != nil {
		return nil, err
	}
	snap, err := ledger.Fence(ctx) // may wait long: a campaign
	if err != nil {
		return nil, fmt.Errorf("coordinator: fencing the ledger: %w", err)
	}
	// The clock starts now, not before the fence: every restored lease
	// counts for a whole lease duration and margin from here.
	s.start = time.Now()
	core, err := New(cfg, snap, 0)
	if err != nil {
		return nil, err
	}
	s.core = core
	return s, nil
}

// Since is the server's clock: monotonic time since it started. Start
// is when it started, for converting the clock to wall time.
func (s *Server) Since() time.Duration { return time.Since(s.start) }

// Start is the wall-clock time at which Since was 0.
func (s *Server) Start() time.Time { return s.start }

// Epoch is the server's epoch.
func (s *Server) Epoch() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.core.Epoch()
}

// Restoring reports whether the coordinator still waits out a restored
// ledger's leases (Restored), and for how much longer.
func (s *Server) Restoring() (time.Duration, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	until, waiting := s.core.Restoring()
	return max(0, until-s.Since()), waiting
}

// Stats reports what the server has written so far, and what waits.
func (s *Server) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.stats
	st.MaxOps = s.maxOps
	st.Queued = len(s.queue) + len(s.bg)
	for _, p := range s.queue {
		st.QueuedOps += len(p.step.Ops)
	}
	for _, p := range s.bg {
		st.QueuedOps += len(p.step.Ops)
	}
	return st
}

// Tenant returns a tenant's configuration, with defaults.
func (s *Server) Tenant(name string) (quota.Tenant, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.core.Tenant(name)
}

// Renew renews one request (RenewBatch of one): the grant comes back
// once it is written. An error means nothing was granted: the region
// asks again.
func (s *Server) Renew(ctx context.Context, req quota.Request) (quota.Grant, error) {
	res, err := s.RenewBatch(ctx, []quota.Request{req})
	if err != nil {
		return quota.Grant{}, err
	}
	return res[0].Grant, res[0].Err
}

// RenewBatch implements region.Coordinator: many requests at once, one
// turn of the lock for all of them, their steps written together. Each
// result is answered once its step is written. The call as a whole is
// refused with a *quota.BusyError when the server is at its admission
// bound, and with ErrStopping while it stops.
func (s *Server) RenewBatch(ctx context.Context, reqs []quota.Request) ([]quota.Result, error) {
	outs, err := s.submit(ctx, bulkhead.PriorityNormal, len(reqs), func(at time.Duration, i int) (Step, error) { return s.core.Renew(at, reqs[i]) },
		func(at time.Duration, i int) (Step, bool) { return s.core.Keep(at, reqs[i]) })
	if err != nil {
		return nil, err
	}
	res := make([]quota.Result, len(reqs))
	for i, o := range outs {
		res[i] = quota.Result{Grant: o.ans.Grant, Err: o.err}
	}
	return res, nil
}

// Return gives one lease back (ReturnBatch of one): it returns once the
// return is written.
func (s *Server) Return(ctx context.Context, ret quota.Return) error {
	errs, err := s.ReturnBatch(ctx, []quota.Return{ret})
	if err != nil {
		return err
	}
	return errs[0]
}

// ReturnBatch implements region.Coordinator for returns, as RenewBatch
// for requests; returns are admitted ahead of renewals.
func (s *Server) ReturnBatch(ctx context.Context, rets []quota.Return) ([]error, error) {
	outs, err := s.submit(ctx, bulkhead.PriorityHigh, len(rets), func(at time.Duration, i int) (Step, error) { return s.core.Return(at, rets[i]) }, nil)
	if err != nil {
		return nil, err
	}
	errs := make([]error, len(rets))
	for i, o := range outs {
		errs[i] = o.err
	}
	return errs, nil
}

// call is submit for a single call of high priority — an attach, a
// detach, a tenant's change: its error whether the call was refused
// whole or its step failed.
func (s *Server) call(ctx context.Context, propose func(at time.Duration) (Step, error)) error {
	outs, err := s.submit(ctx, bulkhead.PriorityHigh, 1, func(at time.Duration, _ int) (Step, error) { return propose(at) }, nil)
	if err != nil {
		return err
	}
	return outs[0].err
}

// submit is every call's way through the server. It admits the call
// (the bulkhead: a *quota.BusyError when full), then under the lock reads
// the clock once and has the core propose a step for each of n calls
// (propose), and queues them for the committer; then, outside the lock,
// it waits for each one's answer, which the committer gets from the core
// once the step is persisted (Core.Advance). One turn of the lock for a
// batch, so that a region's batch does not queue its requests one by one
// behind the lock (thousands of goroutines contending for one mutex hand
// it over slowly). A call the core refuses has its error at once; the
// nudges of the calls answered are delivered (WithNudges). The call's
// deadline (its context's) goes with its steps: the committer drops those
// it could no longer write in time (Core.Abandon). A step whose write
// would land after the deadline is taken back, and keep, if not nil, may
// give a covered answer instead (Core.Keep); else it is refused busy.
func (s *Server) submit(ctx context.Context, prio bulkhead.Priority, n int, propose func(at time.Duration, i int) (Step, error), keep func(at time.Duration, i int) (Step, bool)) ([]outcome, error) {
	admit, inFlight, queued := s.admit, s.opts.inFlight, s.opts.queued
	if n <= SmallCall {
		admit, inFlight, queued = s.admitSmall, s.opts.smallInFlight, s.opts.smallQueued
	}
	permit, err := admit.Acquire(bulkhead.WithPriority(ctx, prio))
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("%w: waiting for admission: %w", ErrNotWritten, ctx.Err())
		}
		s.mu.Lock()
		s.stats.Busy++
		wait := s.busyWait()
		s.mu.Unlock()
		return nil, &quota.BusyError{Wait: wait, Why: fmt.Sprintf("%d calls in flight and %d queued: %v", inFlight, queued, bulkhead.ReasonOf(err))}
	}
	defer permit.Release()
	out := make([]outcome, n)
	done := make([]chan outcome, n)
	s.mu.Lock()
	if s.draining && s.stopErr == nil {
		s.mu.Unlock()
		return nil, fmt.Errorf("%w: %w", ErrNotWritten, ErrStopping)
	}
	at := s.Since()
	var deadline time.Duration
	ahead := 0 // the operations to be written before this call's
	if d, ok := ctx.Deadline(); ok {
		deadline = max(1, d.Sub(s.start))
		ahead = s.aheadOps()
	}
	s.proof()
	var covered []int    // the calls whose steps are covered and proven,
	var coveredSt []Step // and those steps: none in most calls
	cover := func(i int, st Step) {
		if coveredSt == nil {
			// Room for the rest of the call at once: in the steady
			// state nearly every renewal is covered, and a Step is
			// large — growing by doubling allocated twice the call's
			// steps and copied them on the way.
			covered, coveredSt = make([]int, 0, n-i), make([]Step, 0, n-i)
		}
		covered, coveredSt = append(covered, i), append(coveredSt, st)
	}
	var late *quota.BusyError
	refused := 0
	for i := range n {
		step, err := propose(at, i)
		if err != nil {
			out[i].err = err
			continue
		}
		if step.Covered && s.core.Proven(at) {
			// Its answer rests on no write (cover.go), and leadership is
			// proven: answered below, once journalled, ahead of the queue.
			cover(i, step)
			continue
		}
		// A step without ops needs a proof of leadership instead, which
		// may take a round trip to the ledger: counted as one.
		cost := max(1, len(step.Ops))
		if deadline != 0 && !s.fits(at, deadline, ahead+cost) {
			// Its write would land after the caller gave up: taken back
			// before anything of it is written, and the request refused
			// busy — not granted a lease the region never gets, which
			// would count against its tenant until it expired.
			if rest, ok := s.core.Abandon(step); ok {
				if keep != nil && s.core.Proven(at) {
					if kept, ok := keep(at, i); ok {
						// The shares the region holds, on no write: the
						// ends the renewal made still go to the ledger.
						s.stats.Kept++
						if len(rest.Ops) > 0 || len(rest.Ended) > 0 {
							s.queue = append(s.queue, pending{at: at, step: rest})
							ahead += len(rest.Ops)
						}
						cover(i, kept)
						continue
					}
				}
				if late == nil {
					s.stats.Busy++
					late = &quota.BusyError{Wait: s.busyWait(), Why: "the writes queued ahead would land after the call's deadline",
						Need: s.need(ahead + cost)}
				}
				out[i].err, refused = late, refused+1
				if len(rest.Ops) > 0 || len(rest.Ended) > 0 {
					s.queue = append(s.queue, pending{at: at, step: rest})
					ahead += len(rest.Ops)
				}
				continue
			}
		}
		ahead += cost
		done[i] = make(chan outcome, 1)
		s.queue = append(s.queue, pending{at: at, step: step, done: done[i], deadline: deadline})
	}
	for _, st := range s.core.Deferred() {
		s.enqueue(pending{at: at, step: st})
	}
	s.answerCovered(at, covered, coveredSt, out)
	s.kickCommitter()
	s.mu.Unlock()
	if n > 0 && refused == n {
		// Nothing of the call can be done in time: refused whole, so that
		// the caller backs off, and learns how long a call now needs.
		return nil, late
	}
	for i, d := range done {
		if d != nil {
			out[i] = s.wait(ctx, d)
		}
	}
	if s.opts.nudge != nil {
		for _, o := range out {
			for _, nu := range o.ans.Nudges {
				s.opts.nudge(nu)
			}
		}
	}
	return out, nil
}

// proof takes the ledger's newest proof of leadership into the core, on
// the server's clock; called under mu.
func (s *Server) proof() {
	sent, until := s.ledger.Proof(s.core.Epoch(), time.Now())
	if sent.IsZero() {
		return
	}
	s.core.Led(sent.Sub(s.start), until.Sub(s.start))
}

// aheadOps is how many operations are to be written before a step
// queued now: the queue's and what the committer has taken and not yet
// written. Called under mu.
func (s *Server) aheadOps() int {
	ops := s.flushOps
	for _, p := range s.queue {
		ops += len(p.step.Ops)
	}
	return ops
}

// fits says whether ops operations, from at, can be written a write's
// time before deadline — the time the answer needs on its way — at the
// ledger's pace: maxOps a transaction, one transaction a writeTime.
// Called under mu.
func (s *Server) fits(at, deadline time.Duration, ops int) bool {
	return at+s.need(ops) <= deadline
}

// need is how long from now ops operations take to write, plus the
// margin of one write (fits). Called under mu.
func (s *Server) need(ops int) time.Duration {
	txns := (ops + s.maxOps - 1) / max(1, s.maxOps)
	return time.Duration(txns+1) * s.writeTime
}

// busyWait is how long a busy refusal asks its caller to wait: about
// the time the writes queued take, within a tenth of a second and five
// seconds; called under mu.
func (s *Server) busyWait() time.Duration {
	ops := 0
	for _, p := range s.queue {
		ops += len(p.step.Ops)
	}
	txns := 1 + ops/max(1, s.maxOps)
	return min(max(time.Duration(txns)*s.writeTime, 100*time.Millisecond), 5*time.Second)
}

// answerCovered answers the covered steps of a call (steps[k], the
// step of call idx[k]) into out: once the journal has them — all in one
// append — each is acknowledged to the core, which gives its answer; a
// failed append fails them all, as a failed write would. Called under mu.
func (s *Server) answerCovered(at time.Duration, idx []int, steps []Step, out []outcome) {
	if len(idx) == 0 {
		return
	}
	var err error
	if s.opts.journal != nil {
		entries := make([]Entry, len(steps))
		for k, st := range steps {
			entries[k] = Entry{At: at, Step: st}
		}
		s.jmu.Lock()
		err = s.opts.journal.Append(entries)
		s.jmu.Unlock()
		if err != nil {
			s.stats.JournalFailures++
			err = fmt.Errorf("coordinator: journal: %w", err)
		}
	}
	s.stats.Covered += int64(len(idx))
	for k, i := range idx {
		ans, aerr := s.core.Advance(steps[k], err)
		out[i] = outcome{ans, aerr}
	}
}

// enqueue queues a step no caller waits for: in the background queue if
// it may wait (Step.Background), else in order. Called under mu.
func (s *Server) enqueue(p pending) {
	if p.step.Background {
		s.bg = append(s.bg, p)
		return
	}
	s.queue = append(s.queue, p)
}

func (s *Server) kickCommitter() {
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

func (s *Server) wait(ctx context.Context, done chan outcome) outcome {
	select {
	case o := <-done:
		return o
	case <-ctx.Done():
		return outcome{err: fmt.Errorf("%w: waiting for the ledger: %w", ErrNotWritten, ctx.Err())}
	case <-s.stopped:
		return outcome{err: fmt.Errorf("%w: %w", ErrNotWritten, s.stopErr)}
	}
}

// Live lists a tenant's leases that count now.
func (s *Server) Live(tenant string) []quota.Lease {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.core.Live(tenant)
}

// LiveIDs lists every lease that counts (Core.LiveIDs).
func (s *Server) LiveIDs() []uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.core.LiveIDs()
}

// Run is the committer: it persists the queued steps, batched — the
// ledger write, then the journal — acknowledges them to the core and
// answers their calls; ten times a second it ends expired leases. It
// returns when ctx ends or when the ledger refuses a write for a stale
// epoch (a successor has fenced it: then quota.ErrStaleEpoch, and every
// call from then on fails with it). Other errors, of the ledger or the
// journal, fail the calls of that write — the regions ask again — and the
// steps are written and recorded again with the next write, so that the
// ledger and the journal catch up. A write of unknown outcome is resolved
// by reading the ledger back before anything depends on it (commit).
//
// When ctx ends, Run stops gracefully: it refuses new calls
// (ErrStopping), writes the steps it has taken and resolves a write in
// flight — for at most the drain time (WithDrain), its writes no longer
// bound to ctx, since a write cancelled halfway has an unknown outcome —
// then fails whatever is left and returns ctx's error. The caller then
// resigns (its ledger's), so that a successor takes over at once.
func (s *Server) Run(ctx context.Context) error {
	// The writes' context: ctx's values, and its end only a drain time
	// after ctx's.
	wctx, wcancel := context.WithCancel(context.WithoutCancel(ctx))
	defer wcancel()
	stopDrain := context.AfterFunc(ctx, func() {
		s.mu.Lock()
		s.draining = true // at once, though a write may hold up the loop
		s.mu.Unlock()
		if s.opts.drain <= 0 {
			wcancel()
			return
		}
		t := time.AfterFunc(s.opts.drain, wcancel)
		context.AfterFunc(wctx, func() { t.Stop() })
	})
	defer stopDrain()
	tick := time.NewTicker(s.opts.expiry)
	defer tick.Stop()
	var retry <-chan time.Time
	backoff := 50 * time.Millisecond
	// The config's tenants the ledger lacks are written first.
	s.mu.Lock()
	// The config's tenants the ledger lacks are written first, and the
	// core's first reservation of IDs.
	if seed := append(s.core.Seeding(), s.core.Deferred()...); len(seed) > 0 {
		at := s.Since()
		for _, st := range seed {
			s.enqueue(pending{at: at, step: st})
		}
		s.kickCommitter()
	}
	s.mu.Unlock()
	for {
		select {
		case <-ctx.Done():
			return s.drain(ctx, wctx)
		case <-s.kick:
		case <-retry:
		case <-tick.C:
			s.mu.Lock()
			at := s.Since()
			steps, err := s.core.Expire(at)
			for _, st := range steps {
				s.enqueue(pending{at: at, step: st})
			}
			s.mu.Unlock()
			if err != nil {
				s.stop(err)
				return err
			}
		}
		retry = nil
		err := s.flush(wctx)
		switch {
		case err == nil:
			backoff = 50 * time.Millisecond
		case errors.Is(err, quota.ErrStaleEpoch):
			s.mu.Lock()
			s.core.Fenced(err)
			s.mu.Unlock()
			s.stop(err)
			return err
		default:
			retry = time.After(backoff)
			backoff = min(2*backoff, time.Second)
		}
	}
}

// drain is Run's end once ctx has ended: no new call is taken, and what
// was taken is written while wctx lasts.
func (s *Server) drain(ctx, wctx context.Context) error {
	s.mu.Lock()
	s.draining = true
	s.mu.Unlock()
	backoff := 20 * time.Millisecond
	for {
		err := s.flush(wctx)
		s.mu.Lock()
		left := len(s.queue) > 0 || s.unresolved
		s.mu.Unlock()
		switch {
		case errors.Is(err, quota.ErrStaleEpoch):
			s.mu.Lock()
			s.core.Fenced(err)
			s.mu.Unlock()
			s.stop(err)
			return err
		case err == nil && !left, wctx.Err() != nil:
			if left && s.opts.logger != nil {
				s.opts.logger.Warn("quota coordinator: stopped with writes not done; their calls fail", "err", err)
			}
			s.stop(ctx.Err())
			return ctx.Err()
		}
		if err != nil {
			select {
			case <-wctx.Done():
			case <-time.After(backoff):
			}
			backoff = min(2*backoff, 500*time.Millisecond)
		}
	}
}

// stop fails every waiting call and every later one with err.
func (s *Server) stop(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopErr != nil {
		return
	}
	s.stopErr = err
	if !errors.Is(err, quota.ErrStaleEpoch) {
		s.stopErr = fmt.Errorf("coordinator: stopped: %w", err)
	}
	s.core.Fenced(s.stopErr)
	for _, p := range s.queue {
		if p.done != nil && !p.again {
			p.done <- outcome{err: fmt.Errorf("%w: %w", ErrNotWritten, s.stopErr)}
		}
	}
	s.queue, s.bg = nil, nil
	close(s.stopped)
}

// flush persists everything queued, in order, in transactions of at most
// maxOps operations — whole steps while they fit; a step larger than
// that alone, over as many transactions as it needs — and acknowledges
// each step to the core once all of it is written and recorded. Before
// a step goes into a transaction, one whose caller could no longer have
// its answer in time is taken back (drop). It stops at the first
// failure, acknowledges the failure of every step from there on (their
// calls fail), and puts them back at the head of the queue to be written
// again. A write refused for its size is not a failure: maxOps is halved
// and the same steps are written again, smaller.
func (s *Server) flush(ctx context.Context) error {
	for {
		s.mu.Lock()
		batch := s.queue
		s.queue = nil
		background := len(batch) == 0
		if background {
			if len(s.bg) == 0 || !s.idle() {
				s.mu.Unlock()
				return nil // the background waits: a later flush (the tick's) looks again
			}
			// Nothing waits, and nothing has for a while: the background's turn.
			batch, s.bg = s.bg, nil
		}
		epoch := s.core.Epoch()
		s.flushOps = 0
		for _, p := range batch {
			s.flushOps += len(p.step.Ops)
		}
		s.mu.Unlock()
		if len(batch) == 0 {
			return nil
		}
		for len(batch) > 0 {
			s.mu.Lock()
			if background && len(s.queue) > 0 {
				// A call waits: its steps go first, the background's
				// rest after them.
				s.bg = append(batch, s.bg...)
				s.flushOps = 0
				s.mu.Unlock()
				break
			}
			// (What drop takes back still counts in flushOps until the
			// batch is written: a little more than is ahead, never less.)
			batch = s.drop(batch)
			maxOps := s.maxOps
			s.mu.Unlock()
			if len(batch) == 0 {
				break
			}
			n, ops := 0, 0
			for n < len(batch) && (n == 0 || ops+len(batch[n].step.Ops) <= maxOps) {
				ops += len(batch[n].step.Ops)
				n++
			}
			txn := batch[:n]
			began := time.Now()
			err := s.persist(ctx, epoch, txn, ops)
			if errors.Is(err, ErrTxnTooLarge) {
				s.mu.Lock()
				s.stats.Split++
				s.maxOps = max(1, min(s.maxOps, ops)/2)
				if s.opts.logger != nil {
					s.opts.logger.Warn("quota coordinator: the ledger refused a write for its size; writing it again, split smaller",
						"ops", ops, "max_ops", s.maxOps, "err", err)
				}
				s.mu.Unlock()
				if ops > 1 {
					continue // the same steps, in smaller transactions
				}
			}
			s.mu.Lock()
			if err != nil {
				s.stats.Failures++
				if s.opts.logger != nil {
					s.opts.logger.Warn("quota coordinator: a write failed; its calls fail and its steps are written again",
						"ops", ops, "steps", n, "err", err)
				}
				back := &s.queue
				if background {
					back = &s.bg // it waits its turn again
				}
				rest := make([]pending, 0, len(batch)+len(*back))
				for _, p := range batch {
					s.acknowledge(p, err)
					rest = append(rest, pending{at: p.at, step: p.step, again: true})
				}
				*back = append(rest, *back...)
				s.flushOps = 0
				s.mu.Unlock()
				return err
			}
			s.stats.Steps += int64(n)
			if !background {
				s.callWrote = time.Now()
			}
			for _, p := range txn {
				s.acknowledge(p, nil)
			}
			if ops > 0 {
				// A moving average over about eight transactions, each
				// as long as the committer was kept from the next one.
				s.writeTime += (time.Since(began) - s.writeTime) / 8
			}
			s.flushOps = max(0, s.flushOps-ops)
			s.mu.Unlock()
			batch = batch[n:]
		}
		s.mu.Lock()
		s.flushOps = 0
		s.mu.Unlock()
	}
}

// idle says whether the background's steps may be written now: the
// calls' writes have paused for bgQuiet (or four writes' time, if longer),
// or the oldest background step has waited bgMaxWait. Between the calls
// of a busy region a background transaction would otherwise slip in
// whenever the queue is empty for an instant, and each call would wait
// for one: when every region restarted at once at 100,000 tenants, the
// detaches' 300,000 ends written between the first leases doubled the
// time to lease every tenant again (docs/benchmarks.md). What waits is
// only the deletion of records of leases that have stopped counting.
// Called under mu, with bg not empty.
func (s *Server) idle() bool {
	return time.Since(s.callWrote) >= max(bgQuiet, 4*s.writeTime) || s.Since()-s.bg[0].at >= bgMaxWait
}

// bgQuiet and bgMaxWait: see idle.
const (
	bgQuiet   = 200 * time.Millisecond
	bgMaxWait = 30 * time.Second
)

// drop takes back, from the head of batch, the steps whose callers will
// have given up before their write can land: a deadline nearer than
// twice a write's usual time. What such a step must still persist (the
// ends it made) stays, answering nobody; the caller gets ErrAbandoned.
// Steps that cannot be taken back (Core.Abandon) are written. It looks
// at one transaction's worth of steps at a time, just before writing
// them, so that a step deep in the queue is judged when its turn comes.
// Called under mu.
func (s *Server) drop(batch []pending) []pending {
	late := s.Since() + 2*s.writeTime
	var out []pending // nil while nothing changed: no copy
	ops := 0
	i := 0
	for ; i < len(batch) && ops <= s.maxOps; i++ {
		p := batch[i]
		if p.done != nil && !p.again && p.deadline != 0 && p.deadline < late {
			if rest, ok := s.core.Abandon(p.step); ok {
				s.stats.Abandoned++
				p.done <- outcome{err: fmt.Errorf("%w: %w", ErrNotWritten, ErrAbandoned)}
				if out == nil {
					out = append(make([]pending, 0, len(batch)), batch[:i]...)
				}
				if len(rest.Ops) == 0 && len(rest.Ended) == 0 {
					continue
				}
				p = pending{at: p.at, step: rest}
			}
		}
		ops += len(p.step.Ops)
		if out != nil {
			out = append(out, p)
		}
	}
	if out == nil {
		return batch
	}
	return append(out, batch[i:]...)
}

// persist writes one transaction's steps to the ledger — over several
// transactions if it is a single step larger than maxOps — then records
// them in the journal. A transaction that writes nothing needs a proof
// of leadership for its steps' answers and events instead (Core.Proven):
// the ledger's newest, or one asked for now (Ledger.Confirm). A write
// that lands proves it as of its sending (Core.Led).
func (s *Server) persist(ctx context.Context, epoch uint64, txn []pending, ops int) error {
	var latest time.Duration
	for _, p := range txn {
		latest = max(latest, p.at)
	}
	if ops > 0 {
		all := make([]Op, 0, ops)
		for _, p := range txn {
			all = append(all, p.step.Ops...)
		}
		s.mu.Lock()
		maxOps := s.maxOps
		s.mu.Unlock()
		sent := s.Since()
		for len(all) > 0 {
			k := min(len(all), maxOps)
			if err := s.commit(ctx, epoch, all[:k]); err != nil {
				if k < len(all) && errors.Is(err, ErrTxnTooLarge) {
					// A split step's part: its earlier parts stand
					// (ops set values; written again, they change
					// nothing), and the rest goes on in smaller parts.
					s.mu.Lock()
					s.stats.Split++
					maxOps = max(1, k/2)
					s.maxOps = min(s.maxOps, maxOps)
					s.mu.Unlock()
					continue
				}
				return err
			}
			all = all[k:]
		}
		s.mu.Lock()
		s.core.Led(sent, sent)
		s.mu.Unlock()
	} else if err := s.confirm(ctx, epoch, latest); err != nil {
		return err
	}
	if s.opts.journal == nil {
		return nil
	}
	entries := make([]Entry, len(txn))
	for i, p := range txn {
		entries[i] = Entry{At: p.at, Step: p.step}
	}
	s.jmu.Lock()
	err := s.opts.journal.Append(entries)
	s.jmu.Unlock()
	if err != nil {
		s.mu.Lock()
		s.stats.JournalFailures++
		s.mu.Unlock()
		return fmt.Errorf("coordinator: journal: %w", err)
	}
	return nil
}

// confirm makes sure leadership is proven at at, the latest instant a
// step of a transaction without a write was taken: by the ledger's
// newest proof, or by asking it now (Ledger.Confirm). A ledger that says
// another leads fences this server (quota.ErrStaleEpoch).
func (s *Server) confirm(ctx context.Context, epoch uint64, at time.Duration) error {
	s.mu.Lock()
	s.proof()
	ok := s.core.Proven(at)
	s.mu.Unlock()
	if ok {
		return nil
	}
	sent := s.Since()
	err := s.ledger.Confirm(ctx, epoch)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stats.Confirms++
	if err != nil {
		s.stats.Unproven++
		return fmt.Errorf("%w: %w", ErrUnproven, err)
	}
	s.core.Led(sent, sent)
	s.proof()
	return nil
}

// commit writes ops to the ledger, and is the one place where a write of
// unknown outcome (ErrOutcomeUnknown) is settled: by reading the ledger
// back under the same fence (Ledger.Resolve) before anything depends on
// it. Applied, the write counts as done — its steps are journalled and
// answered as any other; not applied, it failed as any other failed
// write. Until it is settled the ledger takes no other write: one that
// cannot be settled now (the ledger unreachable, or the drain time over)
// is settled first thing at the next write (unresolved), and the steps
// that depended on it have failed meanwhile, to be written again.
func (s *Server) commit(ctx context.Context, epoch uint64, ops []Op) error {
	s.mu.Lock()
	unresolved := s.unresolved
	s.mu.Unlock()
	if unresolved {
		if _, err := s.resolve(ctx, epoch); err != nil {
			return err
		}
	}
	err := s.ledger.Commit(ctx, epoch, ops...)
	s.mu.Lock()
	s.stats.Txns++
	s.stats.Ops += int64(len(ops))
	s.mu.Unlock()
	if !errors.Is(err, ErrOutcomeUnknown) {
		return err
	}
	s.mu.Lock()
	s.stats.Unknown++
	s.unresolved = true
	s.mu.Unlock()
	applied, rerr := s.resolve(ctx, epoch)
	switch {
	case rerr != nil:
		return rerr
	case applied:
		s.mu.Lock()
		s.stats.Landed++
		s.mu.Unlock()
		if s.opts.logger != nil {
			s.opts.logger.Info("quota coordinator: a write of unknown outcome was applied; its calls are answered", "ops", len(ops), "err", err)
		}
		return nil
	}
	return err
}

// resolve asks the ledger until it tells whether the write of unknown
// outcome was applied, or ctx ends, or the ledger fences this server.
func (s *Server) resolve(ctx context.Context, epoch uint64) (bool, error) {
	backoff := 10 * time.Millisecond
	for {
		applied, err := s.ledger.Resolve(ctx, epoch)
		if err == nil {
			s.mu.Lock()
			s.unresolved = false
			s.mu.Unlock()
			return applied, nil
		}
		if !errors.Is(err, ErrOutcomeUnknown) || ctx.Err() != nil {
			return false, err
		}
		select {
		case <-ctx.Done():
			return false, err
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 500*time.Millisecond)
	}
}

// acknowledge tells the core how a step's persisting went, and its caller
// the answer; called under mu. A step written again was acknowledged when
// it first failed: it answers nobody.
func (s *Server) acknowledge(p pending, err error) {
	if p.again {
		return
	}
	ans, err := s.core.Advance(p.step, err)
	if p.done != nil {
		p.done <- outcome{ans, err}
	}
}
