package web

import (
	"context"
	"errors"
	"sync"
	"time"
)

// flights runs costly computations the way the console's protections
// want them (docs/api.md, "Protections"): one computation per key however
// many ask (the askers share it), at most max keys computing at once
// (beyond that errBusy: 503 + Retry-After), each cancelled as soon as the
// last request waiting for it has gone, and bounded by timeout. The last
// kept results are answered at once. It is safe for concurrent use.
type flights[T any] struct {
	max     int
	kept    int
	timeout time.Duration

	mu        sync.Mutex
	calls     map[string]*flight[T]
	done      map[string]T
	order     []string // keys of done, oldest first
	computing int
	started   int // computations started, for tests
}

type flight[T any] struct {
	done    chan struct{}
	val     T
	err     error
	cancel  context.CancelFunc
	waiters int
}

// errBusy: as many computations as allowed are running; try again soon.
var errBusy = errors.New("web: busy")

func newFlights[T any](max, kept int, timeout time.Duration) *flights[T] {
	return &flights[T]{max: max, kept: kept, timeout: timeout, calls: map[string]*flight[T]{}, done: map[string]T{}}
}

// do returns the value of key: kept, being computed (it waits for it), or
// computed now by fn (if there is room). It returns ctx's error if the
// caller's context ends first; the computation goes on only while someone
// waits for it.
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
		f = &flight[T]{done: make(chan struct{}), cancel: cancel}
		g.calls[key] = f
		g.computing++
		g.started++
		go g.run(cctx, key, f, fn)
	}
	f.waiters++
	g.mu.Unlock()

	select {
	case <-f.done:
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
	if f.waiters == 0 {
		f.cancel() // nobody waits: stop it, and let the next ask start afresh
		if g.calls[key] == f {
			delete(g.calls, key)
		}
	}
	return zero, ctx.Err()
}

func (g *flights[T]) run(ctx context.Context, key string, f *flight[T], fn func(context.Context) (T, error)) {
	v, err := fn(ctx)
	g.mu.Lock()
	defer g.mu.Unlock()
	f.cancel()
	g.computing--
	f.val, f.err = v, err
	if g.calls[key] == f {
		delete(g.calls, key)
	}
	if err == nil && g.kept > 0 {
		g.done[key] = v
		g.order = append(g.order, key)
		if len(g.order) > g.kept {
			delete(g.done, g.order[0])
			g.order = g.order[1:]
		}
	}
	close(f.done)
}
