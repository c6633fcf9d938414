package live

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// CheckSoak refuses a soak Soak would refuse, naming the argument and its
// range (ErrConfig): the load above 0 and at most MaxLoad, the interval
// MinSoakEvery to MaxSoakEvery, the duration d SoakIntervals intervals to
// MaxSoak, the mode one of Modes.
func CheckSoak(mode string, load float64, d, interval time.Duration) error {
	switch {
	case !(load > 0 && load <= MaxLoad): // and not NaN
		return fmt.Errorf("%w: soak load %v × capacity: want above 0 and at most %d", ErrConfig, load, MaxLoad)
	case interval < MinSoakEvery || interval > MaxSoakEvery:
		return fmt.Errorf("%w: soak interval %v: want %v to %v", ErrConfig, interval, MinSoakEvery, MaxSoakEvery)
	case d < SoakIntervals*interval || d > MaxSoak:
		return fmt.Errorf("%w: soak duration %v: want %v (%d × the interval) to %v, for three samples under load",
			ErrConfig, d, SoakIntervals*interval, SoakIntervals, MaxSoak)
	case !slices.Contains(Modes, mode):
		return fmt.Errorf("%w: soak mode %q: want one of %s", ErrConfig, mode, strings.Join(Modes, ", "))
	}
	return nil
}

// ErrStopped is returned by Soak when its context ends early.
var ErrStopped = errors.New("live: stopped")

// SoakSample is the process's state at one moment of a soak.
type SoakSample struct {
	At         time.Duration `json:"at_ns"`
	HeapInuse  uint64        `json:"heap_inuse"`
	Goroutines int           `json:"goroutines"`
	Good       int           `json:"good"`
	Rejected   int           `json:"rejected"`
}

// Soak runs a long overload at load × capacity through a mode's protection
// in the server process, sampling the server's heap (after a GC) and
// goroutines every interval, and a last time once the load has stopped and
// drained. It shows whether memory and goroutines stay flat. Its arguments
// are CheckSoak's.
func Soak(ctx context.Context, exe, mode string, load float64, d, interval time.Duration, progress func(SoakSample)) ([]SoakSample, error) {
	if err := CheckSoak(mode, load, d, interval); err != nil {
		return nil, err
	}
	work := 5 * time.Millisecond
	srv, err := startChild(ctx, exe, work)
	if err != nil {
		return nil, err
	}
	defer srv.stop()
	defer pinSelf()()
	client := newLoadClient()
	defer client.CloseIdleConnections()
	p50, _ := noLoad(ctx, client, srv.url+"/none", 100)
	capa := capacity(ctx, client, srv.url+"/none", 4, time.Second)
	if err := srv.setMode(ctx, client, mode, p50); err != nil {
		return nil, err
	}

	var good, rejected atomic.Int64
	sample := func(at time.Duration) (SoakSample, error) {
		req, _ := http.NewRequestWithContext(ctx, "GET", srv.url+"/stats", nil)
		res, err := client.Do(req)
		if err != nil {
			return SoakSample{}, fmt.Errorf("live: reading the server's stats: %w", err)
		}
		defer res.Body.Close()
		var st SoakSample
		if err := json.NewDecoder(res.Body).Decode(&st); err != nil {
			return SoakSample{}, fmt.Errorf("live: reading the server's stats: %w", err)
		}
		st.At, st.Good, st.Rejected = at, int(good.Load()), int(rejected.Load())
		if progress != nil {
			progress(st)
		}
		return st, nil
	}
	first, err := sample(0)
	if err != nil {
		return nil, err
	}
	samples := []SoakSample{first}
	var wg sync.WaitGroup
	start := time.Now()
	next := interval
	ticker := time.NewTicker(time.Millisecond)
	defer ticker.Stop()
	owed := 0.0
	last := time.Duration(0)
	for now := time.Since(start); now < d; now = time.Since(start) {
		if ctx.Err() != nil {
			wg.Wait()
			return samples, ErrStopped
		}
		owed += load * capa * (now - last).Seconds()
		last = now
		for ; owed >= 1; owed-- {
			wg.Go(func() {
				switch status, _ := call(ctx, client, srv.url+"/work", 20*work); status {
				case http.StatusOK:
					good.Add(1)
				case http.StatusServiceUnavailable:
					rejected.Add(1)
				}
			})
		}
		if now >= next {
			st, err := sample(now)
			if err != nil {
				wg.Wait()
				return samples, err
			}
			samples = append(samples, st)
			next += interval
		}
		<-ticker.C
	}
	wg.Wait()
	client.CloseIdleConnections()
	time.Sleep(200 * time.Millisecond) // the server sees its connections close
	st, err := sample(time.Since(start))
	if err != nil {
		return samples, err
	}
	return append(samples, st), nil
}

// Flat reports whether a soak's samples stayed flat: the heap at the end
// of the load within slack of its median during the load, and the
// goroutines back to where they started, give or take a few.
func Flat(samples []SoakSample, slack uint64) error {
	if len(samples) < 5 {
		return fmt.Errorf("live: %d soak samples, want at least 5: one before the load, three under it, one after", len(samples))
	}
	during := samples[1 : len(samples)-1]
	heaps := make([]uint64, len(during))
	for i, s := range during {
		heaps[i] = s.HeapInuse
	}
	slices.Sort(heaps)
	median := heaps[len(heaps)/2]
	last := samples[len(samples)-2]
	if last.HeapInuse > median+slack {
		return fmt.Errorf("live: heap grew to %d bytes at the end of the load, median %d", last.HeapInuse, median)
	}
	first, end := samples[0], samples[len(samples)-1]
	if end.Goroutines > first.Goroutines+5 {
		return fmt.Errorf("live: %d goroutines after the load, %d before", end.Goroutines, first.Goroutines)
	}
	return nil
}
