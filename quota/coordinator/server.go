package coordinator

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/afloat/afloat/quota"
)

// Server runs a Core: a lock around it, the machine's monotonic clock, and
// a committer that writes the core's steps to the ledger. The core
// computes under the lock; the writes happen outside it, batched across
// concurrent calls — every step that arrives while a write is in flight
// goes into the next transaction, as many as fit in the ledger's limit of
// operations per transaction — and a call is answered only once its step
// is written: a grant is never sent before it is durable. It implements
// region.Coordinator, so limiters in the same process renew through it,
// and package quota/remote serves it over HTTP. It is safe for concurrent
// use.
type Server struct {
	ledger Ledger
	start  time.Time
	opts   serverOptions
	maxOps int

	mu      sync.Mutex
	core    *Core
	queue   []pending // steps not yet written, in order
	kick    chan struct{}
	stopped chan struct{}
	stopErr error
	stats   Stats
}

// pending is a step on its way to the ledger, and who waits for it.
type pending struct {
	at   time.Duration
	step Step
	done chan error // nil: nobody waits (an expiry, or a write tried before)
}

// Stats counts what a server did; for metrics and benchmarks.
type Stats struct {
	Txns     int64 // ledger transactions written
	Ops      int64 // operations in them
	Steps    int64 // steps written
	Failures int64 // transactions that failed
}

type serverOptions struct {
	nudge    func(quota.Nudge)
	onCommit func(at time.Duration, s Step)
	written  func()
	logger   *slog.Logger
	maxOps   int
	core     []Option
	expiry   time.Duration
}

// ServerOption is an option of NewServer.
type ServerOption func(*serverOptions)

// WithNudges delivers the nudges for other regions, once the grant that
// caused them is written.
func WithNudges(f func(quota.Nudge)) ServerOption {
	return func(o *serverOptions) { o.nudge = f }
}

// WithCommitted tells f of every step once it is written, in order, with
// the time it was taken on the server's clock (Since): what an event log
// records. f runs on the committer's goroutine before the calls are
// answered; it must not call the server.
func WithCommitted(f func(at time.Duration, s Step)) ServerOption {
	return func(o *serverOptions) { o.onCommit = f }
}

// WithWritten calls f after each transaction is written and its steps
// told to WithCommitted's function, before the calls are answered: where
// an event log flushes, so that nothing a region receives is missing from
// it.
func WithWritten(f func()) ServerOption { return func(o *serverOptions) { o.written = f } }

// WithLogger logs each failed write (at Warn) to logger; by default the
// server logs nothing and counts them (Stats.Failures).
func WithLogger(logger *slog.Logger) ServerOption {
	return func(o *serverOptions) { o.logger = logger }
}

// WithMaxOps caps the operations of one ledger transaction; the default is
// what the ledger says (MaxOpser), else 128, etcd's default limit.
func WithMaxOps(n int) ServerOption { return func(o *serverOptions) { o.maxOps = n } }

// WithCoreOptions passes options to the core.
func WithCoreOptions(opts ...Option) ServerOption {
	return func(o *serverOptions) { o.core = append(o.core, opts...) }
}

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
	for _, o := range opts {
		o(&s.opts)
	}
	s.maxOps = DefaultMaxOps
	if m, ok := ledger.(MaxOpser); ok && m.MaxOps() > 0 {
		s.maxOps = m.MaxOps()
	}
	if s.opts.maxOps > 0 {
		s.maxOps = s.opts.maxOps
	}
	if ledger == nil {
		return nil, fmt.Errorf("%w: nil ledger", quota.ErrConfig)
	}
	snap, err := ledger.Fence(ctx) // may wait long: a campaign
	if err != nil {
		return nil, fmt.Errorf("coordinator: fencing the ledger: %w", err)
	}
	// The clock starts now, not before the fence: every restored lease
	// counts for a whole lease duration and margin from here.
	s.start = time.Now()
	core, err := New(cfg, snap, 0, s.opts.core...)
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

// Stats reports what the server has written so far.
func (s *Server) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stats
}

// Tenant returns a tenant's configuration, with defaults.
func (s *Server) Tenant(name string) (quota.Tenant, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.core.Tenant(name)
}

// Renew implements region.Coordinator: the grant comes back once it is
// written. An error means nothing was granted: the region asks again.
func (s *Server) Renew(ctx context.Context, req quota.Request) (quota.Grant, error) {
	s.mu.Lock()
	at := s.Since()
	g, nudges, step, err := s.core.Renew(at, req)
	var done chan error
	if err == nil {
		done = s.enqueue(at, step)
	}
	s.mu.Unlock()
	if err != nil {
		return quota.Grant{}, err
	}
	if err := s.wait(ctx, done); err != nil {
		return quota.Grant{}, err
	}
	if s.opts.nudge != nil {
		for _, n := range nudges {
			s.opts.nudge(n)
		}
	}
	return g, nil
}

// Result is the answer to one call of a batch.
type Result struct {
	Grant quota.Grant
	Err   error
}

// RenewBatch renews many requests at once: one turn of the lock for all
// of them, so that a region's batch does not queue its requests one by one
// behind the lock (thousands of goroutines contending for one mutex
// hand it over slowly), their steps written together. Each result is
// answered once its step is written, as Renew's.
func (s *Server) RenewBatch(ctx context.Context, reqs []quota.Request) []Result {
	out := make([]Result, len(reqs))
	done := make([]chan error, len(reqs))
	var nudges []quota.Nudge
	s.mu.Lock()
	at := s.Since()
	for i, req := range reqs {
		g, ns, step, err := s.core.Renew(at, req)
		if err != nil {
			out[i].Err = err
			continue
		}
		out[i].Grant = g
		nudges = append(nudges, ns...)
		done[i] = s.enqueueLocked(at, step)
	}
	s.kickCommitter()
	s.mu.Unlock()
	ok := false
	for i, d := range done {
		if d == nil {
			continue
		}
		if err := s.wait(ctx, d); err != nil {
			out[i] = Result{Err: err}
		} else {
			ok = true
		}
	}
	if ok && s.opts.nudge != nil {
		for _, n := range nudges {
			s.opts.nudge(n)
		}
	}
	return out
}

// ReturnBatch is RenewBatch for returns.
func (s *Server) ReturnBatch(ctx context.Context, rets []quota.Return) []error {
	out := make([]error, len(rets))
	done := make([]chan error, len(rets))
	s.mu.Lock()
	at := s.Since()
	for i, ret := range rets {
		step, err := s.core.Return(at, ret)
		if err != nil {
			out[i] = err
			continue
		}
		done[i] = s.enqueueLocked(at, step)
	}
	s.kickCommitter()
	s.mu.Unlock()
	for i, d := range done {
		if d != nil {
			out[i] = s.wait(ctx, d)
		}
	}
	return out
}

// Return implements region.Coordinator: it returns once the return is
// written.
func (s *Server) Return(ctx context.Context, ret quota.Return) error {
	s.mu.Lock()
	at := s.Since()
	step, err := s.core.Return(at, ret)
	var done chan error
	if err == nil {
		done = s.enqueue(at, step)
	}
	s.mu.Unlock()
	if err != nil {
		return err
	}
	return s.wait(ctx, done)
}

// enqueue queues a step for the committer; called under mu. A step with
// no ops still waits for every step before it: the answer it carries (a
// repeated grant) may rest on them.
func (s *Server) enqueue(at time.Duration, step Step) chan error {
	done := s.enqueueLocked(at, step)
	s.kickCommitter()
	return done
}

func (s *Server) enqueueLocked(at time.Duration, step Step) chan error {
	done := make(chan error, 1)
	s.queue = append(s.queue, pending{at: at, step: step, done: done})
	return done
}

func (s *Server) kickCommitter() {
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

func (s *Server) wait(ctx context.Context, done chan error) error {
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return fmt.Errorf("coordinator: waiting for the ledger: %w", ctx.Err())
	case <-s.stopped:
		return s.stopErr
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

// Run is the committer: it writes the queued steps, batched, and answers
// their calls; ten times a second it ends expired leases. It returns when ctx
// ends or when the ledger refuses a write for a stale epoch (a successor
// has fenced it: then quota.ErrStaleEpoch, and every call from then on
// fails with it). Other write errors fail the calls of that write — the
// regions ask again — and the steps are written again with the next
// write, so that the ledger catches up.
func (s *Server) Run(ctx context.Context) error {
	tick := time.NewTicker(s.opts.expiry)
	defer tick.Stop()
	var retry <-chan time.Time
	backoff := 50 * time.Millisecond
	// The config's tenants the ledger lacks are written first.
	s.mu.Lock()
	if seed := s.core.Seeding(); len(seed) > 0 {
		at := s.Since()
		for _, st := range seed {
			s.queue = append(s.queue, pending{at: at, step: st})
		}
		s.kickCommitter()
	}
	s.mu.Unlock()
	for {
		select {
		case <-ctx.Done():
			s.stop(ctx.Err())
			return ctx.Err()
		case <-s.kick:
		case <-retry:
		case <-tick.C:
			s.mu.Lock()
			at := s.Since()
			steps, err := s.core.Expire(at)
			for _, st := range steps {
				s.queue = append(s.queue, pending{at: at, step: st})
			}
			s.mu.Unlock()
			if err != nil {
				s.stop(err)
				return err
			}
		}
		retry = nil
		err := s.flush(ctx)
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
		if p.done != nil {
			p.done <- s.stopErr
		}
	}
	s.queue = nil
	close(s.stopped)
}

// flush writes everything queued, in transactions of at most maxOps
// operations, in order; it stops at the first failure, fails the calls
// from there on, and puts their steps back at the head of the queue.
func (s *Server) flush(ctx context.Context) error {
	for {
		s.mu.Lock()
		batch := s.queue
		s.queue = nil
		epoch := s.core.Epoch()
		s.mu.Unlock()
		if len(batch) == 0 {
			return nil
		}
		for len(batch) > 0 {
			n, ops := 0, 0
			for n < len(batch) && (n == 0 || ops+len(batch[n].step.Ops) <= s.maxOps) {
				ops += len(batch[n].step.Ops)
				n++
			}
			txn := batch[:n]
			var all []Op
			for _, p := range txn {
				all = append(all, p.step.Ops...)
			}
			var err error
			if len(all) > 0 {
				err = s.ledger.Commit(ctx, epoch, all...)
			}
			s.mu.Lock()
			if len(all) > 0 {
				s.stats.Txns++
				s.stats.Ops += int64(len(all))
			}
			if err != nil {
				s.stats.Failures++
				if s.opts.logger != nil {
					s.opts.logger.Warn("quota coordinator: ledger write failed; its calls fail and its steps are written again",
						"ops", len(all), "steps", n, "err", err)
				}
				// Written again with the next write; their calls fail now.
				rest := make([]pending, 0, len(batch)+len(s.queue))
				for _, p := range batch {
					if p.done != nil {
						p.done <- err
					}
					rest = append(rest, pending{at: p.at, step: p.step})
				}
				s.queue = append(rest, s.queue...)
				s.mu.Unlock()
				return err
			}
			s.stats.Steps += int64(n)
			s.mu.Unlock()
			for _, p := range txn {
				if s.opts.onCommit != nil {
					s.opts.onCommit(p.at, p.step)
				}
			}
			if s.opts.written != nil {
				s.opts.written()
			}
			for _, p := range txn {
				if p.done != nil {
					p.done <- nil
				}
			}
			batch = batch[n:]
		}
	}
}
