package web

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// flights runs costly computations the way the console's protections
// want them (docs/api.md, "Protections"): one computation per key however
// many ask (the askers share it), at most max keys computing at once
// (beyond that errBusy: 503 + Retry-After), each cancelled as soon as the
// last request waiting for it has gone, and bounded by timeout. The last
// kept results are answered at once. It is safe for concurrent use.
//
// A computation holds its slot until it returns or its context ends,
// whichever comes first: when the last request waiting for it goes, or its
// time is up, the slot is free at once, without waiting for fn to notice
// (fn is expected to stop soon after its context ends; the expert's search
// looks before every replay). The waiters of a computation whose time is
// up get errTooLong at that moment.
type flights[T any] struct {
	max     int
	kept    int
	timeout time.Duration

	mu        sync.Mutex
	calls     map[string]*flight[T]
	done      map[string]T
	order     []string // keys of done, oldest first
	computing int      // slots held
	started   int      // computations started, for tests
}

type flight[T any] struct {
	done     chan struct{}   // closed when fn has returned, with val and err
	ctx      context.Context // fn's: ends at the deadline, or when the last waiter goes
	val      T
	err      error
	cancel   context.CancelFunc
	waiters  int
	released bool // its slot is free again
}

var (
	// errBusy: as many computations as allowed are running; try again soon.
	errBusy = errors.New("web: busy")
	// errTooLong: a computation ran past its bound and was stopped.
	errTooLong = errors.New("web: computation stopped at its time bound")
)

func newFlights[T any](max, kept int, timeout time.Duration) *flights[T] {
	return &flights[T]{max: max, kept: kept, timeout: timeout, calls: map[string]*flight[T]{}, done: map[string]T{}}
}

// do returns the value of key: kept, being computed (it waits for it), or
// computed now by fn (if there is room). It returns ctx's error if the
// caller's context ends first, and errTooLong (wrapping
// context.DeadlineExceeded) if the computation's time is up first; the
// computation goes on only while someone waits for it.
func (g *flights[T]) do(ctx context.Context, key string, fn func(context.Context) (T, error)) (T, error) {
	var zero T
	g.mu.Lock()
	if v, ok := g.done[key]; ok {
		g.mu.Unlock()
		return v, nil
	}
	f, ok := g.calls[key]
	if !ok {
		if g.computing >= g.max {
			g.mu.Unlock()
			return zero, errBusy
		}
		cctx, cancel := context.WithTimeout(context.Background(), g.timeout)
		f = &flight[T]{done: make(chan struct{}), ctx: cctx, cancel: cancel}
		g.calls[key] = f
		g.computing++
		g.started++
		go g.run(key, f, fn)
	}
	f.waiters++
	g.mu.Unlock()

	select {
	case <-f.done:
	case <-f.ctx.Done(): // its time is up (nobody else cancels it while we wait)
	case <-ctx.Done():
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	f.waiters--
	select {
	case <-f.done:
		return f.val, f.err
	default:
	}
	if f.ctx.Err() != nil {
		g.release(key, f)
		return zero, fmt.Errorf("%w: it ran past %v (%w)", errTooLong, g.timeout, context.DeadlineExceeded)
	}
	if f.waiters == 0 {
		f.cancel() // nobody waits: stop it, and let the next ask start afresh
		g.release(key, f)
	}
	return zero, ctx.Err()
}

// release frees f's slot and forgets it as key's computation, once. g.mu
// is held.
func (g *flights[T]) release(key string, f *flight[T]) {
	if f.released {
		return
	}
	f.released = true
	g.computing--
	if g.calls[key] == f {
		delete(g.calls, key)
	}
}

func (g *flights[T]) run(key string, f *flight[T], fn func(context.Context) (T, error)) {
	v, err := fn(f.ctx)
	g.mu.Lock()
	defer g.mu.Unlock()
	f.cancel()
	g.release(key, f)
	f.val, f.err = v, err
	if _, had := g.done[key]; err == nil && g.kept > 0 && !had {
		g.done[key] = v
		g.order = append(g.order, key)
		if len(g.order) > g.kept {
			delete(g.done, g.order[0])
			g.order = g.order[1:]
		}
	}
	close(f.done)
}
