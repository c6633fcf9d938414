package region

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/afloat/afloat/quota"
)

// Coordinator is what a region's runner calls. coordinator.Server
// implements it in process, and quota/remote's Client over the network.
// Both calls must be safe for concurrent use: Run renews many tenants at
// once.
type Coordinator interface {
	Renew(ctx context.Context, req quota.Request) (quota.Grant, error)
	Return(ctx context.Context, ret quota.Return) error
}

// runEvery is how often Run looks for tenants that are due: the hot path
// only sets flags, and a few tens of milliseconds is small beside a
// lease.
const runEvery = 50 * time.Millisecond

// maxInFlight bounds the renewals Run has under way at once.
const maxInFlight = 4096

// Hooks are told of what Run does, for event logs and metrics; each may be
// nil. They run on Run's goroutines, concurrently: they must be safe for
// concurrent use, and quick.
type Hooks struct {
	// Installed: a grant was installed at at (this limiter's clock);
	// in.Dropped is the lease it replaced, if that was still valid.
	Installed func(at int64, in Installed)
	// Returned: a lease was given back at at; err says whether the
	// coordinator has it (a lost return costs under-use only: the
	// coordinator counts the lease until it expires).
	Returned func(at int64, ret quota.Return, err error)
	// Failed: a renewal of tenant failed; Run asks again, backing off.
	Failed func(tenant string, err error)
}

// RunOption is an option of Run.
type RunOption func(*runOptions)

type runOptions struct {
	hooks  Hooks
	logger *slog.Logger
}

// WithHooks tells h of what Run does.
func WithHooks(h Hooks) RunOption { return func(o *runOptions) { o.hooks = h } }

// WithLogger logs every error Run meets (a failed renewal, a lost return)
// to logger, at level Warn — but for renewals refused because another
// agent holds the region (quota.ErrRegionHeld), which come every retry
// until its leases end: Hooks.Failed hears of those, for the caller to
// say once. By default Run logs nothing, and counts them (RunStats).
func WithLogger(logger *slog.Logger) RunOption { return func(o *runOptions) { o.logger = logger } }

// RunStats counts what Run did, since New.
type RunStats struct {
	Renewals       int64 `json:"renewals"`        // requests answered with a grant
	RenewFailures  int64 `json:"renew_failures"`  // requests that failed (timeouts, refusals, unreachable coordinator)
	Installed      int64 `json:"installed"`       // grants put into use
	Ignored        int64 `json:"ignored"`         // grants not installed (Outcome other than Accepted)
	Returns        int64 `json:"returns"`         // leases given back and acknowledged
	ReturnFailures int64 `json:"return_failures"` // returns that failed (the coordinator counts the lease until it expires); not one whose tenant was deleted
}

type runCounters struct {
	renewals, renewFailures, installed, ignored, returns, returnFailures atomic.Int64
	outcomes                                                             [numOutcomes]atomic.Int64 // grants Run received, by what Install did (Grants)
}

// RunStats reports Run's counters.
func (l *Limiter) RunStats() RunStats {
	c := &l.counters
	return RunStats{
		Renewals: c.renewals.Load(), RenewFailures: c.renewFailures.Load(),
		Installed: c.installed.Load(), Ignored: c.ignored.Load(),
		Returns: c.returns.Load(), ReturnFailures: c.returnFailures.Load(),
	}
}

// Run is the limiter's runner: it renews each tenant's lease when due,
// installs the grants, and sends back the leases they replace. Renewals
// run concurrently, each on its own goroutine with its own deadline (the
// retry interval, which backs off while the coordinator does not answer),
// so that a slow or lost answer for one tenant never holds up another.
// Run returns when ctx ends, after giving every valid lease back (with a
// short grace period of its own), so that a region that shuts down cleanly
// hands its tokens on at once instead of letting them expire.
func (l *Limiter) Run(ctx context.Context, c Coordinator, opts ...RunOption) error {
	var o runOptions
	for _, f := range opts {
		f(&o)
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
				l.renew(ctx, c, tenant, b, &o)
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
				l.sendReturn(rctx, c, l.Now(), ret, &o)
			})
		}
		select {
		case <-ctx.Done():
			wg.Wait()
			l.returnAll(c, &o)
			return ctx.Err()
		case <-t.C:
		case <-l.wake:
		}
	}
}

func (l *Limiter) renew(ctx context.Context, c Coordinator, tenant string, b *bucket, o *runOptions) {
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
	g, err := c.Renew(cctx, req)
	if err != nil {
		if ctx.Err() != nil {
			return // shutting down
		}
		l.counters.renewFailures.Add(1)
		if o.hooks.Failed != nil {
			o.hooks.Failed(tenant, err)
		}
		// A region held by another agent fails every renewal until that
		// agent's leases end: the Failed hook hears of each, the log would
		// drown in them.
		if o.logger != nil && !errors.Is(err, quota.ErrRegionHeld) {
			o.logger.Warn("quota region: renewal failed", "region", l.cfg.Region, "tenant", tenant, "seq", req.Seq, "err", err)
		}
		return // Due asks again, backing off
	}
	l.counters.renewals.Add(1)
	if g.ActivateAfter > 0 {
		l.expect(tenant, l.Now()+int64(g.ActivateAfter), g.Lease.Burst)
		t := time.NewTimer(g.ActivateAfter)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return
		}
	}
	now := l.Now()
	in := l.Install(now, g)
	l.counters.outcomes[in.Outcome].Add(1)
	if !in.OK() {
		l.counters.ignored.Add(1)
		return
	}
	l.counters.installed.Add(1)
	if o.hooks.Installed != nil {
		o.hooks.Installed(now, in)
	}
	if in.Return != nil {
		l.sendReturn(cctx, c, now, *in.Return, o)
	}
}

func (l *Limiter) sendReturn(ctx context.Context, c Coordinator, at int64, ret quota.Return, o *runOptions) {
	err := c.Return(ctx, ret)
	if errors.Is(err, quota.ErrUnknownTenant) {
		// The tenant was deleted (the usual reason a region gives its lease
		// back without being asked): its leases went with it, so nothing is
		// left to count, and the return is done rather than lost.
		err = nil
	}
	if err != nil {
		l.counters.returnFailures.Add(1)
		if o.logger != nil {
			o.logger.Warn("quota region: return lost; the coordinator counts the lease until it expires",
				"region", l.cfg.Region, "tenant", ret.Tenant, "lease", ret.LeaseID, "err", err)
		}
	} else {
		l.counters.returns.Add(1)
	}
	if o.hooks.Returned != nil {
		o.hooks.Returned(at, ret, err)
	}
}

func (l *Limiter) returnAll(c Coordinator, o *runOptions) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	sem := make(chan struct{}, 256)
	send := func(now int64, ret quota.Return) {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			l.sendReturn(ctx, c, now, ret, o)
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
