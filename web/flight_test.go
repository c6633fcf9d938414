package web

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// stubborn is a computation that ignores its context until hold is
// closed, as the expert did within a round of its search; it sends the
// context it was given on seen.
func stubborn(hold <-chan struct{}, seen chan<- context.Context) func(context.Context) (int, error) {
	return func(ctx context.Context) (int, error) {
		seen <- ctx
		<-hold
		return 0, errors.New("late")
	}
}

func quick(context.Context) (int, error) { return 7, nil }

// TestFlightsFreeTheSlotWhenTheWaitersGo: when the last request waiting
// for a computation goes, its context is cancelled and its slot is free at
// once, even while the computation has not yet returned (before, the slot
// was held until it returned: two abandoned experts blocked every coach).
func TestFlightsFreeTheSlotWhenTheWaitersGo(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newFlights[int](1, 4, time.Minute)
		hold := make(chan struct{})
		release := sync.OnceFunc(func() { close(hold) })
		defer release() // the stubborn computation ends before the bubble does
		seenc := make(chan context.Context, 1)
		ctx1, leave1 := context.WithCancel(context.Background())
		ctx2, leave2 := context.WithCancel(context.Background())
		errs := make(chan error, 2)
		for _, ctx := range []context.Context{ctx1, ctx2} {
			go func() {
				_, err := g.do(ctx, "a", stubborn(hold, seenc))
				errs <- err
			}()
		}
		seen := <-seenc
		synctest.Wait() // both askers wait
		if _, err := g.do(context.Background(), "b", quick); !errors.Is(err, errBusy) {
			t.Fatalf("another key while one computes: %v, want errBusy", err)
		}
		leave1()
		if err := <-errs; !errors.Is(err, context.Canceled) {
			t.Errorf("the first asker that left got %v", err)
		}
		if _, err := g.do(context.Background(), "b", quick); !errors.Is(err, errBusy) {
			t.Errorf("with one asker still waiting: %v, want errBusy", err)
		}
		if seen.Err() != nil {
			t.Errorf("the computation was cancelled while someone waited: %v", seen.Err())
		}
		leave2()
		if err := <-errs; !errors.Is(err, context.Canceled) {
			t.Errorf("the last asker that left got %v", err)
		}
		if seen.Err() != context.Canceled {
			t.Errorf("the abandoned computation's context: %v, want context.Canceled", seen.Err())
		}
		if v, err := g.do(context.Background(), "b", quick); v != 7 || err != nil {
			t.Errorf("after the last asker left, another key: %v %v; want 7: the slot is free while the abandoned one winds down", v, err)
		}
		release()
		synctest.Wait()
		g.mu.Lock()
		defer g.mu.Unlock()
		if g.computing != 0 {
			t.Errorf("%d slots held once every computation returned", g.computing)
		}
	})
}

// TestFlightsBoundHolds: a computation that runs past its bound is
// answered errTooLong at the bound, even if it does not stop, and its
// slot is free (before, the asker waited until it returned: 56 s for a
// 30 s bound).
func TestFlightsBoundHolds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newFlights[int](1, 4, 30*time.Second)
		hold := make(chan struct{})
		defer close(hold) // the stubborn computation ends before the bubble does
		seenc := make(chan context.Context, 1)
		ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
		defer cancel()
		start := time.Now()
		_, err := g.do(ctx, "a", stubborn(hold, seenc))
		seen := <-seenc
		if !errors.Is(err, errTooLong) || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("a computation past its bound: %v, want errTooLong", err)
		}
		if d := time.Since(start); d != 30*time.Second {
			t.Errorf("answered after %v of virtual time, want the bound, 30s", d)
		}
		if seen.Err() != context.DeadlineExceeded {
			t.Errorf("the computation's context: %v, want its deadline", seen.Err())
		}
		if v, err := g.do(context.Background(), "b", quick); v != 7 || err != nil {
			t.Errorf("after the bound, another key: %v %v; want 7", v, err)
		}
	})
}

// TestExpertPastItsBoundIsAnswered: over HTTP, an expert's search that
// runs past its bound (half the write timeout) is answered with a 503
// that says so, before the write timeout, never an empty reply. The run
// is the longest there is (10,080 minutes: a minute of search or more),
// the bound 1 s.
func TestExpertPastItsBoundIsAnswered(t *testing.T) {
	c := DefaultConfig()
	c.WriteTimeout = 2 * time.Second
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, ln, c) }()
	defer func() {
		stop()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	}()
	req, _ := http.NewRequest("POST", "http://"+ln.Addr().String()+"/api/bot",
		strings.NewReader(`{"scenario": "cache-flush", "seed": 7, "minutes": 10080, "bot": "hindsight"}`))
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("the expert past its bound: %v (an empty reply?)", err)
	}
	defer res.Body.Close()
	var body struct{ Error string }
	if err := json.NewDecoder(res.Body).Decode(&body); err != nil || res.StatusCode != 503 || !strings.Contains(body.Error, "ran past its bound") {
		t.Fatalf("the expert past its bound: %d %q %v; want 503 saying it ran past its bound", res.StatusCode, body.Error, err)
	}
	if res.Header.Get("Retry-After") != "" {
		t.Errorf("Retry-After %q: asking again would run past the bound again", res.Header.Get("Retry-After"))
	}
}
