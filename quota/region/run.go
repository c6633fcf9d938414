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

// runEvery is how often Run looks for tenants that are due: the hot path
// only sets flags, and a few tens of milliseconds is small beside a
// lease.
const runEvery = 50 * time.Millisecond

// maxInFlight bounds the renewals Run has under way at once.
const maxInFlight = 4096

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
type Journal interface {
	// Installed records that a grant was put into use at at (this
	// limiter's clock); in.Dropped is the lease it replaced, if that was
	// still valid.
	Installed(at int64, in Installed) error
	// Returned records that the region stopped spending under ret's lease
	// at at, and is about to give it back.
	Returned(at int64, ret quota.Return) error
}

// ErrJournal is what Run returns, with ctx's error, when its Journal
// failed to write a record.
var ErrJournal = errors.New("region: journal write failed")

// RunOption is an option of Run.
type RunOption func(*runOptions)

type runOptions struct {
	journal Journal
	logger  *slog.Logger
}

// WithJournal has Run record what it does to the leases in j (see
// Journal for what Run does when a record fails). By default it records
// nothing.
func WithJournal(j Journal) RunOption { return func(o *runOptions) { o.journal = j } }

// WithLogger logs every error Run meets (a failed renewal, a lost return)
// to logger, at level Warn — but for renewals refused because another
// agent holds the region (quota.ErrRegionHeld), which come every retry
// until its leases end: the Coordinator the caller passes sees those, for
// the caller to say once — and a journal that starts failing, at level
// Error. By default Run logs nothing, and counts them (RunStats).
func WithLogger(logger *slog.Logger) RunOption { return func(o *runOptions) { o.logger = logger } }

// RunStats counts what Run did, since New.
type RunStats struct {
	Renewals       int64 `json:"renewals"`        // requests answered with a grant
	RenewFailures  int64 `json:"renew_failures"`  // requests that failed (timeouts, refusals, unreachable coordinator)
	Installed      int64 `json:"installed"`       // grants put into use
	Kept           int64 `json:"kept"`            // answers that kept the lease in use (quota.Grant.Unchanged): no write at the coordinator
	Ignored        int64 `json:"ignored"`         // grants not installed (Outcome other than Accepted and Kept)
	Returns        int64 `json:"returns"`         // leases given back and acknowledged
	ReturnFailures int64 `json:"return_failures"` // returns that failed (the coordinator counts the lease until it expires); not one whose tenant was deleted
	// JournalFailures counts the records the Journal failed to write: the
	// installs among them stayed in use, the returns were not sent.
	JournalFailures int64 `json:"journal_failures"`
}

type runCounters struct {
	renewals, renewFailures, installed, kept, ignored, returns, returnFailures, journalFailures atomic.Int64
	outcomes                                                                                    [numOutcomes]atomic.Int64 // grants Run received, by what Install did (Grants)
}

// RunStats reports Run's counters.
func (l *Limiter) RunStats() RunStats {
	c := &l.counters
	return RunStats{
		Renewals: c.renewals.Load(), RenewFailures: c.renewFailures.Load(),
		Installed: c.installed.Load(), Kept: c.kept.Load(), Ignored: c.ignored.Load(),
		Returns: c.returns.Load(), ReturnFailures: c.returnFailures.Load(),
		JournalFailures: c.journalFailures.Load(),
	}
}

// Run is the limiter's runner: it renews each tenant's lease when due,
// installs the grants, and sends back the leases they replace. Renewals
// run concurrently, each on its own goroutine with its own deadline (the
// retry interval, which backs off while the coordinator does not answer),
// so that a slow or lost answer for one tenant never holds up another.
// Run returns when ctx ends, after giving every valid lease back (with a
// short grace period of its own), so that a region that shuts down cleanly
// hands its tokens on at once instead of letting them expire. It returns
// ctx's error, joined with one wrapping ErrJournal if its Journal failed.
func (l *Limiter) Run(ctx context.Context, c Coordinator, opts ...RunOption) error {
	r := &runner{l: l, c: c}
	for _, f := range opts {
		f(&r.runOptions)
	}
	t := time.NewTicker(runEvery)
	defer t.Stop()
	var wg sync.WaitGroup
	sem := make(chan struct{}, maxInFlight)
	for {
		// The tenants of this pass: SetTenants may change the set while
		// it runs; one added meanwhile waits for the next (it woke Run).
		for _, n := range l.idx.Load().list {
			if ctx.Err() != nil {
				break
			}
			tenant, b := n.tenant, n.b
			if b.inFlight.Load() || !l.Due(l.Now(), tenant) {
				continue
			}
			select {
			case sem <- struct{}{}:
			default:
				continue // at the bound: the next pass
			}
			b.inFlight.Store(true)
			wg.Go(func() {
				defer func() { b.inFlight.Store(false); <-sem }()
				r.renew(ctx, tenant, b)
			})
		}
		// Removed tenants' leases go back at once, each on its own
		// goroutine like a renewal.
		for _, ret := range l.takeLeaving() {
			if ctx.Err() != nil {
				l.requeue(ret)
				continue
			}
			wg.Go(func() {
				rctx, cancel := context.WithTimeout(ctx, l.cfg.MaxRetry)
				defer cancel()
				r.sendReturn(rctx, l.Now(), ret)
			})
		}
		select {
		case <-ctx.Done():
			wg.Wait()
			r.returnAll()
			return errors.Join(ctx.Err(), r.journalErr())
		case <-t.C:
		case <-l.wake:
		}
	}
}

// runner is one call of Run.
type runner struct {
	runOptions
	l *Limiter
	c Coordinator

	failing  atomic.Bool // the journal's last record failed
	mu       sync.Mutex
	failures int64 // records the journal failed to write, in this Run (under mu)
	first    error // the first of them (under mu)
}

func (r *runner) renew(ctx context.Context, tenant string, b *bucket) {
	l := r.l
	if l.bucket(tenant) != b {
		return // removed since the pass began
	}
	req, err := l.Request(l.Now(), tenant)
	if err != nil {
		return
	}
	b.mu.Lock()
	timeout := l.retryAfterFailures(b.failures)
	b.mu.Unlock()
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	g, err := renewOne(cctx, r.c, req)
	if err != nil {
		if ctx.Err() != nil {
			return // shutting down
		}
		l.counters.renewFailures.Add(1)
		// A region held by another agent fails every renewal until that
		// agent's leases end: the caller's Coordinator sees each, the log
		// would drown in them.
		if r.logger != nil && !errors.Is(err, quota.ErrRegionHeld) {
			r.logger.Warn("quota region: renewal failed", "region", l.cfg.Region, "tenant", tenant, "seq", req.Seq, "err", err)
		}
		return // Due asks again, backing off
	}
	l.counters.renewals.Add(1)
	now := l.Now()
	in := l.Install(now, g)
	l.counters.outcomes[in.Outcome].Add(1)
	if in.Outcome == Kept {
		l.counters.kept.Add(1)
		return // the lease in use stands: nothing to install or return
	}
	if !in.OK() {
		l.counters.ignored.Add(1)
		return
	}
	l.counters.installed.Add(1)
	if r.journal != nil {
		// The lease stays in use even if its record fails (see Journal).
		r.recorded(r.journal.Installed(now, in), "install", tenant)
	}
	if in.Return != nil {
		r.sendReturn(cctx, now, *in.Return)
	}
}

// sendReturn gives a lease back, once the journal has recorded it.
func (r *runner) sendReturn(ctx context.Context, at int64, ret quota.Return) {
	l := r.l
	if r.journal != nil && !r.recorded(r.journal.Returned(at, ret), "return", ret.Tenant) {
		return // not sent: the coordinator counts the lease until it ends
	}
	err := returnOne(ctx, r.c, ret)
	if errors.Is(err, quota.ErrUnknownTenant) {
		// The tenant was deleted (the usual reason a region gives its lease
		// back without being asked): its leases went with it, so nothing is
		// left to count, and the return is done rather than lost.
		err = nil
	}
	if err != nil {
		l.counters.returnFailures.Add(1)
		if r.logger != nil {
			r.logger.Warn("quota region: return lost; the coordinator counts the lease until it expires",
				"region", l.cfg.Region, "tenant", ret.Tenant, "lease", ret.LeaseID, "err", err)
		}
	} else {
		l.counters.returns.Add(1)
	}
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

func (r *runner) returnAll() {
	l := r.l
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	sem := make(chan struct{}, 256)
	send := func(now int64, ret quota.Return) {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			r.sendReturn(ctx, now, ret)
		})
	}
	for _, ret := range l.takeLeaving() {
		send(l.Now(), ret)
	}
	for _, n := range l.idx.Load().list {
		now := l.Now()
		if ret, ok := l.giveBack(now, n.tenant, n.b); ok {
			send(now, ret)
		}
	}
	wg.Wait()
}

// requeue keeps a removed tenant's return for returnAll.
func (l *Limiter) requeue(ret quota.Return) {
	l.setMu.Lock()
	l.leaving = append(l.leaving, ret)
	l.setMu.Unlock()
}

// renewOne renews one request through c's batch call.
func renewOne(ctx context.Context, c Coordinator, req quota.Request) (quota.Grant, error) {
	res, err := c.RenewBatch(ctx, []quota.Request{req})
	switch {
	case err != nil:
		return quota.Grant{}, err
	case len(res) != 1:
		return quota.Grant{}, fmt.Errorf("region: %d answers to one request", len(res))
	}
	return res[0].Grant, res[0].Err
}

// returnOne gives one lease back through c's batch call.
func returnOne(ctx context.Context, c Coordinator, ret quota.Return) error {
	errs, err := c.ReturnBatch(ctx, []quota.Return{ret})
	switch {
	case err != nil:
		return err
	case len(errs) != 1:
		return fmt.Errorf("region: %d answers to one return", len(errs))
	}
	return errs[0]
}
