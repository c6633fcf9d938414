package scale

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
)

// Recovery is what a fault cost: whether, and how long after it began,
// every tenant held a valid lease in every region again.
type Recovery struct {
	Fault string `json:"fault"`
	// Detail says what was done to which process, and how long it took.
	Detail string `json:"detail"`
	// Lost says whether any poll from the fault's start on found a
	// tenant without a valid lease in some region (or an agent not
	// answering); Worst is the fewest pairs leased at one poll.
	Lost  bool     `json:"lost"`
	Worst Coverage `json:"worst"`
	// Last is the last poll that found a tenant without a valid lease:
	// what the recovery waited for at the end.
	Last Coverage `json:"last"`
	// Recovered says whether every tenant was leased in every region
	// again, and stayed so for the settle time, within the bound; Took
	// is from the fault's start until the last spell without (0 if
	// none was lost).
	Recovered bool          `json:"recovered"`
	Took      time.Duration `json:"took_ns"`
	// Bound is the cap the recovery was waited for.
	Bound time.Duration `json:"bound_ns"`
	// Err is what went wrong in the fault itself (a process that did not
	// start again), if anything.
	Err string `json:"error,omitempty"`
}

func (r Recovery) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s (%s): ", r.Fault, r.Detail)
	switch {
	case !r.Lost:
		b.WriteString("no tenant lost its lease")
	case r.Recovered:
		fmt.Fprintf(&b, "every tenant valid again after %v (worst: %v; the last poll without: %v)", r.Took.Round(10*time.Millisecond), r.Worst, r.Last)
	default:
		fmt.Fprintf(&b, "NOT RECOVERED within %v (worst: %v; last: %v)", r.Bound.Round(time.Second), r.Worst, r.Last)
	}
	if r.Err != "" {
		fmt.Fprintf(&b, "; error: %s", r.Err)
	}
	return b.String()
}

// Settle is how long every tenant must stay leased, after a fault has
// been dealt and after the last spell without, for the recovery to
// count: a lease and its skew margin and a second, so that leases
// granted before the fault have ended and what is valid was renewed
// after it.
func (c *Cluster) Settle() time.Duration { return c.cfg.Lease + 1500*time.Millisecond }

// Fault runs act — the fault — and polls the agents meanwhile and after,
// until every tenant has held a valid lease in every region for Settle
// since both the end of act and the last poll that found one without,
// or until bound has passed since the fault began. act returns what it
// did, for Recovery.Detail.
func (c *Cluster) Fault(ctx context.Context, name string, bound time.Duration, act func(context.Context) (string, error)) Recovery {
	r := Recovery{Fault: name, Bound: bound}
	t0 := time.Now()
	var (
		mu        sync.Mutex
		actDone   time.Time // zero while act runs
		detail    string
		actErr    error
		watchDone = make(chan struct{})
	)
	w := &watch{t0: t0, settle: c.Settle(), bound: bound, r: &r}
	go func() {
		defer close(watchDone)
		for {
			cv := c.Coverage(ctx)
			mu.Lock()
			done := actDone
			mu.Unlock()
			if w.observe(cv, done) || ctx.Err() != nil {
				return
			}
			select {
			case <-ctx.Done():
			case <-time.After(pollEvery):
			}
		}
	}()
	d, err := act(ctx)
	mu.Lock()
	actDone, detail, actErr = time.Now(), d, err
	mu.Unlock()
	<-watchDone
	r.Detail = detail
	if actErr != nil {
		r.Err = actErr.Error()
	}
	return r
}

// watch is Fault's judgement, apart from its polling: it takes the
// polls from the fault's start at t0 on, one at a time, and decides when
// the cluster has recovered or the bound has passed.
type watch struct {
	t0            time.Time
	settle, bound time.Duration
	r             *Recovery

	okSince time.Time // the first good poll after the last bad one (t0 before any bad one)
	polls   int
}

// observe takes a poll; actDone is when the fault's action ended (zero
// while it runs). It reports whether the recovery is decided, and then
// has filled in w.r.
func (w *watch) observe(cv Coverage, actDone time.Time) bool {
	if w.polls == 0 {
		w.okSince = w.t0
	}
	if w.polls == 0 || cv.Pairs() < w.r.Worst.Pairs() {
		w.r.Worst = cv
	}
	w.polls++
	good := cv.All()
	switch {
	case !good:
		w.r.Lost = true
		w.r.Last = cv
		w.okSince = time.Time{}
	case w.okSince.IsZero():
		w.okSince = cv.At
	}
	if good && !actDone.IsZero() && cv.At.Sub(later(w.okSince, actDone)) >= w.settle {
		w.r.Recovered = true
		if w.r.Lost {
			w.r.Took = w.okSince.Sub(w.t0)
		}
		return true
	}
	if cv.At.Sub(w.t0) >= w.bound {
		w.r.Recovered, w.r.Took = false, cv.At.Sub(w.t0)
		return true
	}
	return false
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// leaderBound is how long a fault waits for a coordinator to lead before
// it is dealt.
const leaderBound = 30 * time.Second

// KillLeader kills the leading coordinator (kill -9), times the
// recovery, and then starts the killed one again and waits until it
// serves (as a follower): the fault is one replica lost for as long as
// the recovery took.
func (c *Cluster) KillLeader(ctx context.Context, bound time.Duration) Recovery {
	k, err := c.Leader(ctx, leaderBound)
	if err != nil {
		return Recovery{Fault: "kill -9 of the leading coordinator", Bound: bound, Err: err.Error()}
	}
	r := c.Fault(ctx, "kill -9 of the leading coordinator", bound, func(context.Context) (string, error) {
		c.Coordinators[k].Kill()
		return c.Coordinators[k].Name + " killed", nil
	})
	if err := c.restartCoordinator(ctx, k); err != nil {
		r.Err = strings.TrimPrefix(r.Err+"; ", "; ") + err.Error()
	}
	return r
}

// restartCoordinator starts coordinator k again and waits until it serves.
func (c *Cluster) restartCoordinator(ctx context.Context, k int) error {
	if err := c.Coordinators[k].Start(); err != nil {
		return err
	}
	return c.waitServing(ctx, c.Coordinators[k:k+1], c.CoordinatorURLs[k:k+1], coordinatorStartBound)
}

// PauseLeader stops the leading coordinator with SIGSTOP for d, then
// lets it go on with SIGCONT, and times the recovery from the SIGSTOP.
func (c *Cluster) PauseLeader(ctx context.Context, d, bound time.Duration) Recovery {
	name := fmt.Sprintf("a %v SIGSTOP of the leading coordinator", d)
	k, err := c.Leader(ctx, leaderBound)
	if err != nil {
		return Recovery{Fault: name, Bound: bound, Err: err.Error()}
	}
	return c.Fault(ctx, name, bound, func(ctx context.Context) (string, error) {
		p := c.Coordinators[k]
		if err := p.Pause(); err != nil {
			return p.Name, err
		}
		select {
		case <-ctx.Done():
		case <-time.After(d):
		}
		return fmt.Sprintf("%s stopped, SIGCONT after %v", p.Name, d), p.Resume()
	})
}

// agentStopGrace is how long an agent is given to give its leases back
// and end after SIGTERM.
const agentStopGrace = 30 * time.Second

// RestartAgents stops every region agent at once (SIGTERM: each gives
// its leases back and detaches), then starts them all again, and times
// the recovery from the SIGTERM.
func (c *Cluster) RestartAgents(ctx context.Context, bound time.Duration) Recovery {
	return c.Fault(ctx, "all regions restarted at once", bound, func(ctx context.Context) (string, error) {
		began := time.Now()
		var errs []error
		var mu sync.Mutex
		var wg sync.WaitGroup
		for _, p := range c.Agents {
			wg.Go(func() {
				if err := p.Term(agentStopGrace); err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		stopped := time.Since(began)
		for _, p := range c.Agents {
			if err := p.Start(); err != nil {
				errs = append(errs, err)
			}
		}
		if err := c.waitServing(ctx, c.Agents, c.AgentURLs, agentStartBound); err != nil {
			errs = append(errs, err)
		}
		return fmt.Sprintf("SIGTERM to %d agents, all ended after %v, started again, serving %v later",
			len(c.Agents), stopped.Round(10*time.Millisecond), (time.Since(began) - stopped).Round(10*time.Millisecond)), errors.Join(errs...)
	})
}
