package overload

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/afloat/afloat/bulkhead"
	"github.com/afloat/afloat/internal/rng"
	"github.com/afloat/afloat/internal/vclock"
)

// ErrConfig is returned for a run that cannot be made.
var ErrConfig = errors.New("overload: invalid configuration")

// Config is one run of a profile.
type Config struct {
	Profile  string
	Inside   int  // the bulkhead's limit (the initial one if Adaptive); 0 for no bulkhead
	Outside  int  // the bulkhead's queue
	Adaptive bool // let the limit adapt, and give the bulkhead each client's deadline
	Seed     uint32
	// Alpha, Timeout and Duration override the profile's when set: Alpha
	// ≥ 0 (NaN for the profile's), Timeout and Duration > 0 seconds.
	Alpha    float64
	Timeout  float64
	Duration float64
}

// Label names a run the way the lab shows it: "no limit", "100/100",
// "adaptive".
func (c Config) Label() string {
	switch {
	case c.Inside == 0:
		return "no limit"
	case c.Adaptive:
		return "adaptive"
	default:
		return fmt.Sprintf("%d/%d", c.Inside, c.Outside)
	}
}

// Second is what one second (one period, in the games) of a run saw.
type Second struct {
	T           int     `json:"t"`
	Arrivals    int     `json:"arrivals"`
	Responses   int     `json:"responses"` // answered before the client gave up
	Timeouts    int     `json:"timeouts"`  // clients that gave up in this second
	Wasted      int     `json:"wasted"`    // finished after their client gave up
	Rejected    int     `json:"rejected"`  // refused by the bulkhead
	Concurrency int     `json:"concurrency"`
	Queued      int     `json:"queued"`
	Limit       float64 `json:"limit"` // the bulkhead's, averaged over the second; 0 without one
	Worst       float64 `json:"worst_response"`
}

// Summary sums up a run.
type Summary struct {
	Run      string `json:"run"`
	Arrivals int    `json:"arrivals"`
	Useful   int    `json:"useful"` // answered in time
	Rejected int    `json:"rejected"`
	Timeouts int    `json:"timeouts"`
	Wasted   int    `json:"wasted"`
	// Goodput is useful ÷ arrivals.
	Goodput float64 `json:"goodput"`
	// WorstResponse and P99Response are times inside the system (queue
	// included) of the requests that finished, as multiples of the nominal.
	WorstResponse float64 `json:"worst_response_x"`
	P99Response   float64 `json:"p99_response_x"`
	// PeakConcurrency is the most requests in work at a second's end, at
	// PeakAt seconds.
	PeakConcurrency int `json:"peak_concurrency"`
	PeakAt          int `json:"peak_at_s"`
	// LowestUsefulMinute is the least useful throughput of any minute from
	// the largest peak on, as a share of the server's capacity; −1 for a
	// profile without a peak.
	LowestUsefulMinute float64 `json:"lowest_useful_minute"`
	// RecoverySeconds is the time from the end of the largest peak until
	// the server is back to normal for 30 s in a row: nothing waits longer
	// than twice the nominal and no client gives up. −1: not within the run.
	RecoverySeconds float64 `json:"recovery_s"`
	// Peak says whether the profile has a peak, and so whether
	// LowestUsefulMinute and RecoverySeconds were measured.
	Peak bool `json:"peak"`
}

// Result is a run's series and summary.
type Result struct {
	Config  Config
	Profile Profile
	Series  []Second
	Summary Summary
	// Responses are the times inside the system of every request that
	// finished, in seconds, in the order they finished.
	Responses []float64
}

// request is one client's request.
type request struct {
	arrival, deadline float64
	work              float64
	permit            bulkhead.Permit
	done              bool
}

// clock adapts the virtual clock to the bulkhead's Clock.
type clock struct{ *vclock.Clock }

func (c clock) AfterFunc(d time.Duration, f func()) bulkhead.Timer { return c.Clock.AfterFunc(d, f) }

var epoch = time.Unix(0, 0)

func at(t float64) time.Time      { return epoch.Add(time.Duration(t * float64(time.Second))) }
func seconds(t time.Time) float64 { return t.Sub(epoch).Seconds() }

// Run simulates one configuration. It is deterministic: the same Config
// gives the same Result.
func Run(cfg Config) (Result, error) { return RunContext(context.Background(), cfg) }

// RunContext is Run that stops early, with ctx's error, once ctx is done:
// a World Cup run takes about a second of CPU and tens of megabytes, work
// a server must not go on with for a client that has left.
func RunContext(ctx context.Context, cfg Config) (Result, error) {
	p, err := LookupProfile(cfg.Profile)
	if err != nil {
		return Result{}, err
	}
	switch {
	case cfg.Inside < 0 || cfg.Inside > bulkhead.MaxLimit:
		return Result{}, fmt.Errorf("%w: inside %d: want 0 (no limit) to %d", ErrConfig, cfg.Inside, bulkhead.MaxLimit)
	case cfg.Outside < 0 || cfg.Outside > bulkhead.MaxQueue:
		return Result{}, fmt.Errorf("%w: outside %d: want 0 to %d", ErrConfig, cfg.Outside, bulkhead.MaxQueue)
	case cfg.Inside == 0 && (cfg.Outside > 0 || cfg.Adaptive):
		return Result{}, fmt.Errorf("%w: a queue or an adaptive limit needs an inside limit", ErrConfig)
	case !math.IsNaN(cfg.Alpha) && (cfg.Alpha < 0 || cfg.Alpha > 100):
		return Result{}, fmt.Errorf("%w: alpha %v: want 0 (linear) to 100", ErrConfig, cfg.Alpha)
	case cfg.Timeout < 0 || math.IsNaN(cfg.Timeout) || cfg.Timeout > 86400:
		return Result{}, fmt.Errorf("%w: timeout %v s: want more than 0 and at most a day (0 for the profile's)", ErrConfig, cfg.Timeout)
	case cfg.Duration < 0 || math.IsNaN(cfg.Duration) || cfg.Duration > 86400:
		return Result{}, fmt.Errorf("%w: duration %v s: want more than 0 and at most a day (0 for the profile's)", ErrConfig, cfg.Duration)
	}
	if !math.IsNaN(cfg.Alpha) {
		p.Alpha = cfg.Alpha
	}
	if cfg.Timeout > 0 {
		p.Timeout = cfg.Timeout
	}
	if cfg.Duration > 0 {
		p.Duration = math.Max(cfg.Duration, p.Tick)
	}
	s := &sim{p: p, cfg: cfg, rand: rng.New(cfg.Seed), clk: vclock.New(epoch), server: &Server{K: p.K, Alpha: p.Alpha}}
	s.series = make([]Second, int(math.Ceil(p.Duration)))
	for i := range s.series {
		s.series[i].T = i
	}
	if cfg.Inside > 0 {
		opts := []bulkhead.Option{bulkhead.WithClock(clock{s.clk}), bulkhead.WithQueue(cfg.Outside)}
		if cfg.Adaptive {
			opts = append(opts, bulkhead.WithAdaptive(bulkhead.AdaptiveConfig{}))
		}
		if s.b, err = bulkhead.New(cfg.Inside, opts...); err != nil {
			return Result{}, fmt.Errorf("%w: %v", ErrConfig, err)
		}
	}
	if err := s.run(ctx); err != nil {
		return Result{}, fmt.Errorf("overload: run %s stopped: %w", cfg.Label(), err)
	}
	return Result{Config: cfg, Profile: p, Series: s.series, Summary: s.summary(), Responses: s.responses}, nil
}

// sim is the state of a run.
type sim struct {
	p      Profile
	cfg    Config
	rand   *rng.Rand
	clk    *vclock.Clock
	server *Server
	b      *bulkhead.Bulkhead

	series    []Second
	all       []*request // every request not known to be done (compacted as it grows)
	kept      int        // len(all) after the last compaction
	responses []float64
	queued    int
}

func (s *sim) second(t float64) *Second {
	i := min(len(s.series)-1, max(0, int(t)))
	return &s.series[i]
}

// checkEvery is how many ticks pass between two looks at the context: a
// few milliseconds of work.
const checkEvery = 1024

func (s *sim) run(ctx context.Context) error {
	p := s.p
	ticks := int(math.Round(p.Duration / p.Tick))
	for k := 0; k < ticks; k++ {
		if k%checkEvery == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		t0 := float64(k) * p.Tick
		s.clk.AdvanceTo(at(t0))

		mean := p.Rate(t0) * p.Tick
		n := int(math.Round(mean))
		if !p.EveryTick {
			n = s.rand.Poisson(mean)
		}
		for range n {
			s.arrive(t0)
		}

		// Fluid processor sharing until the end of the tick, completion by
		// completion, each at its own instant.
		now, end := t0, t0+p.Tick
		for {
			dt := s.server.nextCompletion()
			if now+dt > end {
				s.server.advance(end - now)
				break
			}
			s.server.advance(dt)
			now += dt
			r := s.server.pop()
			s.clk.AdvanceTo(at(now))
			s.finish(r, now)
		}

		sec := s.second(t0)
		if s.b != nil {
			sec.Limit += float64(s.b.Limit()) * p.Tick / math.Min(1, p.Duration) // time-weighted over the second
		}
		if next := float64(k+1) * p.Tick; int(next) != int(t0) || k == ticks-1 {
			sec.Concurrency = s.server.InWork()
			sec.Queued = s.queued
		}
	}
	// Clients still waiting at the end gave up if their deadline passed.
	for _, r := range s.all {
		if !r.done && r.deadline < p.Duration {
			s.second(r.deadline).Timeouts++
		}
	}
	return nil
}

func (s *sim) arrive(t float64) {
	r := &request{arrival: t, deadline: t + s.p.Timeout, work: s.p.Work}
	if s.p.WorkCV > 0 {
		// Lognormal with the nominal mean and the profile's variation.
		sigma := math.Sqrt(math.Log(1 + s.p.WorkCV*s.p.WorkCV))
		r.work = s.p.Work * math.Exp(s.rand.Normal(-sigma*sigma/2, sigma))
	}
	s.all = append(s.all, r)
	if len(s.all) >= 2*max(s.kept, 1024) {
		// Keep only the requests still waiting or in work, so that memory
		// follows the requests inside, not every request of the run.
		s.all = slices.DeleteFunc(s.all, func(r *request) bool { return r.done })
		s.kept = len(s.all)
	}
	s.second(t).Arrivals++
	if s.b == nil {
		s.server.add(r, r.work)
		return
	}
	var deadline time.Time
	if s.cfg.Adaptive && !math.IsInf(s.p.Timeout, 1) {
		deadline = at(r.deadline) // the client's deadline travels with the request
	}
	s.queued++
	s.b.Submit(bulkhead.PriorityNormal, deadline, func(pm bulkhead.Permit, err error) {
		s.queued--
		if err != nil {
			r.done = true
			s.second(seconds(s.clk.Now())).Rejected++
			return
		}
		r.permit = pm
		s.server.add(r, r.work)
	})
}

func (s *sim) finish(r *request, now float64) {
	r.done = true
	took := now - r.arrival
	s.responses = append(s.responses, took)
	sec := s.second(now)
	sec.Worst = math.Max(sec.Worst, took)
	if now <= r.deadline {
		sec.Responses++
	} else {
		sec.Wasted++
		s.second(r.deadline).Timeouts++
	}
	r.permit.Release()
}

func (s *sim) summary() Summary {
	p := s.p
	sum := Summary{Run: s.cfg.Label(), RecoverySeconds: -1, LowestUsefulMinute: -1}
	for _, sec := range s.series {
		sum.Arrivals += sec.Arrivals
		sum.Useful += sec.Responses
		sum.Rejected += sec.Rejected
		sum.Timeouts += sec.Timeouts
		sum.Wasted += sec.Wasted
		if sec.Concurrency > sum.PeakConcurrency {
			sum.PeakConcurrency, sum.PeakAt = sec.Concurrency, sec.T
		}
	}
	if sum.Arrivals > 0 {
		sum.Goodput = float64(sum.Useful) / float64(sum.Arrivals)
	}
	if len(s.responses) > 0 {
		sorted := slices.Clone(s.responses)
		slices.Sort(sorted)
		sum.WorstResponse = sorted[len(sorted)-1] / p.Work
		sum.P99Response = sorted[int(0.99*float64(len(sorted)-1))] / p.Work
	}
	if p.PeakEnd > 0 {
		sum.Peak = true
		// The least useful minute from the start of the largest peak on.
		lowest := math.Inf(1)
		for m := int(p.PeakStart); m+60 <= len(s.series); m += 60 {
			useful := 0
			for _, sec := range s.series[m : m+60] {
				useful += sec.Responses
			}
			lowest = math.Min(lowest, float64(useful)/60/(p.K/p.Work))
		}
		sum.LowestUsefulMinute = lowest
		// Recovery: 30 s in a row with no give-ups and every answer within
		// twice the nominal time.
		run := 0
		for t := int(p.PeakEnd); t < len(s.series); t++ {
			sec := s.series[t]
			if sec.Timeouts == 0 && sec.Wasted == 0 && sec.Worst <= 2*p.Work {
				run++
			} else {
				run = 0
			}
			if run == 30 {
				sum.RecoverySeconds = float64(t-29) - p.PeakEnd
				break
			}
		}
	}
	return sum
}

// Compare runs the seed's experiment on a profile: no limit, 100 inside
// with queues of 100, 500 and 1,000 outside, and the adaptive limit
// (starting at 1,000, queue 100, with the clients' deadlines).
func Compare(profile string, seed uint32) ([]Result, error) {
	return CompareContext(context.Background(), profile, seed)
}

// CompareContext is Compare that stops early, with ctx's error, once ctx
// is done.
func CompareContext(ctx context.Context, profile string, seed uint32) ([]Result, error) {
	nan := math.NaN()
	runs := []Config{
		{Profile: profile, Seed: seed, Alpha: nan},
		{Profile: profile, Seed: seed, Alpha: nan, Inside: 100, Outside: 100},
		{Profile: profile, Seed: seed, Alpha: nan, Inside: 100, Outside: 500},
		{Profile: profile, Seed: seed, Alpha: nan, Inside: 100, Outside: 1000},
		{Profile: profile, Seed: seed, Alpha: nan, Inside: 1000, Outside: 100, Adaptive: true},
	}
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
				return nil, e // the first real failure: the runs differ only in the limit
			}
		}
		return nil, fmt.Errorf("overload: comparison stopped: %w", context.Cause(ctx))
	}
	return out, nil
}
