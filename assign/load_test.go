package assign

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func members(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("proxy-%03d", i)
	}
	return out
}

// spread returns max−min and the sum of the active members' counts.
func spread(t *testing.T, p *Pool) (int64, int64) {
	t.Helper()
	ms, err := p.list(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	lo, hi, sum := int64(1<<62), int64(-1), int64(0)
	for _, m := range ms {
		if !m.Active {
			continue
		}
		lo, hi, sum = min(lo, m.Count), max(hi, m.Count), sum+m.Count
	}
	return hi - lo, sum
}

// The fairness test: 50 goroutines × 2,000 picks on 100 members leave
// max−min ≤ 1, and the counts add up to the picks. Under -short (make
// test, where it runs under the race detector beside the other groups)
// each goroutine picks 200 times: the property is the same at any count,
// and 100,000 instrumented picks took a minute on a busy machine; make
// test-long runs the full count.
func TestFiftyWorkersStayLevel(t *testing.T) {
	_, c := newClient(t)
	ctx := ctxFor(t)
	p := newPool(t, c, "level")
	if _, err := p.Add(ctx, 0, members(100)...); err != nil {
		t.Fatal(err)
	}
	workers, each := 50, 2000
	if testing.Short() {
		each = 200
	}
	var wg sync.WaitGroup
	var failed atomic.Int64
	for range workers {
		wg.Go(func() {
			for range each {
				if _, err := p.Pick(ctx); err != nil {
					failed.Add(1)
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	d, sum := spread(t, p)
	if d > 1 || sum != int64(workers*each) || failed.Load() > 0 {
		t.Fatalf("after %d picks: max−min %d (want ≤ 1), sum %d, %d failed", workers*each, d, sum, failed.Load())
	}
}

// outcomes counts what the workers of a load saw.
type outcomes struct {
	ok, ambiguous, unsent atomic.Int64
	mu                    sync.Mutex
	other                 []error
}

func (o *outcomes) record(err error) {
	switch {
	case err == nil:
		o.ok.Add(1)
	case errors.Is(err, ErrAmbiguous):
		o.ambiguous.Add(1)
	default:
		o.unsent.Add(1)
		o.mu.Lock()
		if len(o.other) < 10 {
			o.other = append(o.other, err)
		}
		o.mu.Unlock()
	}
}

// load runs workers that pick (batch 0: Pick; else PickBatch(batch))
// until stop is closed, and then each until it has had after more
// successes, so that the load goes on past the disturbance.
func load(ctx context.Context, p *Pool, workers, batch int, stop <-chan struct{}, after int, o *outcomes) *sync.WaitGroup {
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			okAfter := 0
			stopped := false
			for okAfter < after && ctx.Err() == nil {
				if !stopped {
					select {
					case <-stop:
						stopped = true
					default:
					}
				}
				if batch == 0 {
					_, err := p.Pick(ctx)
					o.record(err)
					if stopped && err == nil {
						okAfter++
					}
					continue
				}
				res, err := p.PickBatch(ctx, batch)
				if err != nil {
					o.record(err)
					continue
				}
				for _, r := range res {
					o.record(r.Err)
					if stopped && r.Err == nil {
						okAfter++
					}
				}
			}
		})
	}
	return &wg
}

// waitFor waits until cond holds: for the load to be under way, not to
// measure time.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("timed out waiting for the load")
		}
		time.Sleep(time.Millisecond)
	}
}

// SCRIPT FLUSH in the middle of a load: every pick still succeeds (the
// fallback resends each refused one, and only those), and the server's
// total is exactly the successes.
func TestScriptFlushUnderLoad(t *testing.T) {
	every := int64(2000) // picks between flushes; make test (-short) a fifth
	if testing.Short() {
		every = 400
	}
	for _, batch := range []int{0, 16} {
		t.Run("batch="+strconv.Itoa(batch), func(t *testing.T) {
			srv, c := newClient(t)
			ctx := ctxFor(t)
			p := newPool(t, c, "flush")
			if _, err := p.Add(ctx, 0, members(20)...); err != nil {
				t.Fatal(err)
			}
			var o outcomes
			stop := make(chan struct{})
			wg := load(ctx, p, 20, batch, stop, 200, &o)
			for i := range 5 {
				waitFor(t, func() bool { return o.ok.Load() >= every*int64(i+1) })
				srv.MustDo("SCRIPT", "FLUSH")
			}
			close(stop)
			wg.Wait()
			if o.ambiguous.Load() > 0 || o.unsent.Load() > 0 {
				t.Fatalf("%d ambiguous, %d failed picks across SCRIPT FLUSH: %v", o.ambiguous.Load(), o.unsent.Load(), o.other)
			}
			d, sum := spread(t, p)
			if sum != o.ok.Load() || d > 1 {
				t.Fatalf("server total %d, successes %d, max−min %d", sum, o.ok.Load(), d)
			}
			if p.ScriptReloads() == 0 {
				t.Fatal("no script reload: the flushes did not reach the load")
			}
			t.Logf("%d picks, %d reloads", sum, p.ScriptReloads())
		})
	}
}

// A Redis restart (SHUTDOWN SAVE, start again: the data survive, the
// script cache does not) in the middle of a load: no successful pick is
// lost, picks fail only while the server is down (nothing sent, or an
// ambiguous outcome for those in flight), and after it every pick the
// fallback can save succeeds.
func TestRestartUnderLoad(t *testing.T) {
	before, after := int64(3000), int64(500) // picks before the restart and after it; make test (-short) a fifth
	if testing.Short() {
		before, after = 600, 100
	}
	for _, batch := range []int{0, 16} {
		t.Run("batch="+strconv.Itoa(batch), func(t *testing.T) {
			srv, c := newClient(t)
			ctx := ctxFor(t)
			p := newPool(t, c, "restart")
			if _, err := p.Add(ctx, 0, members(20)...); err != nil {
				t.Fatal(err)
			}
			var o outcomes
			stop := make(chan struct{})
			wg := load(ctx, p, 20, batch, stop, 500, &o)
			waitFor(t, func() bool { return o.ok.Load() >= before })
			srv.Restart()
			// Calls that were failing as the server came back may still
			// record their failure: count from when picks succeed again.
			back := o.ok.Load()
			waitFor(t, func() bool { return o.ok.Load() >= back+after })
			beforeReloads := p.ScriptReloads()
			failedBy := o.ambiguous.Load() + o.unsent.Load()
			close(stop)
			wg.Wait()
			if got := o.ambiguous.Load() + o.unsent.Load(); got != failedBy {
				t.Errorf("%d picks failed after the server was back (the fallback should have saved them): %v", got-failedBy, o.other)
			}
			_, sum := spread(t, p)
			ok, amb := o.ok.Load(), o.ambiguous.Load()
			if sum < ok || sum > ok+amb {
				t.Fatalf("server total %d, want successes %d ≤ total ≤ successes + ambiguous %d", sum, ok, ok+amb)
			}
			if beforeReloads == 0 {
				t.Fatal("no script reload after the restart")
			}
			for _, err := range o.other {
				if !errors.Is(err, ErrAmbiguous) && !isUnsent(err) {
					t.Errorf("an error that is neither ambiguous nor a refused dial: %v", err)
				}
			}
			t.Logf("%d ok, %d ambiguous, %d not sent while down; server total %d; %d reloads", ok, amb, o.unsent.Load(), sum, p.ScriptReloads())
		})
	}
}

func isUnsent(err error) bool {
	return err != nil && !errors.Is(err, ErrAmbiguous) && errContains(err, "nothing sent")
}

func errContains(err error, s string) bool {
	return err != nil && len(err.Error()) >= len(s) && contains(err.Error(), s)
}

func contains(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}

// Client connections killed in the middle of a load (CLIENT KILL of every
// client connection, five times), on this package's rueidis client and on
// a user's go-redis client with retries off (FromGoRedis). Without request
// ids the server's total lies between the successes the clients saw and
// those plus the ambiguous errors they got — nothing is counted that
// nobody saw except an ambiguous one, since retries are off. With request
// ids, retrying each ambiguous pick with its id until it gets an answer
// makes the total exactly the number of distinct ids.
func TestKilledConnections(t *testing.T) {
	every := int64(1500) // picks between kills; make test (-short) a fifth
	if testing.Short() {
		every = 300
	}
	for _, client := range []string{"rueidis", "goredis"} {
		for _, withIDs := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/ids=%v", client, withIDs), func(t *testing.T) { killedConnections(t, client, withIDs, every) })
		}
	}
}

func killedConnections(t *testing.T, client string, withIDs bool, every int64) {
	srv, c := newClient(t)
	ctx := ctxFor(t)
	cc := wrap(t, c)
	if client == "goredis" {
		rdb := goRedis(t, srv)
		var err error
		if cc, err = FromGoRedis(rdb); err != nil {
			t.Fatal(err)
		}
	}
	p, err := New(cc, "kill")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Add(ctx, 0, members(20)...); err != nil {
		t.Fatal(err)
	}
	var o outcomes
	var distinct, retries atomic.Int64
	var done atomic.Bool
	var wg sync.WaitGroup
	for w := range 20 {
		wg.Go(func() {
			for i := 0; !done.Load(); i++ {
				if !withIDs {
					_, err := p.Pick(ctx)
					o.record(err)
					continue
				}
				id := fmt.Sprintf("w%d-%d", w, i)
				first := ""
				for {
					m, err := p.PickID(ctx, id)
					if err == nil {
						if first != "" && m != first {
							t.Errorf("id %s: %s, then %s", id, first, m)
						}
						o.record(nil)
						distinct.Add(1)
						break
					}
					if !errors.Is(err, ErrAmbiguous) && !isUnsent(err) {
						t.Errorf("id %s: %v", id, err)
						return
					}
					retries.Add(1)
				}
			}
		})
	}
	// Five kills, and more until one reaches a pick in flight: go-redis,
	// a connection per goroutine, may have none in flight when the server
	// kills its connections, and then notices only on the next use, before
	// it sends anything.
	reached := func() bool { return o.ambiguous.Load() > 0 || retries.Load() > 0 }
	for i := 0; i < 5 || !reached() && i < 100; i++ {
		next := o.ok.Load() + every
		if i >= 5 {
			next = o.ok.Load() + every/5
		}
		waitFor(t, func() bool { return o.ok.Load() >= next })
		srv.MustDo("CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes")
	}
	last := o.ok.Load() + every
	waitFor(t, func() bool { return o.ok.Load() >= last })
	done.Store(true)
	wg.Wait()
	_, sum := spread(t, p)
	ok, amb := o.ok.Load(), o.ambiguous.Load()
	if withIDs {
		if sum != distinct.Load() {
			t.Fatalf("server total %d, distinct ids %d (%d retries)", sum, distinct.Load(), retries.Load())
		}
		if retries.Load() == 0 {
			t.Fatal("no pick was retried: the kills did not reach the load")
		}
		t.Logf("%d distinct ids, server total %d, %d retries after a lost connection", distinct.Load(), sum, retries.Load())
		return
	}
	if amb == 0 {
		t.Fatal("no ambiguous outcome: the kills did not reach the load")
	}
	if sum < ok || sum > ok+amb {
		t.Fatalf("server total %d, want successes %d ≤ total ≤ successes + ambiguous %d", sum, ok, ok+amb)
	}
	t.Logf("%d successes + %d ambiguous = %d; server total %d (%d of the ambiguous ran)", ok, amb, ok+amb, sum, sum-ok)
}

// mixedLoad is the pool's newer operations under one load: weighted
// picks (PickID and PickBatchIDs), cooldowns and failures with a
// retry-after (RecordFailureID), every call sent again after ErrAmbiguous
// or a refused dial until it answers — with its request id where the
// operation has one, and a cooldown, which keeps the later of two times,
// as it is. What the callers saw is kept to check the server against.
type mixedLoad struct {
	p       *Pool
	retries atomic.Int64 // calls sent again after a lost connection
	ops     atomic.Int64 // calls answered

	// epoch counts the cooldowns seen to take effect; cooledAt[m] is the
	// epoch at which m was first seen cooling, so that a pick sent after
	// then must not get m (the cooldowns are an hour: none ends during
	// the test).
	epoch    atomic.Int64
	mu       sync.Mutex
	cooledAt map[string]int64
	until    map[string]time.Time // the latest release time a caller saw
	picked   map[string]int64     // picks each member got, by distinct id
	failed   map[string]int64     // failures recorded, by distinct id
}

// mixedPool has ten members for picks, of weights 1 to 3, and ten that
// the load cools down (by hand and by failures) and that picks get until
// then.
func mixedPool(t *testing.T, p *Pool) []string {
	t.Helper()
	ctx := ctxFor(t)
	var cool []string
	for i := range 10 {
		if _, err := p.AddWeighted(ctx, 1+i%3, 0, fmt.Sprintf("pick-%02d", i)); err != nil {
			t.Fatal(err)
		}
		cool = append(cool, fmt.Sprintf("cool-%02d", i))
	}
	if _, err := p.Add(ctx, 0, cool...); err != nil {
		t.Fatal(err)
	}
	return cool
}

// retry sends call until it answers, counting the sends that a lost
// connection or a server down refused; any other error fails the test.
func (l *mixedLoad) retry(t *testing.T, what string, call func() error) bool {
	for {
		err := call()
		if err == nil {
			l.ops.Add(1)
			return true
		}
		if !errors.Is(err, ErrAmbiguous) && !isUnsent(err) {
			t.Errorf("%s: %v", what, err)
			return false
		}
		l.retries.Add(1)
	}
}

func (l *mixedLoad) cooled(m string, until time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.cooledAt[m]; !ok {
		l.cooledAt[m] = l.epoch.Add(1)
	}
	if until.After(l.until[m]) {
		l.until[m] = until
	}
}

// sawPick checks a pick sent at epoch e against the cooldowns seen by
// then, and counts it.
func (l *mixedLoad) sawPick(t *testing.T, id, m string, e int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if at, ok := l.cooledAt[m]; ok && at <= e {
		t.Errorf("pick %s got %s, seen cooling for an hour before the pick was sent", id, m)
	}
	l.picked[m]++
}

// run starts the workers: 8 that pick one at a time, 4 in batches of 4, 2
// that cool members down and 2 that record failures with a retry-after,
// until done.
func (l *mixedLoad) run(t *testing.T, ctx context.Context, cool []string, done *atomic.Bool) *sync.WaitGroup {
	var wg sync.WaitGroup
	for w := range 16 {
		wg.Go(func() {
			for i := 0; !done.Load() && ctx.Err() == nil; i++ {
				id := fmt.Sprintf("w%d-%d", w, i)
				switch {
				case w < 8:
					e := l.epoch.Load()
					var m string
					if l.retry(t, "pick "+id, func() (err error) { m, err = l.p.PickID(ctx, id); return err }) {
						l.sawPick(t, id, m, e)
					}
				case w < 12:
					e := l.epoch.Load()
					ids := []string{id + "a", id + "b", id + "c", id + "d"}
					first := map[string]string{}
					for len(ids) > 0 {
						rs, err := l.p.PickBatchIDs(ctx, ids)
						if err != nil {
							t.Errorf("batch %s: %v", id, err)
							return
						}
						var again []string
						for j, r := range rs {
							switch {
							case r.Err == nil:
								first[ids[j]] = r.Member
							case errors.Is(r.Err, ErrAmbiguous) || isUnsent(r.Err):
								again = append(again, ids[j])
							default:
								t.Errorf("batch pick %s: %v", ids[j], r.Err)
								return
							}
						}
						if len(again) > 0 {
							l.retries.Add(int64(len(again)))
						}
						ids = again
					}
					l.ops.Add(1)
					for pid, m := range first {
						l.sawPick(t, pid, m, e)
					}
				case w < 14:
					m := cool[i%len(cool)]
					var until []time.Time
					if l.retry(t, "cooldown "+m, func() (err error) { until, err = l.p.CooldownFor(ctx, time.Hour, m); return err }) {
						l.cooled(m, until[0])
					}
				default:
					m := cool[(i+5)%len(cool)]
					var o FailureOutcome
					if l.retry(t, "failure "+id, func() (err error) { o, err = l.p.RecordFailureID(ctx, id, m, time.Hour); return err }) {
						if o.CoolingUntil.IsZero() || !o.Member {
							t.Errorf("failure %s on %s: %+v, want it cooling", id, m, o)
						}
						l.cooled(m, o.CoolingUntil)
						l.mu.Lock()
						l.failed[m]++
						l.mu.Unlock()
					}
				}
			}
		})
	}
	return &wg
}

// The pool's newer operations across each fault — SCRIPT FLUSH, a
// restart, lost connections — under one load: weighted picks, cooldowns
// and failures with a retry-after, every call sent again with its request
// id until it answers. Afterwards each member's count is exactly the
// distinct picks the callers saw it get and its failures (and streak)
// exactly the distinct failures recorded through it: nothing counted
// twice, nothing lost; every member seen cooling is cooling still, until
// at least the latest time a caller was told; and no pick sent after a
// member was seen cooling got it.
func TestNewerOperationsAcrossFaults(t *testing.T) {
	every := int64(800) // operations between faults; make test (-short) a fourth
	if testing.Short() {
		every = 200
	}
	for _, fault := range []string{"script-flush", "restart", "client-kill"} {
		t.Run(fault, func(t *testing.T) {
			srv, c := newClient(t)
			ctx := ctxFor(t)
			p := newPool(t, c, "mixed-"+fault)
			cool := mixedPool(t, p)
			l := &mixedLoad{p: p, cooledAt: map[string]int64{}, until: map[string]time.Time{},
				picked: map[string]int64{}, failed: map[string]int64{}}
			var done atomic.Bool
			wg := l.run(t, ctx, cool, &done)
			rounds := 3
			if fault == "restart" {
				rounds = 1
			}
			// A kill reaches the load only if a call is in flight: on a
			// busy machine every worker can be between calls, three kills
			// running (make test saw it once). Kill again until one does,
			// up to 50 kills.
			for i := 0; i < rounds || fault == "client-kill" && l.retries.Load() == 0 && i < 50; i++ {
				waitFor(t, func() bool { return l.ops.Load() >= every*int64(i+1) })
				switch fault {
				case "script-flush":
					srv.MustDo("SCRIPT", "FLUSH")
				case "restart":
					srv.Restart()
				case "client-kill":
					srv.MustDo("CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes")
				}
			}
			after := l.ops.Load()
			waitFor(t, func() bool { return l.ops.Load() >= after+every })
			done.Store(true)
			wg.Wait()
			if t.Failed() {
				return
			}
			st, err := p.Status(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range st.Members {
				if m.Count != l.picked[m.Name] {
					t.Errorf("%s: count %d on the server, %d distinct picks seen", m.Name, m.Count, l.picked[m.Name])
				}
				if m.Failures != l.failed[m.Name] || m.Streak != l.failed[m.Name] {
					t.Errorf("%s: %d failures and a streak of %d on the server, %d distinct failures recorded", m.Name, m.Failures, m.Streak, l.failed[m.Name])
				}
				if want, ok := l.until[m.Name]; ok && m.CoolingUntil.Before(want) {
					t.Errorf("%s: cooling until %v on the server, a caller was told %v: a cooldown lost", m.Name, m.CoolingUntil, want)
				}
				if w := 1 + int(m.Name[len(m.Name)-1]-'0')%3; strings.HasPrefix(m.Name, "pick-") && m.Weight != w {
					t.Errorf("%s: weight %d, want %d", m.Name, m.Weight, w)
				}
			}
			switch {
			case fault == "script-flush" && l.retries.Load() > 0:
				t.Errorf("%d calls failed across SCRIPT FLUSH (the fallback should resend them)", l.retries.Load())
			case fault == "script-flush" && p.ScriptReloads() == 0:
				t.Error("no script reload: the flushes did not reach the load")
			case fault != "script-flush" && l.retries.Load() == 0:
				t.Errorf("no call was sent again: the %s did not reach the load", fault)
			}
			t.Logf("%d calls answered, %d sent again, %d script reloads; %d members seen cooling", l.ops.Load(), l.retries.Load(), p.ScriptReloads(), len(l.until))
		})
	}
}
