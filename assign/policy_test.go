package assign

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

func counts(t *testing.T, p *Pool) map[string]int64 {
	t.Helper()
	ms, err := p.list(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int64{}
	for _, m := range ms {
		out[m.Name] = m.Count
	}
	return out
}

// Each restore policy on the same history: a, b, c level at 10; c leaves;
// a and b take 20 picks each (30); c comes back. Then 20 more picks show
// what the policy does to the pool.
func TestRestorePolicies(t *testing.T) {
	_, c := newClient(t)
	ctx := ctxFor(t)
	for _, tc := range []struct {
		policy       RestorePolicy
		restoredAt   int64
		next20ToC    int // of the next 20 picks, how many go to c
		spreadAfter  int64
		describeRisk string
	}{
		{RestoreCurrentMinimum, 30, 6, 1, "level with the least used: a, b, c in turn"},
		{RestoreKeepHistory, 10, 20, 0, "c takes every pick until it catches up"},
		{RestoreZero, 0, 20, 10, "the pile-on: c takes every pick, and 10 more would follow"},
	} {
		t.Run(tc.policy.String(), func(t *testing.T) {
			p := newPool(t, c, "policy-"+tc.policy.String())
			if _, err := p.Add(ctx, 10, "a", "b", "c"); err != nil {
				t.Fatal(err)
			}
			if err := p.Remove(ctx, "c"); err != nil {
				t.Fatal(err)
			}
			for range 40 {
				if m, err := p.Pick(ctx); err != nil || m == "c" {
					t.Fatalf("pick while c is removed: %q %v", m, err)
				}
			}
			if err := p.Restore(ctx, tc.policy, "c"); err != nil {
				t.Fatal(err)
			}
			if got := counts(t, p)["c"]; got != tc.restoredAt {
				t.Fatalf("%s: c restored at %d, want %d", tc.policy, got, tc.restoredAt)
			}
			toC := 0
			for range 20 {
				m, err := p.Pick(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if m == "c" {
					toC++
				}
			}
			d, _ := spread(t, p)
			if toC != tc.next20ToC || d != tc.spreadAfter {
				t.Fatalf("%s (%s): c got %d of the next 20 picks and max−min is %d; want %d and %d",
					tc.policy, tc.describeRisk, toC, d, tc.next20ToC, tc.spreadAfter)
			}
		})
	}
}

// Add never overwrites: a member already active keeps its count, and a
// removed one stays removed.
func TestAddNeverOverwrites(t *testing.T) {
	_, c := newClient(t)
	ctx := ctxFor(t)
	p := newPool(t, c, "nx")
	p.Add(ctx, 5, "a", "b")
	p.Pick(ctx)
	p.Remove(ctx, "b")
	r, err := p.Add(ctx, 0, "a", "b", "c")
	if err != nil || r != (AddResult{Added: 1, Active: 1, Removed: 1}) {
		t.Fatalf("add: %+v %v", r, err)
	}
	if got := fmt.Sprint(counts(t, p)); got != "map[a:6 b:5 c:0]" {
		t.Fatalf("counts %s", got)
	}
	r, err = p.Add(ctx, AtMinimum, "d")
	if err != nil || r.Added != 1 || counts(t, p)["d"] != 0 {
		t.Fatalf("add at minimum: %+v %v %v", r, err, counts(t, p))
	}
	// All or nothing: one unknown member, nothing removed.
	if err := p.Remove(ctx, "a", "nobody"); !errors.Is(err, ErrUnknownMember) || !strings.Contains(err.Error(), `"nobody"`) {
		t.Fatalf("remove with an unknown member: %v", err)
	}
	if err := p.Restore(ctx, RestoreZero, "b", "a"); !errors.Is(err, ErrUnknownMember) {
		t.Fatalf("restore of an active member: %v", err)
	}
	if got := fmt.Sprint(counts(t, p)); got != "map[a:6 b:5 c:0 d:0]" {
		t.Fatalf("a refused call changed the pool: %s", got)
	}
	if _, err := p.RecordFailure(ctx, "a", 0); err != nil {
		t.Fatal(err)
	}
	ms, _ := p.list(ctx)
	for _, m := range ms {
		if m.Name == "a" && (m.Failures != 1 || m.Count != 6) {
			t.Fatalf("a failure was not counted apart from the assignments: %+v", m)
		}
	}
}

// Least-in-flight: leases go to the member with the fewest open, release
// ends them, a second release is harmless, a lease past its deadline is
// reclaimed by the server's clock, and counts never go negative.
func TestLeases(t *testing.T) {
	srv, c := newClient(t, "--enable-debug-command", "yes")
	ctx := ctxFor(t)
	l, err := NewLeases(wrap(t, c), "inflight")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.PickLeastInFlight(ctx, time.Second); !errors.Is(err, ErrUnknownPool) {
		t.Fatalf("acquire on a pool never created: %v", err)
	}
	if n, err := l.Add(ctx, "a", "b"); n != 2 || err != nil {
		t.Fatal(n, err)
	}
	x1, _ := l.PickLeastInFlight(ctx, time.Hour)
	x2, _ := l.PickLeastInFlight(ctx, time.Hour)
	x3, _ := l.PickLeastInFlight(ctx, time.Hour)
	if x1.Member != "a" || x2.Member != "b" || x3.Member != "a" {
		t.Fatalf("leases on %s %s %s, want a b a", x1.Member, x2.Member, x3.Member)
	}
	if ok, err := l.Release(ctx, x1); !ok || err != nil {
		t.Fatal(ok, err)
	}
	if ok, err := l.Release(ctx, x1); ok || err != nil {
		t.Fatalf("second release: %v %v, want false and no error", ok, err)
	}
	if x4, _ := l.PickLeastInFlight(ctx, time.Hour); x4.Member != "a" {
		t.Fatalf("after a's release the next lease is on %s, want a (1 open against b's 1, a first)", x4.Member)
	}

	// A short lease expires by the server's clock: DEBUG SLEEP makes the
	// server's time pass without the test measuring any.
	short, err := l.PickLeastInFlight(ctx, 5*time.Millisecond)
	if err != nil || short.Member != "b" {
		t.Fatalf("short lease: %+v %v", short, err)
	}
	srv.MustDo("DEBUG", "SLEEP", "0.02")
	if n, err := l.reclaim(ctx); n != 1 || err != nil {
		t.Fatalf("reclaim: %d %v, want 1", n, err)
	}
	if ok, _ := l.Release(ctx, short); ok {
		t.Fatal("release of a reclaimed lease reported it open")
	}
	ms, open, _ := l.List(ctx)
	if got := fmt.Sprintf("{%s %d}", brief(ms), open); got != "{[{b 1 true 0} {a 2 true 0}] 3}" {
		t.Fatalf("in flight %s", got)
	}

	// A removed member's leases still settle, and it comes back with them.
	if err := l.Remove(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if ok, _ := l.Release(ctx, x3); !ok {
		t.Fatal("release of a lease on a removed member")
	}
	l.Add(ctx, "a")
	ms, open, _ = l.List(ctx)
	if got := fmt.Sprintf("{%s %d}", brief(ms), open); got != "{[{a 1 true 0} {b 1 true 0}] 2}" {
		t.Fatalf("in flight after remove, release, add: %s", got)
	}
}

// Many goroutines acquiring and releasing, some twice, some never (left to
// expire): at the end nothing is in flight and no count went below zero.
func TestLeasesUnderLoad(t *testing.T) {
	srv, c := newClient(t, "--enable-debug-command", "yes")
	ctx := ctxFor(t)
	l, _ := NewLeases(wrap(t, c), "inflight-load")
	l.Add(ctx, members(10)...)
	var wg sync.WaitGroup
	for w := range 20 {
		wg.Go(func() {
			for i := range 200 {
				ttl := time.Hour
				if i%10 == 0 {
					ttl = 5 * time.Millisecond // abandoned: left to expire
				}
				x, err := l.PickLeastInFlight(ctx, ttl)
				if err != nil {
					t.Error(err)
					return
				}
				if ttl == time.Hour {
					l.Release(ctx, x)
					if (w+i)%3 == 0 {
						l.Release(ctx, x) // twice: harmless
					}
				}
			}
		})
	}
	wg.Wait()
	srv.MustDo("DEBUG", "SLEEP", "0.02")
	if _, err := l.reclaim(ctx); err != nil {
		t.Fatal(err)
	}
	ms, open, err := l.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range ms {
		if m.Count != 0 {
			t.Errorf("%s has %d in flight after every lease ended", m.Name, m.Count)
		}
	}
	if open != 0 {
		t.Errorf("%d leases open", open)
	}
}

// TestRestorePolicyText: a policy's name goes both ways through the text
// form (a flag, a JSON field); an unknown name, or a policy out of range,
// is refused with ErrInvalid and the names allowed.
func TestRestorePolicyText(t *testing.T) {
	for p := RestoreCurrentMinimum; p <= RestoreZero; p++ {
		b, err := p.MarshalText()
		var back RestorePolicy = 7
		if err != nil || string(b) != p.String() || back.UnmarshalText(b) != nil || back != p {
			t.Errorf("step %d: %v: %q, %v; read back %v", p, p, b, err, back)
		}
	}
	back := RestoreKeepHistory
	if err := back.UnmarshalText([]byte("newest")); !errors.Is(err, ErrInvalid) || back != RestoreKeepHistory ||
		!strings.Contains(err.Error(), `restore policy "newest": want current-minimum, keep-history, zero`) {
		t.Errorf("UnmarshalText(newest): %v, %v; want ErrInvalid and the policy untouched", err, back)
	}
	if _, err := RestorePolicy(7).MarshalText(); !errors.Is(err, ErrInvalid) {
		t.Errorf("MarshalText of policy 7: %v; want ErrInvalid", err)
	}
}
