package region

import (
	"context"
	"time"

	"github.com/afloat/afloat/quota"
)

// Coordinator is what a region's runner calls. coordinator.Server
// implements it in process; a network client would too.
type Coordinator interface {
	Renew(ctx context.Context, req quota.Request) (quota.Grant, error)
	Return(ctx context.Context, ret quota.Return) error
}

// runEvery is how often Run looks for tenants that are due: the hot path
// only sets flags, and a few tens of milliseconds is small beside a
// lease.
const runEvery = 50 * time.Millisecond

// Run is the limiter's runner: it renews each tenant's lease when due,
// installs the grants, and sends back the leases they replace. It returns
// when ctx ends, after giving every valid lease back (with a short grace
// period of its own), so that a region that shuts down cleanly hands its
// tokens on at once instead of letting them expire.
func (l *Limiter) Run(ctx context.Context, c Coordinator) error {
	t := time.NewTicker(runEvery)
	defer t.Stop()
	for {
		for _, tenant := range l.cfg.Tenants {
			if ctx.Err() != nil {
				break
			}
			if l.Due(l.Now(), tenant) {
				l.renew(ctx, c, tenant)
			}
		}
		select {
		case <-ctx.Done():
			l.returnAll(c)
			return ctx.Err()
		case <-t.C:
		case <-l.wake:
		}
	}
}

func (l *Limiter) renew(ctx context.Context, c Coordinator, tenant string) {
	req, err := l.Request(l.Now(), tenant)
	if err != nil {
		return
	}
	cctx, cancel := context.WithTimeout(ctx, l.cfg.Retry)
	defer cancel()
	g, err := c.Renew(cctx, req)
	if err != nil {
		return // Due retries, with backoff
	}
	if g.ActivateAfter > 0 {
		select {
		case <-time.After(g.ActivateAfter):
		case <-ctx.Done():
			return
		}
	}
	if in := l.Install(l.Now(), g); in.Return != nil {
		c.Return(cctx, *in.Return) // lost: the coordinator counts the old lease until it expires
	}
}

func (l *Limiter) returnAll(c Coordinator) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	for _, tenant := range l.cfg.Tenants {
		if ret, ok := l.Return(l.Now(), tenant); ok {
			c.Return(ctx, ret)
		}
	}
}
