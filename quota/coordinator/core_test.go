package coordinator

import (
	"context"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/afloat/afloat/quota"
)

var ctx = context.Background()

func seedTenant() quota.Tenant {
	return quota.Tenant{Name: "acme", Rate: 500 * quota.One, Burst: 6000 * quota.One, Regions: []string{"eu", "us", "ap"}}.WithDefaults()
}

// ledgered is a core and its ledger, the runner at its simplest: each
// step written, then acknowledged, and answered from the acknowledgement.
type ledgered struct {
	*Core
	l Ledger
}

// commit writes a step and acknowledges it: the call's answer, or why it
// has none (a stale write stops the core, in Advance).
func (c *ledgered) commit(s Step) (Answer, error) {
	a, err := c.persist(s)
	// Then the steps no caller waits for (reservations of IDs, a covered
	// renewal's ends), as a runner does.
	for _, d := range c.Deferred() {
		c.persist(d) //nolint:errcheck // a failure only delays them
	}
	return a, err
}

// persist writes one step, or proves leadership for one that writes
// nothing, and acknowledges it.
func (c *ledgered) persist(s Step) (Answer, error) {
	var err error
	switch {
	case len(s.Ops) > 0:
		// A write proves leadership as it lands.
		if err = c.l.Commit(ctx, c.Epoch(), s.Ops...); err == nil {
			c.Led(s.At(), s.At())
		}
	case !c.Proven(s.At()):
		// An answer without a write needs a proof: asked for now.
		if err = c.l.Confirm(ctx, c.Epoch()); err == nil {
			c.Led(s.At(), s.At())
		}
	}
	return c.Advance(s, err)
}

func (c *ledgered) write(s Step) error {
	_, err := c.commit(s)
	return err
}

func (c *ledgered) Renew(_ context.Context, now time.Duration, req quota.Request) (quota.Grant, []quota.Nudge, error) {
	step, err := c.Core.Renew(now, req)
	if err != nil {
		return quota.Grant{}, nil, err
	}
	a, err := c.commit(step)
	return a.Grant, a.Nudges, err
}

func (c *ledgered) Return(_ context.Context, now time.Duration, ret quota.Return) error {
	step, err := c.Core.Return(now, ret)
	if err == nil {
		err = c.write(step)
	}
	return err
}

func newCore(t *testing.T, l Ledger, now time.Duration) *ledgered {
	t.Helper()
	c, err := Open(ctx, Config{Tenants: []quota.Tenant{seedTenant()}}, l, now)
	if err != nil {
		t.Fatal(err)
	}
	return &ledgered{c, l}
}

var lastSeq uint64

// seq numbers requests: every request in these tests is a new one.
func seq() uint64 { lastSeq++; return lastSeq }

func renew(t *testing.T, c *ledgered, now time.Duration, region string, holding uint64, demand float64) quota.Grant {
	t.Helper()
	g, _, err := c.Renew(ctx, now, quota.Request{Tenant: "acme", Region: region, Seq: seq(), Holding: holding, Epoch: c.Epoch(), Demand: quota.Tokens(demand)})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// invariants checks the live leases against R and B, with the credit.
func invariants(t *testing.T, c *ledgered) {
	t.Helper()
	var spans []quota.Span
	for _, l := range c.Live("acme") {
		spans = append(spans, quota.Span{Region: l.Region, Rate: l.Rate, Burst: l.Burst, From: 0, To: 1})
	}
	if err := quota.Check(seedTenant(), spans, c.Credit("acme")); err != nil {
		t.Fatal(err)
	}
}

// TestShareMovesOnlyAfterConfirmation: a hot region gets a cold region's
// share only once the cold one has confirmed its smaller lease (or the
// old one expired); until then old and new count.
func TestShareMovesOnlyAfterConfirmation(t *testing.T) {
	c := newCore(t, NewMemLedger(), 0)
	s := time.Second
	eu := renew(t, c, 0, "eu", 0, 400)
	renew(t, c, 0, "us", 0, 50)
	renew(t, c, 0, "ap", 0, 50)
	eu = renew(t, c, 1*s, "eu", eu.Lease.ID, 400) // eu learns the others' demand
	if eu.Lease.Rate < 350*quota.One {
		t.Fatalf("eu, the busy region, got %v", eu.Lease.Rate)
	}
	invariants(t, c)

	// Traffic moves to us. us asks; eu still holds its share.
	us := renew(t, c, 2*s, "us", 0, 600)
	if us.Lease.Rate > 100*quota.One {
		t.Fatalf("us got %v while eu's lease of %v is unconfirmed", us.Lease.Rate, eu.Lease.Rate)
	}
	invariants(t, c)
	// eu reports its demand gone and gets a small lease — but its old one
	// still counts: us cannot have the difference yet.
	euSmall := renew(t, c, 2*s+100*time.Millisecond, "eu", eu.Lease.ID, 0)
	if euSmall.Lease.Rate >= eu.Lease.Rate {
		t.Fatalf("eu's new lease %v is not smaller than %v", euSmall.Lease.Rate, eu.Lease.Rate)
	}
	us2 := renew(t, c, 2*s+200*time.Millisecond, "us", us.Lease.ID, 600)
	if us2.Lease.Rate > 100*quota.One {
		t.Fatalf("us got %v before eu confirmed its smaller lease", us2.Lease.Rate)
	}
	invariants(t, c)
	// eu confirms (its next request holds the small lease): now us may.
	renew(t, c, 2*s+300*time.Millisecond, "eu", euSmall.Lease.ID, 0)
	us3 := renew(t, c, 2*s+400*time.Millisecond, "us", us2.Lease.ID, 600)
	if us3.Lease.Rate < 400*quota.One {
		t.Fatalf("us got %v after eu confirmed", us3.Lease.Rate)
	}
	invariants(t, c)
}

// TestExpiryFreesShare: a region that never confirms (partitioned) holds
// its share until its lease has expired, margin included.
func TestExpiryFreesShare(t *testing.T) {
	c := newCore(t, NewMemLedger(), 0)
	tn := seedTenant()
	eu := renew(t, c, 0, "eu", 0, 500)
	eu = renew(t, c, 10*time.Millisecond, "eu", eu.Lease.ID, 500)
	us := renew(t, c, 20*time.Millisecond, "us", 0, 500)
	end := 10*time.Millisecond + tn.LeaseDuration + tn.SkewMargin
	if g := renew(t, c, end-time.Nanosecond, "us", us.Lease.ID, 500); g.Lease.Rate > 260*quota.One {
		t.Fatalf("us got %v a nanosecond before eu's lease expired", g.Lease.Rate)
	}
	g := renew(t, c, end, "us", us.Lease.ID, 500)
	if g.Lease.Rate < 480*quota.One {
		t.Fatalf("us got %v once eu's lease had expired", g.Lease.Rate)
	}
	// Every grant says how large the region's share can ever grow, so
	// that the region refuses a request above it as never admittable.
	if g.Ceiling != quota.MaxBurstShare(tn) || g.Lease.Burst > g.Ceiling || us.Ceiling != g.Ceiling {
		t.Fatalf("grant ceilings %v and %v (burst %v), want MaxBurstShare %v", us.Ceiling, g.Ceiling, g.Lease.Burst, quota.MaxBurstShare(tn))
	}
	invariants(t, c)
}

// TestReturnsAreIdempotent: the seed's duplicate returns — a return
// counts once, credit included, and a late one changes nothing.
func TestReturnsAreIdempotent(t *testing.T) {
	c := newCore(t, NewMemLedger(), 0)
	eu := renew(t, c, 0, "eu", 0, 500)
	small := renew(t, c, time.Second, "eu", eu.Lease.ID, 0)
	ret := quota.Return{Tenant: "acme", Region: "eu", LeaseID: eu.Lease.ID, Epoch: c.Epoch(), Balance: 1000 * quota.One}
	for range 3 {
		if err := c.Return(ctx, time.Second+time.Millisecond, ret); err != nil {
			t.Fatal(err)
		}
	}
	want := min(ret.Balance, eu.Lease.Burst-small.Lease.Burst)
	if got := c.Credit("acme"); got != want {
		t.Fatalf("credit %v after three copies of one return, want %v", got, want)
	}
	invariants(t, c)
	// The credit moves to the next region that asks, once.
	us := renew(t, c, 2*time.Second, "us", 0, 500)
	if us.Lease.Transfer != want || c.Credit("acme") != 0 {
		t.Fatalf("transfer %v, credit left %v; want %v moved", us.Lease.Transfer, c.Credit("acme"), want)
	}
	if ap := renew(t, c, 2*time.Second, "ap", 0, 500); ap.Lease.Transfer != 0 {
		t.Fatalf("the same credit moved twice: %v", ap.Lease.Transfer)
	}
}

// TestCreditMakesRoomForItself: every region returns its lease with a
// full bucket — as a region shuts down — so that the credit holds the
// tenant's whole burst. The regions' next leases each get their full
// burst share at once, with as much of the credit as fits moved into
// them, and their renewals after change nothing (no write). (Before,
// the credit crowded the burst it stood for out of the leases: each got
// a sliver of burst and took that sliver of the credit, so that the
// bursts crept up over dozens of renewals, every one of them a write.)
func TestCreditMakesRoomForItself(t *testing.T) {
	c := newCore(t, NewMemLedger(), 0)
	s := time.Second
	held := map[string]quota.Grant{}
	for _, r := range []string{"eu", "us", "ap"} {
		held[r] = renew(t, c, 0, r, 0, 0)
	}
	for _, r := range []string{"eu", "us", "ap"} {
		g := renew(t, c, s, r, held[r].Lease.ID, 0) // the others' leases known: the even shares
		held[r] = g
	}
	for _, r := range []string{"eu", "us", "ap"} {
		g := held[r]
		if err := c.Return(ctx, 2*s, quota.Return{Tenant: "acme", Region: r, LeaseID: g.Lease.ID, Epoch: c.Epoch(), Balance: g.Lease.Burst}); err != nil {
			t.Fatal(err)
		}
	}
	if cr := c.Credit("acme"); cr != seedTenant().Burst {
		t.Fatalf("credit %v once every region returned a full bucket, want the burst %v", cr, seedTenant().Burst)
	}
	invariants(t, c)
	for _, r := range []string{"eu", "us", "ap"} {
		g := renew(t, c, 3*s, r, 0, 0)
		if g.Lease.Burst != held[r].Lease.Burst || g.Lease.Transfer != g.Lease.Burst {
			t.Fatalf("%s's lease after the returns: burst %v with %v moved in; want its share %v, full", r, g.Lease.Burst, g.Lease.Transfer, held[r].Lease.Burst)
		}
		held[r] = g
		invariants(t, c)
	}
	for _, r := range []string{"eu", "us", "ap"} {
		step, err := c.Core.Renew(8*s, quota.Request{Tenant: "acme", Region: r, Seq: seq(), Holding: held[r].Lease.ID, Epoch: c.Epoch(), Demand: 0})
		if err != nil {
			t.Fatal(err)
		}
		if n := len(step.Ops); n > 0 && !step.Covered {
			t.Fatalf("%s's renewal after: %d ops %+v, want none (its shares unchanged)", r, n, step.Ops)
		}
		if _, err := c.commit(step); err != nil {
			t.Fatal(err)
		}
	}
}

// TestFencingAndRestore: a successor fences the ledger, keeps counting the
// leases it restores, and the old coordinator can no longer write.
func TestFencingAndRestore(t *testing.T) {
	l := NewMemLedger()
	old := newCore(t, l, 0)
	eu := renew(t, old, 0, "eu", 0, 500)
	eu = renew(t, old, time.Millisecond, "eu", eu.Lease.ID, 500)
	succ := newCore(t, l, 50*time.Second) // another clock entirely
	if succ.Epoch() <= old.Epoch() {
		t.Fatalf("epochs %d then %d", old.Epoch(), succ.Epoch())
	}
	if _, _, err := old.Renew(ctx, 2*time.Millisecond, quota.Request{Tenant: "acme", Region: "us", Seq: seq()}); !errors.Is(err, quota.ErrStaleEpoch) {
		t.Fatalf("the fenced coordinator granted: %v", err)
	}
	if old.Stopped() == nil {
		t.Fatal("the fenced coordinator did not stop")
	}
	// eu's restored lease counts for a whole lease duration and margin.
	us := renew(t, succ, 50*time.Second, "us", 0, 500)
	if us.Lease.Rate+eu.Lease.Rate > 500*quota.One {
		t.Fatalf("successor granted %v beside eu's restored %v", us.Lease.Rate, eu.Lease.Rate)
	}
	if us.Lease.ID <= eu.Lease.ID {
		t.Fatalf("successor reused lease ID %d", us.Lease.ID)
	}
	// A request claiming a newer epoch is refused, but stops nothing: the
	// ledger fences, not the regions (TestForgedEpochRefused).
	l2 := NewMemLedger()
	a := newCore(t, l2, 0)
	if _, _, err := a.Renew(ctx, 0, quota.Request{Tenant: "acme", Region: "eu", Seq: seq(), Epoch: a.Epoch() + 1}); !errors.Is(err, quota.ErrUnverifiedEpoch) || a.Stopped() != nil {
		t.Fatalf("request from a newer epoch: %v (stopped: %v)", err, a.Stopped())
	}
}

// TestOverlappingRenewals: the seed's overlapping renewals — requests
// that cross in flight produce several live leases for one region; they
// count once, and the invariants hold whatever order they come in.
func TestOverlappingRenewals(t *testing.T) {
	c := newCore(t, NewMemLedger(), 0)
	var ids []uint64
	for i := range 5 {
		g := renew(t, c, time.Duration(i)*time.Millisecond, "eu", 0, 500) // none confirmed yet
		ids = append(ids, g.Lease.ID)
	}
	if n := len(c.Live("acme")); n != 5 {
		t.Fatalf("%d live leases, want the 5 unconfirmed ones", n)
	}
	us := renew(t, c, 10*time.Millisecond, "us", 0, 500)
	invariants(t, c)
	if us.Lease.Rate > 500*quota.One-c.Live("acme")[0].Rate {
		t.Fatalf("us got %v beside eu's overlapping leases", us.Lease.Rate)
	}
	renew(t, c, 20*time.Millisecond, "eu", ids[4], 500) // confirms the newest: the rest end
	var eu int
	for _, l := range c.Live("acme") {
		if l.Region == "eu" {
			eu++
		}
	}
	if eu != 2 { // the confirmed one and the one this request got
		t.Fatalf("%d eu leases live after confirmation, want 2", eu)
	}
}

// TestInvariantsUnderRandomTraffic: whatever the requests and returns, in
// any order, the live leases and credit keep within R and B.
func TestInvariantsUnderRandomTraffic(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	c := newCore(t, NewMemLedger(), 0)
	regions := []string{"eu", "us", "ap"}
	held := map[string][]uint64{}
	now := time.Duration(0)
	for step := range 20000 {
		now += time.Duration(r.IntN(300)) * time.Millisecond
		reg := regions[r.IntN(3)]
		switch r.IntN(3) {
		case 0, 1:
			var holding uint64
			if h := held[reg]; len(h) > 0 {
				holding = h[r.IntN(len(h))]
			}
			g, _, err := c.Renew(ctx, now, quota.Request{Tenant: "acme", Region: reg, Seq: seq(), Holding: holding, Demand: quota.Micro(r.Int64N(int64(900 * quota.One)))})
			if err != nil {
				t.Fatal(err)
			}
			held[reg] = append(held[reg], g.Lease.ID)
		case 2:
			if h := held[reg]; len(h) > 0 {
				id := h[r.IntN(len(h))]
				if err := c.Return(ctx, now, quota.Return{Tenant: "acme", Region: reg, LeaseID: id, Balance: quota.Micro(r.Int64N(int64(3000 * quota.One)))}); err != nil {
					t.Fatal(err)
				}
			}
		}
		var spans []quota.Span
		for _, l := range c.Live("acme") {
			spans = append(spans, quota.Span{Region: l.Region, Rate: l.Rate, Burst: l.Burst, From: 0, To: 1})
		}
		if err := quota.Check(seedTenant(), spans, c.Credit("acme")); err != nil {
			t.Fatalf("step %d: %v", step, err)
		}
	}
}

func TestConfigAndLookupErrors(t *testing.T) {
	if _, err := Open(ctx, Config{}, nil, 0); !errors.Is(err, quota.ErrConfig) {
		t.Errorf("nil ledger: %v", err)
	}
	bad := seedTenant()
	bad.Rate = 0
	if _, err := Open(ctx, Config{Tenants: []quota.Tenant{bad}}, NewMemLedger(), 0); !errors.Is(err, quota.ErrConfig) {
		t.Errorf("bad tenant: %v", err)
	}
	if _, err := Open(ctx, Config{Tenants: []quota.Tenant{seedTenant(), seedTenant()}}, NewMemLedger(), 0); err == nil || !strings.Contains(err.Error(), "configured twice") {
		t.Errorf("duplicate tenant: %v", err)
	}
	c := newCore(t, NewMemLedger(), 0)
	if _, _, err := c.Renew(ctx, 0, quota.Request{Tenant: "nobody", Region: "eu"}); !errors.Is(err, quota.ErrUnknownTenant) {
		t.Errorf("unknown tenant: %v", err)
	}
	if _, _, err := c.Renew(ctx, 0, quota.Request{Tenant: "acme", Region: "mars"}); !errors.Is(err, quota.ErrUnknownRegion) {
		t.Errorf("unknown region: %v", err)
	}
}

// TestLedgerAllOrNothing: a commit with one bad op applies nothing; a
// stale epoch applies nothing.
func TestLedgerAllOrNothing(t *testing.T) {
	l := NewMemLedger()
	snap, _ := l.Fence(ctx)
	err := l.Commit(ctx, snap.Epoch,
		Op{Kind: PutLease, Lease: &quota.Lease{ID: 1, Tenant: "acme"}},
		Op{Kind: SetCredit, Tenant: "acme", Credit: -1})
	if err == nil || !strings.Contains(err.Error(), "want 0 or more") {
		t.Fatalf("negative credit: %v", err)
	}
	if s, _ := l.Fence(ctx); len(s.Leases) != 0 {
		t.Fatalf("a refused commit left %d leases", len(s.Leases))
	}
	if err := l.Commit(ctx, snap.Epoch, Op{Kind: PutLease, Lease: &quota.Lease{ID: 2}}); !errors.Is(err, quota.ErrStaleEpoch) {
		t.Fatalf("stale write: %v", err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if err := l.Commit(cctx, 2, Op{Kind: PutLease, Lease: &quota.Lease{ID: 3}}); !errors.Is(err, context.Canceled) {
		t.Fatalf("canceled: %v", err)
	}
}
