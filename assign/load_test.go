package assign

import (
	"context"
	"errors"
	"fmt"
	"strconv"
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
	ms, err := p.List(context.Background())
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
				waitFor(t, func() bool { return o.ok.Load() >= int64(2000*(i+1)) })
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
			waitFor(t, func() bool { return o.ok.Load() >= 3000 })
			srv.Restart()
			// Calls that were failing as the server came back may still
			// record their failure: count from when picks succeed again.
			back := o.ok.Load()
			waitFor(t, func() bool { return o.ok.Load() >= back+500 })
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
// client connection, five times). Without request ids the server's total
// lies between the successes the clients saw and those plus the ambiguous
// errors they got — nothing is counted that nobody saw except an ambiguous
// one, since retries are off. With request ids, retrying each ambiguous
// pick with its id until it gets an answer makes the total exactly the
// number of distinct ids.
func TestKilledConnections(t *testing.T) {
	for _, withIDs := range []bool{false, true} {
		t.Run(fmt.Sprintf("ids=%v", withIDs), func(t *testing.T) {
			srv, c := newClient(t)
			ctx := ctxFor(t)
			p := newPool(t, c, "kill")
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
			for i := range 5 {
				waitFor(t, func() bool { return o.ok.Load() >= int64(1500*(i+1)) })
				srv.MustDo("CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes")
			}
			waitFor(t, func() bool { return o.ok.Load() >= 9000 })
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
		})
	}
}
