package coordinator

import (
	"context"
	"sync"
	"time"

	"github.com/afloat/afloat/quota"
)

// Server runs a Core in process: a lock, the machine's monotonic clock,
// nudges delivered to a callback, and a loop that ends expired leases. It
// implements region.Coordinator, so region limiters in the same process
// renew through it; a later network API will put it behind HTTP. It is
// safe for concurrent use.
type Server struct {
	mu    sync.Mutex
	core  *Core
	start time.Time
	nudge func(quota.Nudge)
}

// NewServer fences the ledger and starts a coordinator on it. nudge, if
// not nil, receives the nudges for other regions.
func NewServer(ctx context.Context, cfg Config, ledger Ledger, nudge func(quota.Nudge)) (*Server, error) {
	s := &Server{start: time.Now(), nudge: nudge}
	core, err := New(ctx, cfg, ledger, 0)
	if err != nil {
		return nil, err
	}
	s.core = core
	return s, nil
}

func (s *Server) now() time.Duration { return time.Since(s.start) }

// Renew implements region.Coordinator.
func (s *Server) Renew(ctx context.Context, req quota.Request) (quota.Grant, error) {
	s.mu.Lock()
	g, nudges, err := s.core.Renew(ctx, s.now(), req)
	s.mu.Unlock()
	if err == nil && s.nudge != nil {
		for _, n := range nudges {
			s.nudge(n)
		}
	}
	return g, err
}

// Return implements region.Coordinator.
func (s *Server) Return(ctx context.Context, ret quota.Return) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.core.Return(ctx, s.now(), ret)
}

// Live lists a tenant's leases that count now.
func (s *Server) Live(tenant string) []quota.Lease {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.core.Live(tenant)
}

// Run ends expired leases every second until ctx ends or the coordinator
// is fenced by a successor (then it returns quota.ErrStaleEpoch).
func (s *Server) Run(ctx context.Context) error {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
			s.mu.Lock()
			err := s.core.Expire(ctx, s.now())
			stopped := s.core.Stopped()
			s.mu.Unlock()
			if stopped != nil {
				return stopped
			}
			_ = err // transient ledger errors: the next tick tries again
		}
	}
}
