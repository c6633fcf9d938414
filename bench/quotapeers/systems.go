package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/afloat/afloat/quota"
	"github.com/afloat/afloat/quota/coordinator"
	"github.com/afloat/afloat/quota/region"
	"github.com/afloat/afloat/quota/remote"
	"golang.org/x/time/rate"
)

// system is one of the three limiters under the same traffic: allow is one
// request's decision in a region, partition cuts or heals that region's
// links to the others.
type system interface {
	allow(ctx context.Context, r int) bool
	partition(r int, cut bool)
	close()
}

// naive is the baseline: each region limits itself to R/3 with a burst of
// B/3, and never talks to the others.
type naive struct{ lims []*rate.Limiter }

func newNaive(t tenant, regions int) *naive {
	n := &naive{}
	for range regions {
		n.lims = append(n.lims, rate.NewLimiter(rate.Limit(t.Rate/float64(regions)), int(t.Burst)/regions))
	}
	return n
}

func (n *naive) allow(_ context.Context, r int) bool { return n.lims[r].Allow() }
func (n *naive) partition(int, bool)                 {}
func (n *naive) close()                              {}

// afloatSystem is afloat's global quota as it runs in production, in one
// process: the coordinator (coordinator.Server on the in-memory ledger)
// behind the region API (remote.Handler) over loopback HTTP, and in each
// region a region.Limiter renewing through remote.Client — through a fault
// proxy, so that a region can be cut off from the coordinator, which adds
// the cross-region delay for the regions other than the coordinator's.
type afloatSystem struct {
	cancel  context.CancelFunc
	srv     *http.Server
	proxies []*faultProxy
	lims    []*region.Limiter
	done    []chan struct{}
}

func newAfloat(ctx context.Context, t tenant, names []string, owner int) (*afloatSystem, error) {
	ctx, cancel := context.WithCancel(ctx)
	a := &afloatSystem{cancel: cancel}
	fail := func(err error) (*afloatSystem, error) { a.close(); return nil, fmt.Errorf("afloat: %w", err) }
	ten := quota.Tenant{
		Name: tenantName, Rate: quota.Tokens(t.Rate), Burst: quota.Tokens(t.Burst), Regions: names,
		Mode: quota.Hard, LeaseDuration: t.Lease,
	}
	mail := &remote.Mailbox{}
	srv, err := coordinator.NewServer(ctx, coordinator.Config{Tenants: []quota.Tenant{ten}}, coordinator.NewMemLedger(), coordinator.WithNudges(mail.Put))
	if err != nil {
		return fail(err)
	}
	go srv.Run(ctx)
	tokens := map[string]string{}
	for _, r := range names {
		tokens[r] = "bench-token-of-region-" + r
	}
	h, err := remote.Handler(remote.HandlerConfig{Tokens: tokens, Lead: func() (remote.Backend, string) { return srv, "" }, Nudges: mail})
	if err != nil {
		return fail(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fail(err)
	}
	a.srv = &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	go a.srv.Serve(ln)
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	for _, r := range names {
		delay := crossRegion // the coordinator runs in the owner's region
		if r == names[owner] {
			delay = 0
		}
		p, err := newDelayProxy(ln.Addr().String(), delay)
		if err != nil {
			return fail(err)
		}
		a.proxies = append(a.proxies, p)
		lim, err := region.New(region.DefaultConfig(r, tenantName))
		if err != nil {
			return fail(err)
		}
		c, err := remote.NewClient(remote.ClientConfig{
			Endpoints: []string{"http://" + p.addr()}, Region: r, Token: tokens[r], OnNudge: lim.Nudge,
			HTTP: &http.Client{Timeout: 2 * time.Second},
		})
		if err != nil {
			return fail(err)
		}
		a.lims = append(a.lims, lim)
		done := make(chan struct{})
		a.done = append(a.done, done)
		go func() { defer close(done); lim.Run(ctx, c, region.WithLogger(quiet)) }()
	}
	return a, nil
}

func (a *afloatSystem) allow(_ context.Context, r int) bool { return a.lims[r].Allow(tenantName, 1) }

func (a *afloatSystem) partition(r int, cut bool) { a.proxies[r].setCut(cut) }

// ready says whether every region holds a lease (a first grant arrived).
func (a *afloatSystem) ready() bool {
	for _, l := range a.lims {
		if !l.Status(l.Now(), tenantName).Valid {
			return false
		}
	}
	return true
}

func (a *afloatSystem) close() {
	a.cancel()
	for _, d := range a.done {
		<-d
	}
	for _, p := range a.proxies {
		p.shutdown()
	}
	if a.srv != nil {
		a.srv.Close()
	}
}
