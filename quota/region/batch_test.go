package region_test

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"sort"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/afloat/afloat/quota"
	"github.com/afloat/afloat/quota/coordinator"
	"github.com/afloat/afloat/quota/region"
)

// recorder passes calls to a coordinator and notes what a region sends:
// each call's size, when it was sent and with what deadline, how many
// were under way at once, and how many goroutines the process had.
type recorder struct {
	region.Coordinator
	start time.Time

	mu         sync.Mutex
	inFlight   int
	most       int // calls under way at once, at most
	goroutines int // at most, seen at a call's start
	calls      []recorded
}

type recorded struct {
	at, end  time.Duration // since start
	n        int
	renew    bool
	patience time.Duration // the ctx's deadline less at; 0 for none
	tenants  []string
}

func (r *recorder) note(ctx context.Context, renew bool, tenants []string) func() {
	now := time.Now()
	c := recorded{at: now.Sub(r.start), n: len(tenants), renew: renew, tenants: tenants}
	if dl, ok := ctx.Deadline(); ok {
		c.patience = dl.Sub(now)
	}
	g := runtime.NumGoroutine()
	r.mu.Lock()
	k := len(r.calls)
	r.calls = append(r.calls, c)
	r.inFlight++
	r.most = max(r.most, r.inFlight)
	r.goroutines = max(r.goroutines, g)
	r.mu.Unlock()
	return func() {
		r.mu.Lock()
		r.inFlight--
		r.calls[k].end = time.Since(r.start)
		r.mu.Unlock()
	}
}

func (r *recorder) RenewBatch(ctx context.Context, reqs []quota.Request) ([]quota.Result, error) {
	tenants := make([]string, len(reqs))
	for i, q := range reqs {
		tenants[i] = q.Tenant
	}
	defer r.note(ctx, true, tenants)()
	return r.Coordinator.RenewBatch(ctx, reqs)
}

func (r *recorder) ReturnBatch(ctx context.Context, rets []quota.Return) ([]error, error) {
	tenants := make([]string, len(rets))
	for i, q := range rets {
		tenants[i] = q.Tenant
	}
	defer r.note(ctx, false, tenants)()
	return r.Coordinator.ReturnBatch(ctx, rets)
}

func (r *recorder) snapshot() []recorded {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]recorded(nil), r.calls...)
}

// manyTenants serves n tenants in region eu from a coordinator in memory;
// stop ends it and waits for it.
func manyTenants(t *testing.T, n int) (names []string, srv *coordinator.Server, stop func()) {
	t.Helper()
	tenants := make([]quota.Tenant, n)
	names = make([]string, n)
	for i := range tenants {
		names[i] = fmt.Sprintf("t%05d", i)
		tenants[i] = quota.Tenant{Name: names[i], Rate: 100 * quota.One, Burst: 100 * quota.One, Regions: []string{"eu"}}
	}
	ctx, cancel := context.WithCancel(context.Background())
	srv, err := coordinator.NewServer(ctx, coordinator.Config{Tenants: tenants}, coordinator.NewMemLedger())
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Go(func() { srv.Run(ctx) })
	return names, srv, func() { cancel(); wg.Wait() }
}

// TestRunRenewsPerRegion: a region of 10,000 tenants renews them through
// a handful of calls per tick — every call at most the batch size, at
// most the in-flight bound under way at once, each with a deadline —
// with goroutines that do not grow with the tenants; every tenant is
// leased within the first second (an in-memory coordinator answers at
// once), and the renewals after the start are spread: no 50 ms tick
// carries more than 4 % of the tenants (a fortieth, 2.5 %, on average
// over the spread). At shutdown every lease goes
// back, in batches. Virtual time (synctest): 30 s of renewals.
func TestRunRenewsPerRegion(t *testing.T) {
	const n = 10_000
	goroutines := map[int]int{}
	for _, tenants := range []int{100, n} {
		synctest.Test(t, func(t *testing.T) {
			names, srv, stop := manyTenants(t, tenants)
			defer stop()
			synctest.Wait()
			base := runtime.NumGoroutine()
			rec := &recorder{Coordinator: srv, start: time.Now()}
			var leasedAt time.Duration
			l, err := region.New(region.DefaultConfig("eu", names...))
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			var wg sync.WaitGroup
			wg.Go(func() { l.Run(ctx, rec) })
			for range 100 {
				time.Sleep(10 * time.Millisecond)
				synctest.Wait()
				if ls := l.Leases(l.Now(), 0); ls.Leased == tenants {
					leasedAt = time.Since(rec.start)
					break
				}
			}
			if leasedAt == 0 {
				t.Fatalf("%d tenants: %d leased after a second", tenants, l.Leases(l.Now(), 0).Leased)
			}
			time.Sleep(30 * time.Second)
			synctest.Wait()
			if ls := l.Leases(l.Now(), 0); ls.Leased != tenants {
				t.Fatalf("%d tenants: %d leased after 30 s", tenants, ls.Leased)
			}
			cancel()
			wg.Wait()
			if live := len(srv.LiveIDs()); live != 0 {
				t.Errorf("%d tenants: %d leases still count after the region shut down, want every one given back", tenants, live)
			}
			calls := rec.snapshot()
			goroutines[tenants] = rec.goroutines - base
			st := l.RunStats()
			t.Logf("%d tenants: all leased at %v; %d renewal calls, %d return calls, at most %d under way, %d goroutines above the coordinator's; %+v",
				tenants, leasedAt, st.Batches, st.ReturnBatches, rec.most, rec.goroutines-base, st)
			if rec.most > region.DefaultInFlight {
				t.Errorf("%d tenants: %d calls under way at once, want at most %d", tenants, rec.most, region.DefaultInFlight)
			}
			perTick := map[time.Duration]int{}
			var renewals int
			for i, c := range calls {
				if c.n > region.DefaultBatchSize || c.n == 0 {
					t.Fatalf("%d tenants: call %d carried %d, want 1 to %d", tenants, i, c.n, region.DefaultBatchSize)
				}
				if c.patience <= 0 {
					t.Fatalf("%d tenants: call %d at %v has no deadline", tenants, i, c.at)
				}
				if c.renew {
					perTick[c.at.Truncate(50*time.Millisecond)] += c.n
					renewals += c.n
				}
			}
			if int64(renewals) != st.Renewals || st.RenewFailures != 0 {
				t.Errorf("%d tenants: %d renewals sent, %d answered, %d failed; want all answered", tenants, renewals, st.Renewals, st.RenewFailures)
			}
			// About six renewals a tenant in 30 s of 10 s leases: the first,
			// then one every 5 s on average.
			if min, max := tenants*6, tenants*8; renewals < min || renewals > max {
				t.Errorf("%d tenants: %d renewals in 30 s, want %d to %d", tenants, renewals, min, max)
			}
			if tenants < n {
				return
			}
			var ticks []time.Duration
			for at := range perTick {
				ticks = append(ticks, at)
			}
			sort.Slice(ticks, func(i, j int) bool { return ticks[i] < ticks[j] })
			var most int
			var mostAt time.Duration
			callsPerTick := map[time.Duration]int{}
			for _, c := range calls {
				callsPerTick[c.at.Truncate(50*time.Millisecond)]++
			}
			var mostCalls int
			for _, at := range ticks {
				mostCalls = max(mostCalls, callsPerTick[at])
				if at < time.Second {
					continue // the start: every tenant at once, paced by the bound
				}
				if perTick[at] > most {
					most, mostAt = perTick[at], at
				}
			}
			t.Logf("after the start, at most %d renewals in a 50 ms tick (at %v), %d calls in a tick at most", most, mostAt, mostCalls)
			if most > n*4/100 {
				t.Errorf("%d renewals in the tick at %v, want at most 4 %% of %d: renewals not spread", most, mostAt, n)
			}
			if mostCalls > 8 {
				t.Errorf("%d calls in one tick, want a handful", mostCalls)
			}
		})
	}
	if goroutines[n] > goroutines[100]+region.DefaultInFlight {
		t.Errorf("goroutines above the coordinator's: %d with 100 tenants, %d with %d: want no more than the in-flight bound between them",
			goroutines[100], goroutines[n], n)
	}
}

// flaky answers through a coordinator, but fails calls as a whole as
// fail says: the error for call k (from 0, renewals and returns
// counted together), nil to answer, or errHang to answer nothing until
// the call's deadline.
type flaky struct {
	region.Coordinator
	fail func(k int) error

	mu sync.Mutex
	k  int
}

var errHang = fmt.Errorf("hang")

func (f *flaky) next(ctx context.Context) error {
	f.mu.Lock()
	k := f.k
	f.k++
	f.mu.Unlock()
	err := f.fail(k)
	if err == errHang {
		<-ctx.Done()
		return fmt.Errorf("flaky: %w", ctx.Err())
	}
	return err
}

func (f *flaky) RenewBatch(ctx context.Context, reqs []quota.Request) ([]quota.Result, error) {
	if err := f.next(ctx); err != nil {
		return nil, err
	}
	return f.Coordinator.RenewBatch(ctx, reqs)
}

func (f *flaky) ReturnBatch(ctx context.Context, rets []quota.Return) ([]error, error) {
	if err := f.next(ctx); err != nil {
		return nil, err
	}
	return f.Coordinator.ReturnBatch(ctx, rets)
}

// TestBusyBacksOffTheRegion: a coordinator that sheds load refuses the
// region's first calls with a wait of 3 s; the whole region sends
// nothing for those 3 s — though its tenants have no lease and the retry
// interval is 0.5 s — says so (RunStats), and then leases every tenant,
// those of the refused calls among the first. Virtual time (synctest).
func TestBusyBacksOffTheRegion(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		names, srv, stop := manyTenants(t, 3000)
		defer stop()
		busy := &quota.BusyError{Wait: 3 * time.Second, Why: "bulkhead full"}
		f := &flaky{Coordinator: srv, fail: func(k int) error {
			if k < 2 {
				return busy
			}
			return nil
		}}
		rec := &recorder{Coordinator: f, start: time.Now()}
		l, done := runRegion(t, region.DefaultConfig("eu", names...), rec)
		defer done()
		time.Sleep(time.Second)
		synctest.Wait()
		st := l.RunStats()
		if st.BatchesBusy != 2 || st.RenewFailures != int64(len(names)) || st.Backoff < 1900*time.Millisecond || st.Backoff > 2*time.Second {
			t.Fatalf("a second after two busy refusals: %d busy, %d renewals failed, backoff %v; want 2, %d, 2 s left",
				st.BatchesBusy, st.RenewFailures, st.Backoff, len(names))
		}
		time.Sleep(3 * time.Second)
		synctest.Wait()
		calls := rec.snapshot()
		refused := map[string]bool{}
		for _, c := range calls[:2] {
			for _, tn := range c.tenants {
				refused[tn] = true
			}
		}
		again := 0
		for i, c := range calls[2:] {
			if c.at < calls[1].end+busy.Wait {
				t.Fatalf("call %d at %v, %v after a busy refusal that asked for %v", i+2, c.at, c.at-calls[1].end, busy.Wait)
			}
			for _, tn := range c.tenants {
				if refused[tn] {
					again++
				}
			}
		}
		if again != len(refused) {
			t.Errorf("%d of the %d tenants refused asked again after the wait", again, len(refused))
		}
		if ls := l.Leases(l.Now(), 0); ls.Leased != len(names) {
			t.Errorf("%d of %d leased a second after the wait", ls.Leased, len(names))
		}
		if st := l.RunStats(); st.Backoff != 0 || st.Renewals != int64(len(names)) {
			t.Errorf("after the wait: backoff %v, %d renewals; want none, %d", st.Backoff, st.Renewals, len(names))
		}
	})
}

// TestBusyNeedWaitsLonger: a coordinator whose writes queued ahead would
// land after a call's deadline refuses it busy and says how long a call
// needs (quota.BusyError.Need); the region's next call waits that long —
// past MaxRetry, as no timeout would make it — but no longer than
// MaxPatience, and once answers come quickly its patience comes back.
// Virtual time (synctest).
func TestBusyNeedWaitsLonger(t *testing.T) {
	for _, tc := range []struct {
		need, want time.Duration
	}{
		{need: 5 * time.Second, want: 5 * time.Second},
		{need: 40 * time.Second, want: 10 * time.Second}, // MaxPatience
	} {
		t.Run(tc.need.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				names, srv, stop := manyTenants(t, 50)
				defer stop()
				busy := &quota.BusyError{Wait: time.Second, Why: "the writes queued ahead", Need: tc.need}
				f := &flaky{Coordinator: srv, fail: func(k int) error {
					if k == 0 {
						return busy
					}
					return nil
				}}
				rec := &recorder{Coordinator: f, start: time.Now()}
				cfg := region.DefaultConfig("eu", names...)
				cfg.MaxRetry = 2 * time.Second
				l, done := runRegion(t, cfg, rec)
				defer done()
				time.Sleep(3 * time.Second)
				synctest.Wait()
				calls := rec.snapshot()
				// The first call, of first leases, waits four retry
				// intervals at least (TestFirstLeasesWaitForTheirWrites).
				if len(calls) < 2 || calls[0].patience != 4*cfg.Retry || calls[1].patience != tc.want {
					t.Fatalf("calls %+v: want the first with a deadline %v after it was sent, the next %v", calls, 4*cfg.Retry, tc.want)
				}
				time.Sleep(30 * time.Second)
				synctest.Wait()
				if st := l.RunStats(); st.Patience != cfg.Retry {
					t.Errorf("patience %v after answers came at once: want %v", st.Patience, cfg.Retry)
				}
			})
		})
	}
}

// partlyBusy answers a call's requests from the coordinator, but the
// first call's first request it refuses busy, saying how long a call
// needs (as a coordinator whose writes queued ahead would land after the
// call's deadline refuses a renewal that needs a write).
type partlyBusy struct {
	region.Coordinator
	need time.Duration
	once sync.Once
}

func (p *partlyBusy) RenewBatch(ctx context.Context, reqs []quota.Request) ([]quota.Result, error) {
	res, err := p.Coordinator.RenewBatch(ctx, reqs)
	if err == nil {
		p.once.Do(func() {
			res[0] = quota.Result{Err: &quota.BusyError{Wait: 100 * time.Millisecond, Why: "the writes queued ahead", Need: p.need}}
		})
	}
	return res, err
}

// TestBusyRequestsWaitLonger: a call of first leases answered with one
// of them refused busy, saying how long a call needs, makes the region's
// next calls wait that long, as a call refused whole does
// (TestBusyNeedWaitsLonger): asked again with the patience that failed,
// such a request would be refused every time. Virtual time (synctest).
func TestBusyRequestsWaitLonger(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		names, srv, stop := manyTenants(t, 50)
		defer stop()
		rec := &recorder{Coordinator: &partlyBusy{Coordinator: srv, need: 3 * time.Second}, start: time.Now()}
		cfg := region.DefaultConfig("eu", names...)
		cfg.MaxRetry = 2 * time.Second
		l, done := runRegion(t, cfg, rec)
		defer done()
		time.Sleep(3 * time.Second)
		synctest.Wait()
		calls := rec.snapshot()
		if len(calls) < 2 || calls[0].n != len(names) || calls[1].n != 1 || calls[1].patience != 3*time.Second {
			t.Fatalf("calls %+v: want the first of every tenant, the next of the one refused with a deadline 3s after it was sent", calls)
		}
		if got := l.Leases(l.Now(), 0).Leased; got != len(names) {
			t.Fatalf("%d of %d tenants leased", got, len(names))
		}
		time.Sleep(30 * time.Second)
		synctest.Wait()
		if st := l.RunStats(); st.Patience != cfg.Retry {
			t.Errorf("patience %v after answers came at once: want %v", st.Patience, cfg.Retry)
		}
	})
}

// TestTimeoutsBackOffAndWaitLonger: a coordinator that answers nothing
// times the region's calls out; each call's deadline is the region's
// patience, which doubles with each timeout (0.5, 1, 2, 4, 8 s, then no
// more: MaxRetry; for these calls of first leases never under 2 s), and the region waits before each next call at least half its
// backoff (the retry interval doubled per failure in a row); once the
// coordinator answers, every tenant is leased and the patience and the
// size of a call come back. The same backoff follows calls that fail unreachable
// (RunStats by reason). Virtual time (synctest).
func TestTimeoutsBackOffAndWaitLonger(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
	}{
		{"timeout", errHang},
		{"unavailable", fmt.Errorf("remote: %w", fmt.Errorf("no coordinator answered as the leader"))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				names, srv, stop := manyTenants(t, 50) // fewer than a call shrinks to: one call a round
				defer stop()
				const failing = 7
				f := &flaky{Coordinator: srv, fail: func(k int) error {
					if k < failing {
						return tc.err
					}
					return nil
				}}
				rec := &recorder{Coordinator: f, start: time.Now()}
				l, done := runRegion(t, region.DefaultConfig("eu", names...), rec)
				defer done()
				time.Sleep(2 * time.Minute)
				synctest.Wait()
				calls := rec.snapshot()
				for i, c := range calls[:failing+2] {
					t.Logf("call %d: %d %s at %v, ended %v, deadline %v after", i, c.n, map[bool]string{true: "renewals", false: "returns"}[c.renew], c.at, c.end, c.patience)
				}
				retry, most := 500*time.Millisecond, 8*time.Second
				for i := 1; i <= failing; i++ {
					c, prev := calls[i], calls[i-1]
					backoff := min(most, retry<<(i-1))
					if gap := c.at - prev.end; gap < backoff/2 || gap > backoff*3/2+60*time.Millisecond {
						t.Errorf("call %d at %v, %v after failure %d ended: want %v to %v (the backoff, jittered)",
							i, c.at, gap, i, backoff/2, backoff*3/2)
					}
					want := retry
					if tc.err == errHang {
						want = min(most, retry<<i) // doubled by each timeout, up to MaxRetry
					}
					// Calls of first leases, every one here: four retry
					// intervals at least (TestFirstLeasesWaitForTheirWrites).
					want = max(want, 4*retry)
					if i < len(calls) && calls[i].patience != want {
						t.Errorf("call %d's deadline %v after it was sent, want %v", i, calls[i].patience, want)
					}
				}
				st := l.RunStats()
				byReason := st.BatchesTimedOut
				if tc.err != errHang {
					byReason = st.BatchesUnavailable
				}
				if byReason != failing || st.BatchesBusy+st.BatchesTimedOut+st.BatchesUnavailable+st.BatchesHeld != failing {
					t.Errorf("%+v: want %d calls failed, all %s", st, failing, tc.name)
				}
				if ls := l.Leases(l.Now(), 0); ls.Leased != len(names) {
					t.Errorf("%d of %d leased once the coordinator answers", ls.Leased, len(names))
				}
				if st.Patience != retry || st.Backoff != 0 || st.BatchSize != region.DefaultBatchSize {
					t.Errorf("patience %v, backoff %v, calls of %d after answers came at once: want %v, none, %d",
						st.Patience, st.Backoff, st.BatchSize, retry, region.DefaultBatchSize)
				}
			})
		})
	}
}

// TestFirstLeasesWaitForTheirWrites: a call of first leases — each a
// write at the coordinator — waits four retry intervals (2 s) at least,
// not the renewals' 500 ms: a coordinator that takes 1.5 s to write a
// region's first leases leases them all in the first call, with no call
// timed out. (At 500 ms such calls timed out and were sent again, each
// time after writes that counted against their tenants: a region's
// restart at 20,000 tenants took 24 s to lease them all, 11 s with
// this.) Virtual time (synctest).
func TestFirstLeasesWaitForTheirWrites(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		names, srv, stop := manyTenants(t, 50)
		defer stop()
		slow := &slowFirst{Coordinator: srv, delay: 1500 * time.Millisecond}
		l, done := runRegion(t, region.DefaultConfig("eu", names...), slow)
		defer done()
		time.Sleep(2 * time.Second)
		synctest.Wait()
		st := l.RunStats()
		if ls := l.Leases(l.Now(), 0); ls.Leased != len(names) || st.BatchesTimedOut != 0 {
			t.Errorf("%d of %d leased 2 s in, %d calls timed out: want every tenant, none", ls.Leased, len(names), st.BatchesTimedOut)
		}
	})
}

// slowFirst answers a call of first leases (no request holds a lease)
// after delay, unless its caller gives up first.
type slowFirst struct {
	region.Coordinator
	delay time.Duration
}

func (s *slowFirst) RenewBatch(ctx context.Context, reqs []quota.Request) ([]quota.Result, error) {
	if !slices.ContainsFunc(reqs, func(r quota.Request) bool { return r.Holding != 0 }) {
		select {
		case <-time.After(s.delay):
		case <-ctx.Done():
			return nil, fmt.Errorf("slow: %w", ctx.Err())
		}
	}
	return s.Coordinator.RenewBatch(ctx, reqs)
}

// TestTimeoutsShrinkTheCall: a coordinator too slow to answer a whole
// call within the patience times it out; the region halves what a call
// carries with each timeout (down to 64), so that calls get through even
// when no whole batch would within MaxRetry, and doubles it again as
// answers come back within half the patience. Virtual time (synctest).
func TestTimeoutsShrinkTheCall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		names, srv, stop := manyTenants(t, 3000)
		defer stop()
		f := &flaky{Coordinator: srv, fail: func(k int) error {
			if k < 4 {
				return errHang
			}
			return nil
		}}
		rec := &recorder{Coordinator: f, start: time.Now()}
		l, done := runRegion(t, region.DefaultConfig("eu", names...), rec)
		defer done()
		time.Sleep(30 * time.Second)
		synctest.Wait()
		// Two calls a round (the in-flight bound), sent at one instant:
		// 2048 and 952; after their two timeouts, 512 and 512; after those,
		// 128 and 128 — answered, and growing again.
		var rounds [][]int
		var at []time.Duration
		for _, c := range rec.snapshot() {
			if len(at) == 0 || c.at != at[len(at)-1] {
				rounds, at = append(rounds, nil), append(at, c.at)
			}
			rounds[len(rounds)-1] = append(rounds[len(rounds)-1], c.n)
		}
		for i := range rounds {
			sort.Ints(rounds[i])
		}
		if len(rounds) < 4 || fmt.Sprint(rounds[:2]) != "[[952 2048] [512 512]]" || fmt.Sprint(rounds[2][:2]) != "[128 128]" {
			t.Errorf("calls by the instant they were sent: %v at %v, want [952 2048], [512 512], then from 128 and 128 on", rounds, at)
		}
		if st := l.RunStats(); st.BatchSize != region.DefaultBatchSize || st.BatchesTimedOut != 4 {
			t.Errorf("%d timed out, calls of %d after answers came at once: want 4, %d", st.BatchesTimedOut, st.BatchSize, region.DefaultBatchSize)
		}
		if ls := l.Leases(l.Now(), 0); ls.Leased != len(names) {
			t.Errorf("%d of %d leased", ls.Leased, len(names))
		}
	})
}

// refusing answers every renewal with err, one by one.
type refusing struct {
	region.Coordinator
	err error
}

func (c refusing) RenewBatch(ctx context.Context, reqs []quota.Request) ([]quota.Result, error) {
	res := make([]quota.Result, len(reqs))
	for i := range res {
		res[i].Err = c.err
	}
	return res, nil
}

// TestAllRefusedIsACallFailure: a call whose every renewal the
// coordinator refused for its own reasons (not written, dropped past the
// deadline) failed as a whole, in effect: the region backs off as a
// whole (RunStats.BatchesUnavailable), and its tenants ask again when it
// does, not each after its own doubling interval. One refused for its
// tenant's reason (unknown tenant) is the tenant's: it waits its own
// retry interval, and the region does not back off.
func TestAllRefusedIsACallFailure(t *testing.T) {
	for _, tc := range []struct {
		err         error
		tenants     bool // a refusal for the tenant's reason
		least, most int  // calls sent in 10 s
	}{
		// The region's backoff, 0.5, 1, 2, 4, 8 s (±50 %): 4 to 6 calls.
		{fmt.Errorf("coordinator: not confirmed written"), false, 4, 6},
		// The tenant's own retry interval, doubled from 0.5 s: at 0, 0.5,
		// 1.5, 3.5 and 7.5 s.
		{fmt.Errorf("nobody: %w", quota.ErrUnknownTenant), true, 5, 5},
	} {
		synctest.Test(t, func(t *testing.T) {
			rec := &recorder{Coordinator: refusing{err: tc.err}, start: time.Now()}
			l, done := runRegion(t, region.DefaultConfig("eu", "acme"), rec)
			defer done()
			time.Sleep(10 * time.Second)
			synctest.Wait()
			calls := rec.snapshot()
			st := l.RunStats()
			t.Logf("%v: %d calls, %+v", tc.err, len(calls), st)
			wholes := st.BatchesUnavailable + st.BatchesTimedOut
			if !tc.tenants && (wholes != int64(len(calls)) || st.RefusedOther != 0) {
				t.Errorf("%v: %d calls, %d failed as a whole, %d refused one by one: want every call failed as a whole", tc.err, len(calls), wholes, st.RefusedOther)
			}
			if tc.tenants && (wholes != 0 || st.RefusedUnknown != int64(len(calls))) {
				t.Errorf("%v: %d calls, %d failed as a whole, %d refused as unknown: want each refused for its tenant", tc.err, len(calls), wholes, st.RefusedUnknown)
			}
			if len(calls) < tc.least || len(calls) > tc.most {
				t.Errorf("%v: %d calls in 10 s, want %d to %d", tc.err, len(calls), tc.least, tc.most)
			}
		})
	}
}

// gated answers every renewal call that asks for a first lease (a
// request that holds none) only after delay — a first lease always
// costs the coordinator a write — and the others after renewing (0 by
// default); it notes how many of each kind every call carried.
type gated struct {
	region.Coordinator
	delay, renewing time.Duration
	busyOnce        bool // the next call's first request is refused busy

	mu    sync.Mutex
	calls [][2]int // renewals, first leases
}

func (g *gated) RenewBatch(ctx context.Context, reqs []quota.Request) ([]quota.Result, error) {
	var kinds [2]int
	for _, q := range reqs {
		if q.Holding == 0 {
			kinds[1]++
		} else {
			kinds[0]++
		}
	}
	g.mu.Lock()
	g.calls = append(g.calls, kinds)
	delay := g.renewing
	if kinds[1] > 0 {
		delay = g.delay
	}
	busy := g.busyOnce
	g.busyOnce = false
	g.mu.Unlock()
	time.Sleep(delay)
	if busy {
		res, err := g.Coordinator.RenewBatch(ctx, reqs[1:])
		if err != nil {
			return nil, err
		}
		return append([]quota.Result{{Err: &quota.BusyError{Why: "a test's"}}}, res...), nil
	}
	return g.Coordinator.RenewBatch(ctx, reqs)
}

// fortyHeld runs a region of 40 of 50 tenants (batches of 10, patience
// 12 s) against a gated coordinator — the next call's first request
// refused busy if busyOnce — and gives the names and the 10 not served
// yet. stop ends the region's Run and the coordinator. Inside a synctest
// bubble.
func fortyHeld(t *testing.T, busyOnce bool) (l *region.Limiter, cfg region.Config, names, added []string, g *gated, stop func()) {
	t.Helper()
	names, srv, stopSrv := manyTenants(t, 50)
	held := names[:40]
	added = names[40:]
	cfg = region.DefaultConfig("eu", held...)
	cfg.BatchSize, cfg.Spread, cfg.Retry, cfg.MaxRetry = 10, -1, 12*time.Second, 12*time.Second // patience 12 s
	l, err := region.New(cfg)
	if err != nil {
		stopSrv()
		t.Fatal(err)
	}
	g = &gated{Coordinator: srv, busyOnce: busyOnce}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { l.Run(ctx, g) })
	return l, cfg, names, added, g, func() { cancel(); wg.Wait(); stopSrv() }
}

// TestFirstLeasesNotStarved: renewals that take the coordinator 10 s
// hold both of the region's places for calls; tenants added meanwhile
// still get their first leases at once, in the one call more that first
// leases may have beside them. Virtual time (synctest).
func TestFirstLeasesNotStarved(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l, cfg, names, added, g, stop := fortyHeld(t, false)
		defer stop()
		time.Sleep(time.Second) // the held leases, granted at once
		synctest.Wait()
		g.mu.Lock()
		g.renewing = 10 * time.Second
		g.mu.Unlock()
		time.Sleep(5 * time.Second) // renewals due at half a lease: two calls, 10 s each
		synctest.Wait()
		if st := l.RunStats(); st.InFlight != int64(cfg.InFlight) {
			t.Fatalf("%d calls under way at 6 s, want the %d renewals'", st.InFlight, cfg.InFlight)
		}
		if _, _, err := l.SetTenants(l.Now(), names); err != nil {
			t.Fatal(err)
		}
		time.Sleep(500 * time.Millisecond)
		synctest.Wait()
		for _, name := range added {
			if !l.Status(l.Now(), name).Valid {
				t.Fatalf("%s, added while renewals held every place, has no lease half a second later", name)
			}
		}
		if st := l.RunStats(); st.InFlight != int64(cfg.InFlight) {
			t.Fatalf("%d calls under way once the first leases were answered, want the %d renewals'", st.InFlight, cfg.InFlight)
		}
	})
}

// TestFirstLeasesWaitWhileStrained: as TestFirstLeasesNotStarved, but
// the coordinator refused a request busy a second before: the one call
// more is withheld while the coordinator may still be short of writes
// (MaxPatience, 12 s here) — a call of first leases would take writes
// from renewals — and made once that has passed. Virtual time (synctest).
func TestFirstLeasesWaitWhileStrained(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l, cfg, names, added, g, stop := fortyHeld(t, true)
		defer stop()
		time.Sleep(time.Second) // the held leases, granted at once, but one refused busy
		synctest.Wait()
		g.mu.Lock()
		g.renewing = 10 * time.Second
		g.mu.Unlock()
		time.Sleep(5 * time.Second)
		synctest.Wait()
		if st := l.RunStats(); st.InFlight != int64(cfg.InFlight) || st.RefusedBusy != 1 {
			t.Fatalf("%d calls under way at 6 s and %d requests refused busy, want the %d renewals' and 1", st.InFlight, st.RefusedBusy, cfg.InFlight)
		}
		if _, _, err := l.SetTenants(l.Now(), names); err != nil {
			t.Fatal(err)
		}
		time.Sleep(500 * time.Millisecond)
		synctest.Wait()
		for _, name := range added {
			if l.Status(l.Now(), name).Valid {
				t.Fatalf("%s has a lease half a second after it was added: a call beyond InFlight while the coordinator is strained", name)
			}
		}
		time.Sleep(7 * time.Second) // past 12 s since the refusal
		synctest.Wait()
		for _, name := range added {
			if !l.Status(l.Now(), name).Valid {
				t.Fatalf("%s has no lease 13.5 s in: the call more was not made once the strain had passed", name)
			}
		}
	})
}

// TestRenewalsBeforeFirstLeases: 20 tenants hold leases and 100 have
// none, and the coordinator takes 3 s over each call of first leases
// (ten calls of ten, two at a time: 15 s). When the leases come due for
// renewal, halfway through, the region renews them before it asks for
// more first leases — keeping a lease costs the coordinator no write,
// getting one back after it lapsed does — and no call carries both
// kinds: every lease is kept while the first leases still come in.
// (Leasing first, the held leases lapsed at 10 s.) Virtual time
// (synctest).
func TestRenewalsBeforeFirstLeases(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		names, srv, stop := manyTenants(t, 120)
		defer stop()
		held := names[:20]
		cfg := region.DefaultConfig("eu", names...)
		cfg.BatchSize, cfg.Spread, cfg.Retry = 10, -1, 4*time.Second // patience 4 s
		l, err := region.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		// The held leases, granted before Run starts.
		reqs := make([]quota.Request, len(held))
		for i, name := range held {
			if reqs[i], err = l.Request(l.Now(), name); err != nil {
				t.Fatal(err)
			}
		}
		res, err := srv.RenewBatch(context.Background(), reqs)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range res {
			if r.Err != nil || !l.Install(l.Now(), r.Grant).OK() {
				t.Fatalf("installing %+v", r)
			}
		}
		g := &gated{Coordinator: srv, delay: 3 * time.Second}
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		defer wg.Wait()
		defer cancel()
		wg.Go(func() { l.Run(ctx, g) })
		for at := time.Second; at <= 14*time.Second; at += time.Second {
			time.Sleep(time.Second)
			synctest.Wait()
			valid := 0
			for _, name := range held {
				if l.Status(l.Now(), name).Valid {
					valid++
				}
			}
			if valid != len(held) {
				t.Fatalf("at %v, %d of the %d held leases valid while the first leases came in", at, valid, len(held))
			}
		}
		time.Sleep(10 * time.Second)
		synctest.Wait()
		g.mu.Lock()
		for i, k := range g.calls {
			if k[0] > 0 && k[1] > 0 {
				t.Errorf("call %d carries %d renewals and %d first leases: want one kind", i, k[0], k[1])
			}
		}
		g.mu.Unlock()
		if ls := l.Leases(l.Now(), 0); ls.Leased != len(names) {
			t.Errorf("%d of %d leased once the first leases came in", ls.Leased, len(names))
		}
	})
}

// TestElectionLapsesNoLease: the coordinators elect a new leader — for
// 3.5 s every call fails with no coordinator answering as the leader —
// while the region holds a lease for each of its tenants, renewed at
// half a 10 s lease (±10 %, Spread). The calls cost no coordinator any
// work, so the region's backoff does not run past its leases' ends: it
// asks again within half the time left to the soonest, and a call soon
// after the election renews them — not one tenant is without a lease at
// any moment, wherever the election falls among the renewals. (With the
// backoff doubled per failure alone, 0.5, 1, 2, 4 s, jittered, the
// leases due at the election's start lapsed: 41 of 50 leased.) Virtual
// time (synctest).
func TestElectionLapsesNoLease(t *testing.T) {
	for _, at := range []time.Duration{30 * time.Second, 31100 * time.Millisecond, 32700 * time.Millisecond} {
		t.Run(fmt.Sprint(at), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				names, srv, stop := manyTenants(t, 50)
				defer stop()
				start := time.Now()
				from, to := start.Add(at), start.Add(at+3500*time.Millisecond)
				noLeader := fmt.Errorf("remote: no coordinator answered as the leader: 503 Service Unavailable")
				f := &flaky{Coordinator: srv, fail: func(int) error {
					if now := time.Now(); !now.Before(from) && now.Before(to) {
						return noLeader
					}
					return nil
				}}
				l, done := runRegion(t, region.DefaultConfig("eu", names...), f)
				defer done()
				fewest, when := len(names), time.Duration(0)
				for time.Since(start) < at+20*time.Second {
					time.Sleep(50 * time.Millisecond)
					synctest.Wait()
					if time.Since(start) < 5*time.Second {
						continue // the first leases
					}
					if n := l.Leases(l.Now(), 0).Leased; n < fewest {
						fewest, when = n, time.Since(start)
					}
				}
				st := l.RunStats()
				if st.BatchesUnavailable == 0 {
					t.Fatalf("%+v: no call failed during the election", st)
				}
				if fewest < len(names) {
					t.Errorf("%d of %d tenants leased at %v (the election from %v for 3.5 s; %d calls failed): want every one, at every moment",
						fewest, len(names), when, at, st.BatchesUnavailable)
				}
			})
		})
	}
}

// runRegion starts a limiter of cfg running against c; done stops it and
// waits for Run to return.
func runRegion(t *testing.T, cfg region.Config, c region.Coordinator) (l *region.Limiter, done func()) {
	t.Helper()
	l, err := region.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { l.Run(ctx, c) })
	return l, func() {
		cancel()
		wg.Wait()
	}
}
