package assign

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// A cooling member is skipped by every pick until its release time on the
// pool's clock, and comes back by itself, with its count, exactly then.
func TestCooldownSkipsAndReturns(t *testing.T) {
	_, c := newClient(t)
	ctx := ctxFor(t)
	const t0 = 5_000_000
	p, setClock := testClockPool(t, c, "cool", t0)
	if _, err := p.Add(ctx, 0, "a", "b", "c"); err != nil {
		t.Fatal(err)
	}
	if err := p.cooldownUntil(ctx, "a", time.UnixMilli(t0+1000)); err != nil {
		t.Fatal(err)
	}
	// A shorter cooldown does not cut a longer one short.
	if got, err := p.CooldownFor(ctx, 10*time.Millisecond, "a"); err != nil || got[0].UnixMilli() != t0+1000 {
		t.Fatalf("a second, shorter cooldown: %v %v, want the first's end %d", got, err, t0+1000)
	}
	for step, now := range []int64{t0, t0 + 500, t0 + 999} {
		setClock(now)
		for i := range 4 {
			if m, err := p.Pick(ctx); err != nil || m == "a" {
				t.Fatalf("step %d, pick %d at %d: %q %v, want b or c while a cools", step, i, now, m, err)
			}
		}
	}
	st, err := p.Status(ctx)
	if err != nil || st.Now.UnixMilli() != t0+999 {
		t.Fatalf("status: %+v %v", st, err)
	}
	if last := st.Members[2]; last.Name != "a" || last.CoolingUntil.IsZero() || last.CoolingUntil.UnixMilli() != t0+1000 || last.Count != 0 {
		t.Fatalf("a while cooling: %+v", last)
	}
	setClock(t0 + 1000)
	for i := range 6 { // b and c have 6 each: a takes the next 6
		if m, err := p.Pick(ctx); err != nil || m != "a" {
			t.Fatalf("pick %d once a's cooldown is over: %q %v, want a (count 0)", i, m, err)
		}
	}
	// Cooling a member that is not in the pool changes nothing.
	if _, err := p.CooldownFor(ctx, time.Second, "b", "zz"); !errors.Is(err, ErrUnknownMember) {
		t.Fatalf("cooldown of b and an unknown member: %v, want ErrUnknownMember", err)
	}
	if ms, _ := p.list(ctx); !ms[0].CoolingUntil.IsZero() || !ms[1].CoolingUntil.IsZero() || !ms[2].CoolingUntil.IsZero() {
		t.Fatalf("after a refused cooldown: %+v, want none cooling", ms)
	}
}

// N failures in a row evict; a success between them starts the count
// again; a retry-after cools the member; the evicted member comes back by
// Restore's policy with its streak reset.
func TestFailureStreakEvicts(t *testing.T) {
	_, c := newClient(t)
	ctx := ctxFor(t)
	const t0 = 7_000_000
	p, _ := testClockPool(t, c, "streak", t0)
	if _, err := p.Add(ctx, 4, "a", "b"); err != nil {
		t.Fatal(err)
	}
	if err := p.SetSettings(ctx, Settings{EvictAfter: 3}); err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		op   string
		want FailureOutcome
	}{
		{"fail", FailureOutcome{Member: true, Streak: 1}},
		{"fail 429", FailureOutcome{Member: true, Streak: 2, CoolingUntil: time.UnixMilli(t0 + 2000)}},
		{"success", FailureOutcome{}},
		{"fail", FailureOutcome{Member: true, Streak: 1}},
		{"fail", FailureOutcome{Member: true, Streak: 2}},
		{"fail 429", FailureOutcome{Member: true, Streak: 3, Evicted: true}}, // eviction wins over the cooldown
		{"fail", FailureOutcome{}},                                           // removed: only counted
	}
	for i, s := range steps {
		var got FailureOutcome
		var err error
		switch s.op {
		case "fail":
			got, err = p.RecordFailure(ctx, "a", 0)
		case "fail 429":
			got, err = p.RecordFailure(ctx, "a", 2*time.Second)
		case "success":
			err = p.RecordSuccess(ctx, "a")
		}
		if err != nil || got != s.want {
			t.Fatalf("step %d: %s = %+v %v, want %+v", i, s.op, got, err, s.want)
		}
	}
	ms, err := p.list(ctx)
	if err != nil || len(ms) != 2 || ms[1].Name != "a" || ms[1].Active || !ms[1].CoolingUntil.IsZero() || ms[1].Failures != 6 || ms[1].Streak != 0 || ms[1].Count != 4 {
		t.Fatalf("after the eviction: %+v %v", ms, err)
	}
	if m, err := p.Pick(ctx); m != "b" || err != nil {
		t.Fatalf("pick: %q %v, want b", m, err)
	}
	if err := p.Restore(ctx, RestoreCurrentMinimum, "a"); err != nil {
		t.Fatal(err)
	}
	if ms, _ := p.list(ctx); ms[0].Name != "a" || ms[0].Count != 5 || !ms[0].Active {
		t.Fatalf("a restored at the minimum: %+v", ms)
	}
}

// When every member cools, a pick fails with the earliest release time,
// or, under LastResortEarliest, takes the member that comes back first.
func TestLastResort(t *testing.T) {
	_, c := newClient(t)
	ctx := ctxFor(t)
	const t0 = 9_000_000
	p, setClock := testClockPool(t, c, "last", t0)
	if _, err := p.Add(ctx, 0, "a", "b", "c"); err != nil {
		t.Fatal(err)
	}
	for _, x := range []struct {
		m string
		d time.Duration
	}{{"a", 3 * time.Second}, {"b", 2 * time.Second}, {"c", 2 * time.Second}} {
		if _, err := p.CooldownFor(ctx, x.d, x.m); err != nil {
			t.Fatal(err)
		}
	}
	_, err := p.Pick(ctx)
	var ce *CoolingError
	if !errors.As(err, &ce) || ce.Until.UnixMilli() != t0+2000 || !errors.Is(err, ErrAllCooling) || !errors.Is(err, ErrPoolEmpty) {
		t.Fatalf("pick with every member cooling: %v, want a *CoolingError until %d", err, t0+2000)
	}
	res, err := p.PickBatch(ctx, 3)
	if err != nil || !errors.As(res[2].Err, &ce) || ce.Until.UnixMilli() != t0+2000 {
		t.Fatalf("batch with every member cooling: %+v %v", res, err)
	}
	if err := p.SetSettings(ctx, Settings{LastResort: LastResortEarliest}); err != nil {
		t.Fatal(err)
	}
	for i, want := range []string{"b", "b"} { // b and c end together: the lower name
		if m, err := p.Pick(ctx); m != want || err != nil {
			t.Fatalf("last-resort pick %d: %q %v, want %s", i, m, err, want)
		}
	}
	ms, _ := p.list(ctx)
	if ms[0].Name != "b" || ms[0].Count != 2 || ms[0].CoolingUntil.IsZero() {
		t.Fatalf("after last-resort picks: %+v, want b counted twice and still cooling", ms)
	}
	setClock(t0 + 2000)
	if m, _ := p.Pick(ctx); m != "c" {
		t.Fatalf("after b and c come back: %q, want c (count 0)", m)
	}
}

// A member of weight w takes w times the share: within 1 % of its share
// of 10,000 picks, and the counts are the exact quotients.
func TestWeightsShare(t *testing.T) {
	_, c := newClient(t)
	ctx := ctxFor(t)
	p := newPool(t, c, "weights")
	weights := map[string]int{"w1": 1, "w2": 2, "w3": 3, "w7": 7, "w13": 13}
	total := 0
	for m, w := range weights {
		if _, err := p.AddWeighted(ctx, w, 0, m); err != nil {
			t.Fatal(err)
		}
		total += w
	}
	const n = 10_000
	res, err := p.PickBatch(ctx, n)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int{}
	for _, r := range res {
		if r.Err != nil {
			t.Fatal(r.Err)
		}
		got[r.Member]++
	}
	for m, w := range weights {
		want := float64(n) * float64(w) / float64(total)
		if math.Abs(float64(got[m])-want) > 0.01*want {
			t.Errorf("%s (weight %d): %d picks, want %.1f ± 1 %%", m, w, got[m], want)
		}
		// Least used by count / weight: no member is more than one pick
		// ahead of its exact share.
		if math.Abs(float64(got[m])-want) > 1 {
			t.Errorf("%s (weight %d): %d picks, want %.1f ± 1", m, w, got[m], want)
		}
	}
	// A weight changed keeps the count: w13 now weighs 1 and waits.
	if err := p.SetWeight(ctx, 1, "w13"); err != nil {
		t.Fatal(err)
	}
	for range 100 {
		if m, err := p.Pick(ctx); err != nil || m == "w13" {
			t.Fatalf("pick after w13's weight fell to 1: %q %v", m, err)
		}
	}
}

// 50 workers pick on Redis's own clock while members are cooled: no pick
// that started after a cooldown was set returns that member, and the
// members cooled before the workers started are never picked.
func TestNoPickWhileCooling(t *testing.T) {
	_, c := newClient(t)
	ctx := ctxFor(t)
	p := newPool(t, c, "cooling-workers")
	members := make([]string, 20)
	for i := range members {
		members[i] = fmt.Sprintf("m%02d", i)
	}
	if _, err := p.Add(ctx, 0, members...); err != nil {
		t.Fatal(err)
	}
	if _, err := p.CooldownFor(ctx, time.Hour, "m00", "m01"); err != nil {
		t.Fatal(err)
	}
	// cooled[i] is set once m02+i's cooldown has been answered: every pick
	// that starts after it must not get it.
	var cooled [10]atomic.Bool
	var picks, violations atomic.Int64
	var wg sync.WaitGroup
	for w := range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 200 {
				var before [10]bool
				for i := range cooled {
					before[i] = cooled[i].Load()
				}
				m, err := p.Pick(ctx)
				if err != nil {
					t.Errorf("worker %d: %v", w, err)
					return
				}
				picks.Add(1)
				if m == "m00" || m == "m01" {
					violations.Add(1)
				}
				for i, b := range before {
					if b && m == members[2+i] {
						violations.Add(1)
					}
				}
			}
		}()
	}
	for i := range cooled {
		if _, err := p.CooldownFor(ctx, time.Hour, members[2+i]); err != nil {
			t.Fatal(err)
		}
		cooled[i].Store(true)
	}
	wg.Wait()
	if v := violations.Load(); v != 0 || picks.Load() != 50*200 {
		t.Fatalf("%d picks of a cooling member in %d picks", v, picks.Load())
	}
	ms, err := p.list(ctx)
	if err != nil {
		t.Fatal(err)
	}
	sum := int64(0)
	for _, m := range ms {
		sum += m.Count
	}
	if sum != 50*200 {
		t.Fatalf("counts sum to %d, want %d: a pick lost or counted twice", sum, 50*200)
	}
}

// A cooldown is kept in Redis like the counts: a script flush and a
// restart (SHUTDOWN SAVE) lose none, and a pick after either still skips
// the cooling member, by the script sent again (NOSCRIPT, then EVAL).
func TestCooldownSurvivesFlushAndRestart(t *testing.T) {
	srv, c := newClient(t)
	ctx := ctxFor(t)
	p := newPool(t, c, "faults")
	if _, err := p.AddWeighted(ctx, 2, 0, "a", "b"); err != nil {
		t.Fatal(err)
	}
	until, err := p.CooldownFor(ctx, time.Hour, "a")
	if err != nil {
		t.Fatal(err)
	}
	// After the restart, any of the client's pooled connections may still
	// be one the old server had: a command on it fails as ambiguous, and
	// the client dials again for the next. Such a pick is sent again; one
	// that answers must answer b.
	pick := func() (m string, err error) {
		for range 10 {
			if m, err = p.Pick(ctx); !errors.Is(err, ErrAmbiguous) {
				break
			}
		}
		return m, err
	}
	check := func(step string) {
		t.Helper()
		for i := range 3 {
			if m, err := pick(); err != nil || m != "b" {
				t.Fatalf("%s: pick %d: %q %v, want b while a cools", step, i, m, err)
			}
		}
		ms, err := p.list(ctx)
		for i := 0; errors.Is(err, ErrAmbiguous) && i < 10; i++ {
			ms, err = p.list(ctx)
		}
		if err != nil || ms[1].Name != "a" || !ms[1].CoolingUntil.Equal(until[0]) || ms[1].Weight != 2 {
			t.Fatalf("%s: %+v %v, want a cooling until %v", step, ms, err, until[0])
		}
	}
	check("before")
	srv.MustDo("SCRIPT", "FLUSH")
	check("after SCRIPT FLUSH")
	srv.Restart()
	check("after a restart")
	if p.ScriptReloads() < 2 {
		t.Fatalf("%d script reloads, want one after the flush and one after the restart at least", p.ScriptReloads())
	}
}

// A sticky key stays on its member while the member serves, even as it
// pulls ahead of the others; it moves when the member cools or leaves,
// and its record carries the pool's sticky TTL from its last pick.
func TestPickSticky(t *testing.T) {
	_, c := newClient(t)
	ctx := ctxFor(t)
	p := newPool(t, c, "sticky", WithStickyTTL(time.Minute))
	if _, err := p.Add(ctx, 0, "a", "b"); err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		if m, err := p.PickSticky(ctx, "session-1"); m != "a" || err != nil {
			t.Fatalf("sticky pick %d: %q %v, want a every time", i, m, err)
		}
	}
	if m, _ := p.PickSticky(ctx, "session-2"); m != "b" {
		t.Fatalf("a new key: %q, want the least used, b", m)
	}
	ttl, err := c.Do(ctx, c.B().Pttl().Key(p.k.StickyPrefix+"session-1").Build()).AsInt64()
	if err != nil || ttl <= 0 || ttl > time.Minute.Milliseconds() {
		t.Fatalf("the record's TTL: %d ms %v, want up to a minute", ttl, err)
	}
	if _, err := p.CooldownFor(ctx, time.Hour, "a"); err != nil {
		t.Fatal(err)
	}
	if m, _ := p.PickSticky(ctx, "session-1"); m != "b" {
		t.Fatalf("with a cooling: %q, want b", m)
	}
	if err := p.Remove(ctx, "b"); err != nil {
		t.Fatal(err)
	}
	if _, err := p.PickSticky(ctx, "session-1"); !errors.Is(err, ErrAllCooling) {
		t.Fatalf("with a cooling and b removed: %v, want ErrAllCooling", err)
	}
}

// 50 workers pick from ten members limited to 5 picks an hour each (on
// Redis's own clock: nothing refills during the test): exactly 50 picks
// succeed, 5 per member, and every other pick is refused with the time
// the first member has room again.
func TestNoPickOverItsLimit(t *testing.T) {
	_, c := newClient(t)
	ctx := ctxFor(t)
	p := newPool(t, c, "limited-workers")
	members := make([]string, 10)
	for i := range members {
		members[i] = fmt.Sprintf("key-%d", i)
	}
	if _, err := p.Add(ctx, 0, members...); err != nil {
		t.Fatal(err)
	}
	if err := p.SetLimit(ctx, Limit{Rate: 5, Per: time.Hour, Burst: 5}, members...); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	got := map[string]int{}
	var refused atomic.Int64
	var wg sync.WaitGroup
	for w := range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 4 {
				var ms []string
				if w%2 == 0 {
					m, err := p.Pick(ctx)
					if err != nil {
						if !errors.Is(err, ErrAllCooling) {
							t.Errorf("worker %d: %v", w, err)
						}
						refused.Add(1)
						continue
					}
					ms = append(ms, m)
				} else {
					rs, err := p.PickBatch(ctx, 3)
					if err != nil {
						t.Errorf("worker %d: %v", w, err)
						return
					}
					for _, r := range rs {
						if r.Err != nil {
							if !errors.Is(r.Err, ErrAllCooling) {
								t.Errorf("worker %d: %v", w, r.Err)
							}
							refused.Add(1)
							continue
						}
						ms = append(ms, r.Member)
					}
				}
				mu.Lock()
				for _, m := range ms {
					got[m]++
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	total := 0
	for _, m := range members {
		if got[m] != 5 {
			t.Errorf("%s picked %d times, want its limit, 5", m, got[m])
		}
		total += got[m]
	}
	if total != 50 || refused.Load() != 25*4+25*4*3-50 {
		t.Fatalf("%d picks made and %d refused, want 50 and %d", total, refused.Load(), 25*4+25*4*3-50)
	}
	ms, _ := p.list(ctx)
	for _, m := range ms {
		if m.Count != 5 || m.CoolingUntil.IsZero() || m.Limit == nil || *m.Limit != (Limit{Rate: 5, Per: time.Hour, Burst: 5}) {
			t.Fatalf("after the run: %+v, want every member at 5, cooling, with its limit", m)
		}
	}
}

// TestNoLeaseOverItsCap: 50 workers acquire, pick while they hold the
// lease, and release, on ten members — two cooling for an hour, two
// limited to 20 an hour, six capped at 1 to 3 leases in flight. Each
// worker counts a lease in flight from Acquire's answer to just before its
// Release, so the workers' count never exceeds the server's: it must
// never exceed the cap. No pick gets
// a cooling member, none a limited one more than 20 times, and every
// pick and lease is counted once.
func TestNoLeaseOverItsCap(t *testing.T) {
	_, c := newClient(t)
	ctx := ctxFor(t)
	p := newPool(t, c, "capped-workers")
	members := make([]string, 10)
	for i := range members {
		members[i] = fmt.Sprintf("k%d", i)
	}
	if _, err := p.Add(ctx, 0, members...); err != nil {
		t.Fatal(err)
	}
	if _, err := p.CooldownFor(ctx, time.Hour, "k0", "k1"); err != nil {
		t.Fatal(err)
	}
	if err := p.SetLimit(ctx, Limit{Rate: 20, Per: time.Hour, Burst: 20}, "k2", "k3"); err != nil {
		t.Fatal(err)
	}
	caps := map[string]int64{"k4": 1, "k5": 1, "k6": 2, "k7": 2, "k8": 3, "k9": 3}
	for m, n := range caps {
		if err := p.SetConcurrency(ctx, int(n), m); err != nil {
			t.Fatal(err)
		}
	}
	var inflight [10]atomic.Int64
	var mu sync.Mutex
	got := map[string]int{}
	var over, refused atomic.Int64
	var wg sync.WaitGroup
	for w := range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			pick := func() {
				m, err := p.Pick(ctx)
				if err != nil {
					if !errors.Is(err, ErrAllCooling) {
						t.Errorf("worker %d: pick: %v", w, err)
					}
					refused.Add(1)
					return
				}
				mu.Lock()
				got[m]++
				mu.Unlock()
			}
			for range 20 {
				l, err := p.PickLease(ctx, time.Minute)
				if err != nil {
					if !errors.Is(err, ErrAllCooling) {
						t.Errorf("worker %d: acquire: %v", w, err)
						return
					}
					refused.Add(1)
					continue
				}
				k := l.Member[1] - '0'
				if n := inflight[k].Add(1); caps[l.Member] > 0 && n > caps[l.Member] {
					over.Add(1)
				}
				pick() // a round trip with the lease held, as work would
				inflight[k].Add(-1)
				if ok, err := p.Release(ctx, l); err != nil || !ok {
					t.Errorf("worker %d: release %+v: %v %v", w, l, ok, err)
					return
				}
				mu.Lock()
				got[l.Member]++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if over.Load() != 0 || got["k0"]+got["k1"] != 0 || got["k2"] > 20 || got["k3"] > 20 {
		t.Fatalf("%d leases over a cap; picks by member %v: want none of k0, k1, at most 20 of k2, k3", over.Load(), got)
	}
	st, err := p.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, m := range st.Members {
		if m.Count != int64(got[m.Name]) || m.InFlight != 0 || int64(m.Concurrency) != caps[m.Name] {
			t.Errorf("after the run %+v: want %d picks, nothing in flight, cap %d", m, got[m.Name], caps[m.Name])
		}
		total += got[m.Name]
	}
	if total+int(refused.Load()) < 50*20 || total+int(refused.Load()) > 50*40 || st.OpenLeases != 0 {
		t.Fatalf("%d picks, %d refused, %d leases open: want %d to %d in all, none open", total, refused.Load(), st.OpenLeases, 50*20, 50*40)
	}
	t.Logf("picks %v, %d refused", got, refused.Load())
}

// TestWeightedCountExact: a weighted member's count is read back from its
// score (count / weight, 17 digits) as round(score × weight), exact for
// counts below 2^51, and a pick adds exactly one.
func TestWeightedCountExact(t *testing.T) {
	_, c := newClient(t)
	ctx := ctxFor(t)
	// 61 / 7, 1 / 49, 63 / 999, 1001 / 1000: doubles whose product with
	// the weight falls just short of the count (floor would be wrong).
	for _, w := range []int{7, 49, 999, 1000} {
		for _, n := range []int64{1, 61, 63, 1001, 1<<50 + 1, 1<<51 - 1} {
			p := newPool(t, c, fmt.Sprintf("exact-%d-%d", w, n))
			if _, err := p.AddWeighted(ctx, w, n, "m"); err != nil {
				t.Fatal(err)
			}
			// Removed and restored: the count goes through take and put.
			if err := firstErr(p.Remove(ctx, "m"), p.Restore(ctx, RestoreKeepHistory, "m")); err != nil {
				t.Fatal(err)
			}
			for range 3 {
				if _, err := p.Pick(ctx); err != nil {
					t.Fatal(err)
				}
			}
			ms, err := p.list(ctx)
			if err != nil || len(ms) != 1 || ms[0].Count != n+3 {
				t.Fatalf("weight %d, count %d, three picks: %+v %v, want count %d", w, n, ms, err, n+3)
			}
		}
	}
}

// meta's 'due' is there whenever meta is, and stays at or before the
// first release in the cooling set ('-' when none is out), so that a
// pick's first call tells a plain pool and skips the clock and the
// cooling set while it is ahead; 'table' keeps meta a hash table while it
// holds anything else, and meta goes (the pick is the plain one again)
// when nothing else is left.
func TestMetaDueAndTable(t *testing.T) {
	_, c := newClient(t)
	ctx := ctxFor(t)
	const t0 = 7_000_000
	p, setClock := testClockPool(t, c, "next", t0)
	if _, err := p.Add(ctx, 0, "a", "b", "c"); err != nil {
		t.Fatal(err)
	}
	meta := func() (exists bool, enc, next string) {
		t.Helper()
		n, err := c.Do(ctx, c.B().Exists().Key(p.k.Meta).Build()).AsInt64()
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			return false, "", ""
		}
		enc, err = c.Do(ctx, c.B().ObjectEncoding().Key(p.k.Meta).Build()).ToString()
		if err != nil {
			t.Fatal(err)
		}
		next, _ = c.Do(ctx, c.B().Hget().Key(p.k.Meta).Field("due").Build()).ToString()
		return true, enc, next
	}
	want := func(step string, exists bool, next string) {
		t.Helper()
		e, enc, n := meta()
		if e != exists || (e && enc != "hashtable") || n != next {
			t.Fatalf("%s: meta exists %v, encoding %q, due %q; want exists %v, a hashtable, due %q", step, e, enc, n, exists, next)
		}
	}
	want("a plain pool", false, "")
	if err := p.SetWeight(ctx, 2, "a"); err != nil {
		t.Fatal(err)
	}
	want("a weighted", true, "-")
	if enc, err := c.Do(ctx, c.B().ObjectEncoding().Key(p.k.Active).Build()).ToString(); err != nil || enc != "skiplist" {
		t.Fatalf("a weighted: the sorted set is a %q %v, want a skiplist (keep_skiplist)", enc, err)
	}
	if err := p.SetWeight(ctx, 1, "a"); err != nil {
		t.Fatal(err)
	}
	want("a's weight back to 1", false, "")
	if err := firstErr(p.cooldownUntil(ctx, "b", time.UnixMilli(t0+100)), p.cooldownUntil(ctx, "c", time.UnixMilli(t0+50))); err != nil {
		t.Fatal(err)
	}
	want("b and c cooling", true, strconv.Itoa(t0+50))
	if err := p.Remove(ctx, "c"); err != nil {
		t.Fatal(err)
	}
	want("c removed: due early, not late", true, strconv.Itoa(t0+50))
	setClock(t0 + 60)
	if m, err := p.Pick(ctx); err != nil || m != "a" {
		t.Fatalf("pick at +60: %q %v, want a", m, err)
	}
	want("a pick past due: thawed nothing, due set to b's release", true, strconv.Itoa(t0+100))
	setClock(t0 + 100)
	if m, err := p.Pick(ctx); err != nil || m != "b" {
		t.Fatalf("pick at +100: %q %v, want b (count 0, back)", m, err)
	}
	want("b back", false, "")
}
