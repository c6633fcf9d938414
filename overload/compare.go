package overload

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"

	"github.com/afloat/afloat/bulkhead"
)

// Runs returns the configurations a comparison runs from base, which
// carries the profile, the seed, the server and the clients, and the
// limits to compare: Inside and Outside, 0 for the profile's.
//
// For most profiles it is the seed's experiment: no limit; Inside/Outside;
// the same with a queue five and ten times as long (with the defaults,
// 100/100, 100/500 and 100/1000, the seed's three); and the adaptive limit,
// starting at ten times Inside with a queue of Outside and the clients'
// deadlines. For the database scenario it is the seed's three servers: the
// asynchronous one with no limit, the synchronous one behind its thread
// pool, and the asynchronous one behind a bulkhead of Inside/Outside.
func Runs(base Config) ([]Config, error) {
	p, err := LookupProfile(base.Profile)
	if err != nil {
		return nil, err
	}
	if base.Threads > 0 || base.Adaptive {
		return nil, fmt.Errorf("%w: a comparison chooses the protections itself: leave threads and adaptive out", ErrConfig)
	}
	if base.Inside == 0 {
		base.Inside = p.Inside
	}
	if base.Outside == 0 {
		base.Outside = p.Outside
	}
	if err := base.Validate(); err != nil {
		return nil, err
	}
	with := func(inside, outside, threads int, adaptive bool) Config {
		c := base
		c.Inside, c.Outside, c.Threads, c.Adaptive = inside, outside, threads, adaptive
		return c
	}
	if p.Threads > 0 {
		return []Config{
			with(0, 0, 0, false),
			with(0, 0, p.Threads, false),
			with(base.Inside, base.Outside, 0, false),
		}, nil
	}
	in, out := base.Inside, base.Outside
	return []Config{
		with(0, 0, 0, false),
		with(in, out, 0, false),
		with(in, min(5*out, bulkhead.MaxQueue), 0, false),
		with(in, min(10*out, bulkhead.MaxQueue), 0, false),
		with(min(10*in, bulkhead.MaxLimit), out, 0, true),
	}, nil
}

// NonLinearAlpha is the non-linear server the lab sets beside the seed's
// linear one (Config.Alpha): with twice the knee in work it keeps two
// thirds of its capacity.
const NonLinearAlpha = 0.5

// Variants returns the runs that put afloat's hypothesis for the seed's
// "sudden server death" to the test, beside the comparison of base. The
// article shows a server that never recovers once the load is back to
// normal, on a model it calls linear, and names no mechanism; a linear
// server that keeps working at full capacity works off any backlog once
// the load is below capacity. afloat's hypothesis is the clients: they give
// up and try again, so that the server receives more than the demand. The
// variants are base's day with no limit and clients that never try again,
// on the linear server (it recovers) and on the non-linear one (base's
// Alpha, or NonLinearAlpha if that is 0), which dies without retries.
//
// It is nil, with no error, for a profile without a peak or whose clients
// never try again: there the question does not arise.
func Variants(base Config) ([]Config, error) {
	p, err := LookupProfile(base.Profile)
	if err != nil {
		return nil, err
	}
	if base.Threads > 0 || base.Adaptive {
		return nil, fmt.Errorf("%w: the variants choose the protections themselves: leave threads and adaptive out", ErrConfig)
	}
	if p.PeakEnd == 0 || p.Retries == 0 {
		return nil, nil
	}
	linear := base
	linear.Inside, linear.Outside, linear.Retries, linear.Alpha = 0, 0, NoRetries, 0
	nonLinear := linear
	nonLinear.Alpha = base.Alpha
	if nonLinear.Alpha == 0 {
		nonLinear.Alpha = NonLinearAlpha
	}
	for _, c := range []Config{linear, nonLinear} {
		if err := c.Validate(); err != nil {
			return nil, err
		}
	}
	return []Config{linear, nonLinear}, nil
}

// Compare runs the comparison of Runs(base).
func Compare(base Config) ([]Result, error) {
	return CompareContext(context.Background(), base)
}

// CompareContext is Compare that stops early, with ctx's error, once ctx
// is done.
func CompareContext(ctx context.Context, base Config) ([]Result, error) {
	runs, err := Runs(base)
	if err != nil {
		return nil, err
	}
	return runAll(ctx, runs, "comparison")
}

// VariantsContext runs the variants of Variants(base), side by side; nil
// where there are none. It stops early, with ctx's error, once ctx is
// done.
func VariantsContext(ctx context.Context, base Config) ([]Result, error) {
	runs, err := Variants(base)
	if err != nil || len(runs) == 0 {
		return nil, err
	}
	return runAll(ctx, runs, "variants")
}

// runAll runs configurations side by side and returns their results in
// order, or the first real failure.
func runAll(ctx context.Context, runs []Config, what string) ([]Result, error) {
	// The runs share nothing, so they run side by side, each a pure
	// function of its config — but no more at once than there are CPUs:
	// more would not finish sooner, and each holds tens of megabytes.
	out := make([]Result, len(runs))
	errs := make([]error, len(runs))
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	sem := make(chan struct{}, runtime.GOMAXPROCS(0))
	var wg sync.WaitGroup
	for i, c := range runs {
		wg.Go(func() {
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				errs[i] = ctx.Err()
				return
			}
			defer func() { <-sem }()
			if out[i], errs[i] = RunContext(ctx, c); errs[i] != nil {
				cancel() // the others' answers are of no use without this one
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		for _, e := range errs {
			if e != nil && !errors.Is(e, context.Canceled) {
				return nil, e // the first real failure; the others were stopped for it
			}
		}
		return nil, fmt.Errorf("overload: %s stopped: %w", what, context.Cause(ctx))
	}
	return out, nil
}
