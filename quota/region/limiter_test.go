package region

import (
	"errors"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/afloat/afloat/quota"
)

const (
	ms  = int64(time.Millisecond)
	sec = int64(time.Second)
)

func newLimiter(t *testing.T) *Limiter {
	t.Helper()
	l, err := New(DefaultConfig("eu", "acme"))
	if err != nil {
		t.Fatal(err)
	}
	l.cfg.MaxDrift = 0 // exact arithmetic in these tests; drift has its own
	return l
}

var nextID uint64 = 100

// grantAt asks at now and installs a grant of rate and burst at arrive.
func grantAt(t *testing.T, l *Limiter, now, arrive int64, rate, burst float64, mut func(*quota.Grant)) Installed {
	t.Helper()
	req, err := l.Request(now, "acme")
	if err != nil {
		t.Fatal(err)
	}
	nextID++
	g := quota.Grant{
		Lease:    quota.Lease{ID: nextID, Tenant: "acme", Region: "eu", Epoch: 1, Rate: quota.Tokens(rate), Burst: quota.Tokens(burst)},
		Seq:      req.Seq,
		ValidFor: 10 * time.Second, Margin: 500 * time.Millisecond,
	}
	if mut != nil {
		mut(&g)
	}
	return l.Install(arrive, g)
}

func admitN(l *Limiter, now int64, n int) int {
	got := 0
	for range n {
		if l.AllowAt(now, "acme", 1) {
			got++
		}
	}
	return got
}

// TestBucket: a lease of 10/s with a burst of 5 starts empty, refills at
// 10 a second, holds at most 5, and ends ValidFor − Margin after the
// request was sent, on the monotonic clock.
func TestBucket(t *testing.T) {
	l := newLimiter(t)
	if l.AllowAt(0, "acme", 1) {
		t.Fatal("admitted before any lease")
	}
	in := grantAt(t, l, sec, sec+50*ms, 10, 5, nil)
	if !in.OK() || in.Until != sec+int64(9500*time.Millisecond) {
		t.Fatalf("install %+v, want valid until 9.5 s after the request", in)
	}
	if got := admitN(l, sec+50*ms, 3); got != 0 {
		t.Fatalf("a fresh lease admitted %d at once; it starts empty", got)
	}
	if got := admitN(l, sec+250*ms, 5); got != 2 {
		t.Fatalf("200 ms at 10/s: %d admitted, want 2", got)
	}
	if got := admitN(l, 5*sec, 10); got != 5 {
		t.Fatalf("after a long wait: %d admitted, want the burst of 5", got)
	}
	if st := l.Status(5*sec, "acme"); st.Balance != 0 || !st.Valid {
		t.Fatalf("status %+v", st)
	}
	if !l.AllowAt(sec+int64(9400*time.Millisecond), "acme", 1) {
		t.Fatal("refused just before the end with tokens in the bucket")
	}
	if l.AllowAt(sec+int64(9500*time.Millisecond), "acme", 1) {
		t.Fatal("admitted at the lease's end")
	}
	if l.AllowAt(20*sec, "acme", 0) || l.AllowAt(2*sec, "nobody", 1) {
		t.Fatal("admitted a zero cost or an unknown tenant")
	}
}

// TestRenewalKeepsBalance: a renewal keeps the balance, truncates it to a
// smaller burst (handing the rest back), and never refills it; a lease
// after a gap starts empty, plus any transfer.
func TestRenewalKeepsBalance(t *testing.T) {
	l := newLimiter(t)
	first := grantAt(t, l, 0, 0, 100, 50, nil)
	// Full after a second: 50.
	in := grantAt(t, l, sec, sec, 100, 50, nil)
	if in.Return != nil || in.Dropped.ID != first.Lease.ID {
		t.Fatalf("renewal of the same shares returned %+v, dropped %d; want lease %d dropped, nothing to give back", in.Return, in.Dropped.ID, first.Lease.ID)
	}
	if st := l.Status(sec, "acme"); st.Balance != 50*quota.One {
		t.Fatalf("balance %v after renewal, want the 50 kept", st.Balance)
	}
	admitN(l, sec, 45) // 5 left
	grantAt(t, l, sec, sec, 100, 50, nil)
	if st := l.Status(sec, "acme"); st.Balance != 5*quota.One {
		t.Fatalf("balance %v after renewal, want 5: never refilled", st.Balance)
	}
	// Wait to fill, then shrink the burst to 20: 30 handed back.
	in = grantAt(t, l, 2*sec, 2*sec, 100, 20, nil)
	if st := l.Status(2*sec, "acme"); st.Balance != 20*quota.One || in.Return.Balance != 30*quota.One {
		t.Fatalf("shrink: balance %v, returned %v; want 20 and 30", st.Balance, in.Return.Balance)
	}
	// A gap: the lease runs out; the next starts empty, plus its transfer.
	grantAt(t, l, 30*sec, 30*sec, 100, 20, func(g *quota.Grant) { g.Lease.Transfer = 7 * quota.One })
	if st := l.Status(30*sec, "acme"); st.Balance != 7*quota.One {
		t.Fatalf("after a gap: balance %v, want only the 7 transferred", st.Balance)
	}
}

// TestIgnoredGrants: older epoch, not newer, unknown request, over on
// arrival, another region's.
func TestIgnoredGrants(t *testing.T) {
	l := newLimiter(t)
	in := grantAt(t, l, 0, 0, 10, 10, func(g *quota.Grant) { g.Lease.Epoch = 3 })
	if !in.OK() {
		t.Fatal(in.Outcome)
	}
	for i, tc := range []struct {
		mut  func(*quota.Grant)
		at   int64
		want Outcome
	}{
		{func(g *quota.Grant) { g.Lease.Epoch = 2 }, 0, StaleEpoch},
		{func(g *quota.Grant) { g.Lease.Epoch = 3; g.Lease.ID = in.Lease.ID }, 0, NotNewer},
		{func(g *quota.Grant) { g.Lease.Epoch = 3; g.Seq = 999 }, 0, UnknownRequest},
		{func(g *quota.Grant) { g.Lease.Epoch = 3 }, 20 * sec, OverOnArrival},
		{func(g *quota.Grant) { g.Lease.Epoch = 3; g.Lease.Region = "us" }, 0, NotThisRegion},
	} {
		if got := grantAt(t, l, 0, tc.at, 10, 10, tc.mut); got.OK() || got.Outcome != tc.want {
			t.Errorf("step %d: %+v, want refused as %v", i, got, tc.want)
		}
	}
}

// TestDriftShortensAndDerates: with MaxDrift, the lease ends earlier and
// refills slower by that much, so a fast clock cannot overspend.
func TestDriftShortensAndDerates(t *testing.T) {
	cfg := DefaultConfig("eu", "acme")
	cfg.MaxDrift = 0.01
	l, _ := New(cfg)
	in := grantAt(t, l, 0, 0, 100, 1000, nil)
	if want := int64(float64(9500*time.Millisecond) * 0.99); in.Until != want {
		t.Fatalf("until %d, want %d", in.Until, want)
	}
	// A token costs 10 ms × 1.01 = 10.1 ms of refill: a second holds
	// ⌊1000/10.1⌋ = 99 of them, where an underated clock would give 100.
	if got := admitN(l, sec, 200); got != 99 {
		t.Fatalf("%d admitted after a second at 100/s derated by 1 %%, want exactly 99", got)
	}
}

// TestBestEffortReserve: the emergency allowance is spent only without a
// valid lease, and refilled only from what a full bucket drops.
func TestBestEffortReserve(t *testing.T) {
	l := newLimiter(t)
	be := func(g *quota.Grant) { g.Mode = quota.BestEffort; g.Emergency = 3 * quota.One }
	grantAt(t, l, 0, 0, 10, 5, be)
	if got := admitN(l, 100*ms, 10); got != 1 {
		t.Fatalf("with a lease: %d admitted, want 1 from the bucket (none from the allowance)", got)
	}
	if got := admitN(l, 20*sec, 10); got != 3 {
		t.Fatalf("after expiry: %d admitted, want the allowance of 3", got)
	}
	// A new lease; the bucket fills, then drops tokens into the allowance.
	grantAt(t, l, 21*sec, 21*sec, 10, 5, be)
	admitN(l, 23*sec, 1) // 2 s at 10/s: full after 0.5 s, 15 dropped → allowance full again
	if st := l.Status(23*sec, "acme"); st.Reserve != 3*quota.One {
		t.Fatalf("allowance %v, want refilled to 3", st.Reserve)
	}
	hard := newLimiter(t)
	grantAt(t, hard, 0, 0, 10, 5, nil)
	if got := admitN(hard, 20*sec, 10); got != 0 {
		t.Fatalf("hard mode after expiry: %d admitted", got)
	}
}

// TestDue: when a region asks.
func TestDue(t *testing.T) {
	l := newLimiter(t)
	if !l.Due(0, "acme") {
		t.Fatal("not due with no lease ever")
	}
	in := grantAt(t, l, 0, 10*ms, 100, 100, nil)
	_ = in
	steps := []struct {
		at   int64
		do   func()
		want bool
	}{
		{100 * ms, nil, false},
		{4 * sec, nil, false},
		{5 * sec, nil, true},                                // half the lease
		{1 * sec, func() { admitN(l, sec, 1000) }, true},    // refused some: hot…
		{1 * sec, func() { l.Request(sec, "acme") }, false}, // …asked, waiting for the answer
		{1*sec + 600*ms, nil, true},                         // no answer: retry
		{2 * sec, func() { l.Nudge(quota.Nudge{Tenant: "acme", Region: "eu", Epoch: 1}) }, true},
	}
	for i, s := range steps {
		if s.do != nil {
			s.do()
		}
		if got := l.Due(s.at, "acme"); got != s.want {
			t.Errorf("step %d: Due(%v) = %v, want %v", i, time.Duration(s.at), got, s.want)
		}
	}
	if l.Due(0, "nobody") {
		t.Error("due for an unknown tenant")
	}
}

// TestReturnOnShutdown: Return invalidates first, then hands the balance.
func TestReturnOnShutdown(t *testing.T) {
	l := newLimiter(t)
	in := grantAt(t, l, 0, 0, 100, 50, nil)
	ret, ok := l.Return(sec, "acme")
	if !ok || ret.LeaseID != in.Lease.ID || ret.Balance != 50*quota.One {
		t.Fatalf("return %+v %v", ret, ok)
	}
	if l.AllowAt(sec, "acme", 1) {
		t.Fatal("admitted after returning the lease")
	}
	if _, ok := l.Return(sec, "acme"); ok {
		t.Fatal("returned twice")
	}
}

// TestConcurrentAllowAndInstall: many goroutines spend while leases are
// replaced; no admission slips past a replacement (run with -race). Time
// is explicit, so without token caches the total is exact: the balance
// kept through each renewal, never more. With caches it is never more,
// and may be a little less: tokens a request had taken from the shared
// word for its cache when the lease was replaced are dropped (under-use).
func TestConcurrentAllowAndInstall(t *testing.T) {
	for _, caches := range []int{-1, 0, 4} {
		concurrentAllowAndInstall(t, caches)
	}
}

func concurrentAllowAndInstall(t *testing.T, caches int) {
	l := withCaches(t, caches)
	grantAt(t, l, 0, 0, 1, 1000, func(g *quota.Grant) { g.Lease.Transfer = 1000 * quota.One })
	var admitted atomic.Int64
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for range 8 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				if l.AllowAt(0, "acme", 1) {
					admitted.Add(1)
				}
			}
		})
	}
	for range 50 {
		grantAt(t, l, 0, 0, 1, 1000, nil) // renewals at the same instant: balance carries, no refill
	}
	close(stop)
	wg.Wait()
	left := l.Status(0, "acme").Balance
	got := admitted.Load()*int64(quota.One) + int64(left)
	if got > int64(1000*quota.One) || caches == -1 && got != int64(1000*quota.One) {
		t.Fatalf("caches %d: admitted %d and %v left: %v in all, want the 1000 transferred (exactly, without caches)", caches, admitted.Load(), left, quota.Micro(got))
	}
}

func TestConfigErrors(t *testing.T) {
	for i, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{Tenants: []string{"a"}}, `region ""`},
		{Config{Region: "eu", Tenants: make([]string, MaxTenants+1)}, "100001 tenants: want 0 to 100000"},
		{Config{Region: "eu", Tenants: []string{""}}, `tenants[0] ""`},
		{Config{Region: "eu", Tenants: []string{"a"}, MaxDrift: 0.5}, "max drift 0.5"},
		{Config{Region: "eu", Tenants: []string{"a"}, Retry: time.Second, MaxRetry: time.Millisecond}, "retry 1s up to 1ms"},
		{Config{Region: "eu", Tenants: []string{"a"}, Caches: -2}, "caches -2: want -1 (none), 0 (the default: 4 per P, at most 64) or 1 to 1024"},
		{Config{Region: "eu", Tenants: []string{"a"}, Caches: 5000}, "caches 5000"},
		{Config{Region: "eu", Tenants: []string{"a"}, Jitter: 2}, "jitter 2: want 0 to 1"},
		{Config{Region: "eu", BatchSize: -1}, "batch size -1: want 1 to 65536 (0: 2048)"},
		{Config{Region: "eu", InFlight: 65}, "in flight 65: want 1 to 64 (0: 2)"},
		{Config{Region: "eu", Spread: 0.5}, "spread 0.5: want -1 (none), 0 (the default: 0.2) or above 0 up to 0.4"},
		{Config{Region: "eu", Spread: -0.5}, "spread -0.5"},
	} {
		if _, err := New(tc.cfg); !errors.Is(err, quota.ErrConfig) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("step %d: %v, want %q", i, err, tc.want)
		}
	}
	if _, err := New(Config{Region: "eu", Tenants: []string{"a", "a"}}); err == nil {
		t.Error("duplicate tenant accepted")
	}
	l := newLimiter(t)
	if _, err := l.Request(0, "nobody"); !errors.Is(err, quota.ErrUnknownTenant) {
		t.Errorf("request for unknown tenant: %v", err)
	}
}

// TestManyTenants: a few tenants are found by a scan, more by the map;
// either way each tenant spends only its own lease and a tenant the
// limiter does not serve is refused.
func TestManyTenants(t *testing.T) {
	for _, n := range []int{1, fewTenants, fewTenants + 1, 50} {
		var names []string
		for i := range n {
			names = append(names, "tenant-"+strings.Repeat("x", i))
		}
		l, err := New(DefaultConfig("eu", names...))
		if err != nil {
			t.Fatal(err)
		}
		if scan := l.idx.Load().few; scan != (n <= fewTenants) {
			t.Fatalf("%d tenants: scan %v", n, scan)
		}
		last := names[n-1]
		req, _ := l.Request(0, last)
		in := l.Install(0, quota.Grant{
			Lease: quota.Lease{ID: 1, Tenant: last, Region: "eu", Epoch: 1, Rate: quota.Tokens(1), Burst: quota.Tokens(3), Transfer: quota.Tokens(3)},
			Seq:   req.Seq, ValidFor: 10 * time.Second, Margin: 500 * time.Millisecond,
		})
		if !in.OK() {
			t.Fatalf("%d tenants: install: %v", n, in.Outcome)
		}
		// A copy of the name, not the same pointer: as a header would give it.
		asked := strings.Clone(last)
		got := 0
		for range 5 {
			if l.AllowAt(0, asked, 1) {
				got++
			}
		}
		if got != 3 {
			t.Errorf("%d tenants: %d admitted from a transferred balance of 3", n, got)
		}
		if n > 1 && l.AllowAt(0, names[0], 1) {
			t.Errorf("%d tenants: a tenant without a lease was admitted", n)
		}
		if l.AllowAt(0, "stranger", 1) {
			t.Errorf("%d tenants: an unknown tenant was admitted", n)
		}
	}
}

// withCaches is newLimiter with n token caches per lease.
func withCaches(t *testing.T, n int) *Limiter {
	t.Helper()
	cfg := DefaultConfig("eu", "acme")
	cfg.Caches = n
	l, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	l.cfg.MaxDrift = 0
	return l
}

// TestCachesKeepTheBurst: with per-core caches, a full bucket still holds
// exactly its burst — word and caches together — and at one instant
// (no refill) goroutines on every core admit no more than it; one
// goroutine then admits the rest, gathering from every cache, so that
// exactly the burst was admitted in all.
func TestCachesKeepTheBurst(t *testing.T) {
	for _, caches := range []int{1, 4, 16} {
		l := withCaches(t, caches)
		grantAt(t, l, 0, 0, 1, 10_000, func(g *quota.Grant) { g.Lease.Transfer = 10_000 * quota.One })
		s := l.bucket("acme").cur.Load()
		if s.caches == nil || s.chunk < 1 {
			t.Fatalf("%d caches asked, none made (chunk %d)", caches, s.chunk)
		}
		if st := l.Status(0, "acme"); st.Balance != 10_000*quota.One {
			t.Fatalf("%d caches: balance %v, want the 10000 transferred", caches, st.Balance)
		}
		var admitted atomic.Int64
		var wg sync.WaitGroup
		for g := range 8 {
			wg.Go(func() {
				for i := 0; i < 4000; i++ {
					if l.AllowAt(0, "acme", int64(1+(g+i)%3)) {
						admitted.Add(int64(1 + (g+i)%3))
					}
				}
			})
		}
		wg.Wait()
		left := l.Status(0, "acme").Balance
		if a := admitted.Load(); a > 10_000 || a*int64(quota.One)+int64(left) > 10_000*int64(quota.One) {
			t.Fatalf("%d caches: admitted %d with %v left, more than the burst of 10000", caches, a, left)
		}
		// Alone, the rest is admitted to the last token.
		for l.AllowAt(0, "acme", 1) {
			admitted.Add(1)
		}
		if left := l.Status(0, "acme").Balance; left >= quota.One {
			t.Fatalf("%d caches: refused with %v left", caches, left)
		}
		// Racing requests that gather and fail give back what they
		// gathered, and deposits that do not fit go back to the word: at
		// one instant, with no lease replaced, nothing is lost.
		if a := admitted.Load(); a != 10_000 {
			t.Fatalf("%d caches: %d of 10000 admitted in all", caches, a)
		}
	}
}

// TestCachesCountDemand: requests served from a cache, from the word and
// refused all count as offered, once each, across reports.
func TestCachesCountDemand(t *testing.T) {
	l := withCaches(t, 2)
	grantAt(t, l, 0, 0, 1, 10_000, func(g *quota.Grant) { g.Lease.Transfer = 10_000 * quota.One })
	b := l.bucket("acme")
	b.mu.Lock()
	b.offeredSince(true) // what the grant's request left
	b.mu.Unlock()
	var total int64
	for round, n := range []int{1, 50, 3000, 7000, 200} {
		want := int64(0)
		for i := range n {
			cost := int64(1 + i%2)
			l.AllowAt(0, "acme", cost)
			want += cost
		}
		b.mu.Lock()
		got := b.offeredSince(true)
		b.mu.Unlock()
		if got != want {
			t.Fatalf("round %d: %d offered counted, want %d", round, got, want)
		}
		total += got
	}
	if total <= 10_000 {
		t.Fatalf("the test never went past the burst (%d offered)", total)
	}
}

// TestCachesAndWordNeverExceedTheBurst: caches filled, then an idle spell
// that refills the word: at the next instant the region can spend no more
// than its burst, the caches' tokens included — the word's capacity is the
// burst less what the caches may hold. (Without that, this admits the
// burst plus the caches.)
func TestCachesAndWordNeverExceedTheBurst(t *testing.T) {
	for _, caches := range []int{1, 2, 8} {
		l := withCaches(t, caches)
		grantAt(t, l, 0, 0, 10_000, 10_000, func(g *quota.Grant) { g.Lease.Transfer = 10_000 * quota.One })
		s := l.bucket("acme").cur.Load()
		if s.caches == nil {
			t.Fatalf("%d caches asked, none made", caches)
		}
		// Spend a little from every cache so that each refills from the
		// word, then wait for the word to fill again.
		for i := range s.caches {
			s.caches[i].held.Store(0)
		}
		var wg sync.WaitGroup
		for range 4 * caches {
			wg.Go(func() { l.AllowAt(sec, "acme", 1) })
		}
		wg.Wait()
		got := 0
		for l.AllowAt(5*sec, "acme", 1) { // the lease ends at 9.5 s
			got++
		}
		if got > 10_000 {
			t.Fatalf("%d caches: %d admitted at one instant, more than the burst of 10000", caches, got)
		}
		if got < 10_000-caches*int(s.chunk) {
			t.Fatalf("%d caches: %d admitted at one instant after four seconds of refill, want the burst less at most the caches' %d", caches, got, caches*int(s.chunk))
		}
	}
}

// TestRetryAfterRule: a refusal's RetryAfter is the next refill that
// fits, a promise; else the next renewal the region will try, as a
// policy (not a promise).
func TestRetryAfterRule(t *testing.T) {
	l := newLimiter(t)
	ms := time.Millisecond
	step := func(i int, now int64, cost int64, wantD time.Duration, wantOK bool) {
		t.Helper()
		d := l.DecideAt(now, "acme", cost)
		if d.Allowed || d.RetryAfter != wantD || d.RetryKnown != wantOK {
			t.Errorf("step %d: DecideAt(%v, %d) = allowed %v, retry after %v, %v; want refused, %v, %v",
				i, time.Duration(now), cost, d.Allowed, d.RetryAfter, d.RetryKnown, wantD, wantOK)
		}
	}
	// Never asked: the first renewal comes within the retry interval.
	step(0, int64(100*ms), 1, 400*ms, false)
	// Asked at 0, unanswered: the next try at 500 ms.
	l.Request(0, "acme")
	step(1, int64(100*ms), 1, 400*ms, false)
	// Asked again at 500 ms, still unanswered: the interval doubles.
	l.Request(int64(500*ms), "acme")
	step(2, int64(600*ms), 1, 900*ms, false)
	// The next try is overdue at 1.6 s (due at 1.5 s, not yet answered):
	// not "retry now", which would meet the same refusal, but the first
	// retry interval.
	step(21, int64(1600*ms), 1, 500*ms, false)
	// A lease of 10/s, empty: the next refill that fits, 100 ms a token.
	in := grantAt(t, l, int64(3*time.Second), int64(3*time.Second), 10, 10, nil)
	if !in.OK() {
		t.Fatal(in.Outcome)
	}
	step(5, int64(3*time.Second), 1, 100*ms, true)
	step(6, int64(3*time.Second), 3, 300*ms, true)
	// A cost above the burst never fits this lease: the region, refusing,
	// asks for more within HotInterval (250 ms) — a policy, not a promise.
	step(7, int64(3*time.Second), 11, 250*ms, false)
}

// TestTooLarge: once a grant says how large the tenant's quota may grow
// in the region (Grant.Ceiling), a request that costs more is refused as
// never admittable — counted apart, no demand, no hurry to renew — and
// its Decision says so (Never, MaxCost, Err with the figures); up to the
// ceiling, it is an ordinary refusal with a time to retry. In best-effort
// mode the emergency allowance counts if it is larger; a grant without a
// ceiling leaves the region unable to tell.
func TestTooLarge(t *testing.T) {
	l := newLimiter(t)
	ceil := func(c, e float64, mode quota.Mode) func(*quota.Grant) {
		return func(g *quota.Grant) { g.Ceiling, g.Emergency, g.Mode = quota.Tokens(c), quota.Tokens(e), mode }
	}
	steps := []struct {
		grant    func(*quota.Grant)
		cost     int64
		admitted bool
		tooLarge bool
		most     int64
	}{
		0: {nil, 1000, false, false, -1},                          // no ceiling known: an ordinary refusal
		1: {ceil(30, 0, quota.Hard), 31, false, true, 30},         // over the ceiling
		2: {ceil(30, 0, quota.Hard), 30, false, false, 30},        // at it: waits for a larger share
		3: {ceil(30, 0, quota.Hard), 10, true, false, 30},         // within the lease
		4: {ceil(30.9, 0, quota.Hard), 31, false, true, 30},       // whole tokens only
		5: {ceil(30, 40, quota.BestEffort), 40, false, false, 40}, // E is larger
		6: {ceil(30, 40, quota.BestEffort), 41, false, true, 40},
		7: {nil, 1000, false, false, -1}, // a grant without it: unknown again
	}
	for i, st := range steps {
		now := int64(i) * 20 * sec
		if in := grantAt(t, l, now, now, 10, 10, st.grant); !in.OK() {
			t.Fatalf("step %d: %v", i, in.Outcome)
		}
		before, _ := l.Counts("acme")
		demand := l.bucket("acme").offeredSince(false)
		// The lease starts empty: 2 s of refill fill it.
		d := l.DecideAt(now+2*sec, "acme", st.cost)
		if d.Allowed != st.admitted || d.Never != st.tooLarge || d.MaxCost != st.most {
			t.Errorf("step %d: DecideAt(cost %d) = allowed %v, never %v, max cost %d; want %v, %v, %d",
				i, st.cost, d.Allowed, d.Never, d.MaxCost, st.admitted, st.tooLarge, st.most)
		}
		after, _ := l.Counts("acme")
		err := d.Err()
		if got := errors.Is(err, ErrTooLarge); got != st.tooLarge {
			t.Errorf("step %d: Err() = %v, want too large %v", i, err, st.tooLarge)
		}
		if st.tooLarge && (d.RetryAfter != 0 || d.RetryKnown) {
			t.Errorf("step %d: never admittable, yet retry after %v (%v)", i, d.RetryAfter, d.RetryKnown)
		}
		if !st.admitted && !st.tooLarge && d.RetryAfter <= 0 {
			t.Errorf("step %d: an ordinary refusal with no time to retry", i)
		}
		if got := after.TooLarge - before.TooLarge; st.tooLarge != (got == st.cost) || !st.tooLarge && got != 0 {
			t.Errorf("step %d: TooLarge counted %d, want %d if too large", i, got, st.cost)
		}
		if d := l.bucket("acme").offeredSince(false) - demand; st.tooLarge && d != 0 {
			t.Errorf("step %d: a request too large counted %d as demand", i, d)
		}
		if i == 6 && (err == nil || !strings.HasPrefix(err.Error(), "region: ") || !strings.Contains(err.Error(), "at most 40")) {
			t.Errorf("step %d: Err's message: %v", i, err)
		}
	}
	if d := l.DecideAt(0, "mallory", 1); !d.Unknown || d.Allowed || !errors.Is(d.Err(), quota.ErrUnknownTenant) {
		t.Errorf("a tenant not served: %+v, %v", d, d.Err())
	}
}

// TestJitterStretchesRetries: with Jitter, a re-send waits the retry
// interval stretched by at most that fraction, never less.
func TestJitterStretchesRetries(t *testing.T) {
	cfg := DefaultConfig("eu", "acme")
	cfg.Jitter = 0.5
	l, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 50 {
		at := int64(i) * int64(time.Minute)
		l.Request(at, "acme") // unanswered: the interval doubles each time
		retry := int64(l.retryAfterFailures(l.bucket("acme").failures))
		if l.Due(at+retry-1, "acme") {
			t.Fatalf("step %d: due before the retry interval", i)
		}
		if !l.Due(at+retry*3/2, "acme") {
			t.Fatalf("step %d: not due after the interval and the largest stretch", i)
		}
	}
}

// TestJitterIsSeeded: a stretch follows from the config and the calls
// alone — two limiters alike draw alike — while another seed, region or
// tenant draws apart; the draws spread evenly over [0, Jitter).
func TestJitterIsSeeded(t *testing.T) {
	newL := func(region string, seed uint64) *Limiter {
		cfg := DefaultConfig(region, "acme", "beta")
		cfg.Jitter, cfg.Seed = 0.5, seed
		l, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	draws := func(l *Limiter, tenant string, n int) []float64 {
		out := make([]float64, n)
		for i := range out {
			l.Request(int64(i)*int64(time.Minute), tenant)
			out[i] = l.bucket(tenant).jitter
		}
		return out
	}
	const n = 2000
	a := draws(newL("eu", 7), "acme", n)
	if b := draws(newL("eu", 7), "acme", n); !slices.Equal(a, b) {
		t.Fatal("two limiters of one config drew apart")
	}
	for i, other := range [][]float64{
		draws(newL("eu", 8), "acme", n),
		draws(newL("us", 7), "acme", n),
		draws(newL("eu", 7), "beta", n),
	} {
		same := 0
		for k := range a {
			if a[k] == other[k] {
				same++
			}
		}
		if same > 0 {
			t.Errorf("step %d: %d of %d draws the same as acme's in eu under seed 7", i, same, n)
		}
	}
	var sum float64
	var low int
	for i, d := range a {
		if d < 0 || d >= 0.5 {
			t.Fatalf("draw %d: %v, want [0, 0.5)", i, d)
		}
		sum += d
		if d < 0.25 {
			low++
		}
	}
	if mean := sum / n; mean < 0.24 || mean > 0.26 || low < n*45/100 || low > n*55/100 {
		t.Errorf("mean %.3f, %d of %d below 0.25: want about 0.25 and half", mean, low, n)
	}
}

// TestLimiterSaysItsLeaseChanges: the limiter's own account of the lease
// a tenant spends under, for its journal. A lease replaced while valid is
// Dropped at the install; one that ran out first is said once — by
// Expired when its end has come, or, if nobody asked, by the next
// install (Expired, ExpiredAt: its end, not the install's instant); a
// returned one is said by the return and not again.
func TestLimiterSaysItsLeaseChanges(t *testing.T) {
	l := newLimiter(t)
	a := grantAt(t, l, 0, 10*ms, 10, 10, nil)
	if _, _, ok := l.Expired(5*sec, "acme"); ok {
		t.Fatal("step 1: Expired while lease a is valid")
	}
	b := grantAt(t, l, 5*sec, 5*sec+10*ms, 10, 10, nil)
	if b.Dropped.ID != a.Lease.ID || b.Expired.ID != 0 {
		t.Fatalf("step 2: installing b over a valid a: dropped %d, expired %d; want a dropped", b.Dropped.ID, b.Expired.ID)
	}
	lease, at, ok := l.Expired(b.Until, "acme")
	if !ok || lease.ID != b.Lease.ID || at != b.Until {
		t.Fatalf("step 3: at b's end: %v, %d at %d; want b at %d", ok, lease.ID, at, b.Until)
	}
	if _, _, ok := l.Expired(b.Until+sec, "acme"); ok {
		t.Fatal("step 4: b's end said twice")
	}
	c := grantAt(t, l, 20*sec, 20*sec+10*ms, 10, 10, nil)
	if c.Dropped.ID != 0 || c.Expired.ID != 0 {
		t.Fatalf("step 5: c after b's end was said: dropped %d, expired %d; want neither", c.Dropped.ID, c.Expired.ID)
	}
	// c runs out, nobody asks; d comes later.
	d := grantAt(t, l, c.Until+3*sec, c.Until+3*sec+10*ms, 10, 10, nil)
	if d.Expired.ID != c.Lease.ID || d.ExpiredAt != c.Until || d.Dropped.ID != 0 {
		t.Fatalf("step 6: d after c ran out unsaid: expired %d at %d, dropped %d; want c at %d", d.Expired.ID, d.ExpiredAt, d.Dropped.ID, c.Until)
	}
	if _, ok := l.Return(d.Until-sec, "acme"); !ok {
		t.Fatal("step 7: d not returned")
	}
	if _, _, ok := l.Expired(d.Until+sec, "acme"); ok {
		t.Fatal("step 8: a returned lease said to have run out too")
	}
}

// TestReadBeforeInstall: a reader that read the clock before a renewal
// was installed and the lease in use after it — a decision, a readiness
// scan, a status — reads the new lease as in use and valid, not "no
// lease": the lease starts at the install's own reading of the clock,
// later than the reader's.
func TestReadBeforeInstall(t *testing.T) {
	l := newLimiter(t)
	if in := grantAt(t, l, 0, 0, 100, 200, nil); in.Outcome != Accepted {
		t.Fatalf("first lease: %v", in.Outcome)
	}
	renew := 5 * sec // the bucket has filled meanwhile
	if in := grantAt(t, l, renew, renew, 100, 200, nil); in.Outcome != Accepted {
		t.Fatalf("renewal: %v", in.Outcome)
	}
	stale := renew - ms // the clock as read before the renewal's install
	if !l.AllowAt(stale, "acme", 1) {
		t.Fatal("AllowAt at a reading before the renewal's install refused a full bucket")
	}
	if d := l.DecideAt(stale, "acme", 1); !d.Allowed || d.LeaseID == 0 {
		t.Fatalf("DecideAt at a reading before the renewal's install: %+v, want allowed under the lease in use", d)
	}
	if ls := l.Leases(stale, 10); ls.Leased != 1 {
		t.Fatalf("Leases at a reading before the renewal's install: %+v, want the tenant leased", ls)
	}
	if st := l.Status(stale, "acme"); !st.Valid {
		t.Fatalf("Status at a reading before the renewal's install: %+v, want valid", st)
	}
}
