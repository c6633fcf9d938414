package overload

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/afloat/afloat/bulkhead"
	"github.com/afloat/afloat/internal/heap"
	"github.com/afloat/afloat/internal/rng"
	"github.com/afloat/afloat/internal/vclock"
)

// ErrConfig is returned for a run that cannot be made.
var ErrConfig = errors.New("overload: invalid configuration")

// NoRetries, as Config.Retries, runs a profile with clients that never
// try again after giving up (the zero value takes the profile's).
const NoRetries = -1

// ExactRetries returns the Config.Retries under which a client that gave
// up tries again exactly n times, 0 to MaxRetries: NoRetries for 0, where
// the zero value of Retries would take the profile's. It is the mapping
// for a count a person gives (the lab's command line and page).
func ExactRetries(n int) (int, error) {
	switch {
	case n < 0 || n > MaxRetries:
		return 0, fmt.Errorf("%w: retries %d: want 0 (none) to %d", ErrConfig, n, MaxRetries)
	case n == 0:
		return NoRetries, nil
	}
	return n, nil
}

// Bounds of a Config, for callers that check their input first.
const (
	MaxAlpha   = 100
	MaxRetries = 10
	MaxSeconds = 86400 // Config.Timeout and Config.Duration
	// MaxThreads bounds Config.Threads; the pool's queue is unbounded.
	MaxThreads = bulkhead.MaxLimit
)

// Config is one run of a profile. The zero value of every field but
// Profile takes the default: no bulkhead, the linear server, the profile's
// clients and length.
type Config struct {
	Profile string
	// Inside is the bulkhead's limit (the initial one if Adaptive); 0 for
	// no bulkhead. Outside is its queue.
	Inside  int
	Outside int
	// Adaptive lets the limit adapt, and gives the bulkhead each client's
	// deadline.
	Adaptive bool
	// Threads puts a thread pool in front of the server instead of a
	// bulkhead: at most Threads requests inside and an unbounded queue, the
	// synchronous server of the seed, whose pool caps its concurrency by
	// accident. 0 for none.
	Threads int
	Seed    uint32
	// Alpha is the slowdown above the knee: 0 (the default) is the seed's
	// linear one — twice the requests in work, each twice as slow, the
	// server's throughput unchanged; above 0, up to MaxAlpha, the server
	// also loses capacity (server's doc), as real ones do.
	Alpha float64
	// Retries is how many times a client that gave up tries again: 0 for
	// the profile's, NoRetries for never, at most MaxRetries.
	Retries int
	// Timeout and Duration override the profile's when above 0: seconds,
	// at most MaxSeconds. With a Timeout and no MaxPatience every client
	// gives up after exactly that long, however the profile's clients vary.
	Timeout  float64
	Duration float64
	// MaxPatience, when above 0, is how long the most patient client waits:
	// each try gives up after a time drawn log-uniformly between the timeout
	// (Timeout or the profile's) and MaxPatience — equal to the timeout, all
	// alike. Seconds, at least the timeout, at most MaxSeconds.
	MaxPatience float64
}

// Label names a run the way the lab shows it: "no limit", "100/100",
// "adaptive", "20 threads".
func (c Config) Label() string {
	switch {
	case c.Threads > 0:
		return fmt.Sprintf("%d threads", c.Threads)
	case c.Inside == 0:
		return "no limit"
	case c.Adaptive:
		return "adaptive"
	default:
		return fmt.Sprintf("%d/%d", c.Inside, c.Outside)
	}
}

// Validate reports what makes a Config unusable, naming the field and the
// range it takes.
func (c Config) Validate() error {
	p, err := LookupProfile(c.Profile)
	if err != nil {
		return err
	}
	timeout := p.Timeout
	if c.Timeout > 0 {
		timeout = c.Timeout
	}
	switch {
	case c.Inside < 0 || c.Inside > bulkhead.MaxLimit:
		return fmt.Errorf("%w: inside %d: want 0 (no limit) to %d", ErrConfig, c.Inside, bulkhead.MaxLimit)
	case c.Outside < 0 || c.Outside > bulkhead.MaxQueue:
		return fmt.Errorf("%w: outside %d: want 0 to %d", ErrConfig, c.Outside, bulkhead.MaxQueue)
	case c.Inside == 0 && (c.Outside > 0 || c.Adaptive):
		return fmt.Errorf("%w: a queue or an adaptive limit needs an inside limit", ErrConfig)
	case c.Threads < 0 || c.Threads > MaxThreads:
		return fmt.Errorf("%w: threads %d: want 0 (none) to %d", ErrConfig, c.Threads, MaxThreads)
	case c.Threads > 0 && (c.Inside > 0 || c.Outside > 0 || c.Adaptive):
		return fmt.Errorf("%w: threads %d: a thread pool or a bulkhead, not both", ErrConfig, c.Threads)
	case !(c.Alpha >= 0 && c.Alpha <= MaxAlpha): // and not NaN
		return fmt.Errorf("%w: alpha %v: want 0 (linear) to %d", ErrConfig, c.Alpha, MaxAlpha)
	case c.Retries < NoRetries || c.Retries > MaxRetries:
		return fmt.Errorf("%w: retries %d: want 0 (the profile's), %d (none) or 1 to %d", ErrConfig, c.Retries, NoRetries, MaxRetries)
	case !(c.Timeout >= 0 && c.Timeout <= MaxSeconds):
		return fmt.Errorf("%w: timeout %v s: want more than 0 and at most %d (0 for the profile's)", ErrConfig, c.Timeout, MaxSeconds)
	case !(c.Duration >= 0 && c.Duration <= MaxSeconds):
		return fmt.Errorf("%w: duration %v s: want more than 0 and at most %d (0 for the profile's)", ErrConfig, c.Duration, MaxSeconds)
	case !(c.MaxPatience >= 0 && c.MaxPatience <= MaxSeconds) || c.MaxPatience > 0 && c.MaxPatience < timeout:
		return fmt.Errorf("%w: max patience %v s: want the timeout (%v s) to %d (0 for the profile's)", ErrConfig, c.MaxPatience, timeout, MaxSeconds)
	}
	return nil
}

// Second is what one second of a run saw. Work and Wasted are in
// requests' worth: units of work divided by the nominal work of one
// request, so that they compare with the counts.
type Second struct {
	T         int `json:"t"`
	Arrivals  int `json:"arrivals"`  // tries sent, retries included (not the other service's)
	Retries   int `json:"retries"`   // of which tries again after a give-up
	Responses int `json:"responses"` // answered before the client gave up
	Late      int `json:"late"`      // answered after the client gave up
	Timeouts  int `json:"timeouts"`  // tries given up in this second
	Rejected  int `json:"rejected"`  // refused by the bulkhead
	// Departures counts every try that left the system — answered in time
	// or late, refused, or dropped — the other service's included, so that
	// the arrivals and departures summed up to a second's end differ by
	// the requests in work and queued then (Little's law, drawn).
	Departures int `json:"departures"`
	// Work is what the server did; Wasted, the part of it spent on
	// requests whose client had already gone.
	Work        float64 `json:"work"`
	Wasted      float64 `json:"wasted"`
	Concurrency int     `json:"concurrency"` // in work at the second's end
	Queued      int     `json:"queued"`      // waiting outside, likewise
	Limit       float64 `json:"limit"`       // the bulkhead's, averaged over the second; 0 without one
	Worst       float64 `json:"worst_response"`

	// The database scenario: requests the server refused for want of a
	// connection, and the second service's requests, answers in time and
	// errors (refusals and give-ups).
	Refused        int `json:"refused,omitempty"`
	OtherArrivals  int `json:"other_arrivals,omitempty"`
	OtherResponses int `json:"other_responses,omitempty"`
	OtherErrors    int `json:"other_errors,omitempty"` // of the requests that arrived in this second
}

// Summary sums up a run.
type Summary struct {
	Run      string `json:"run"`
	Clients  int    `json:"clients"`  // first tries
	Arrivals int    `json:"arrivals"` // tries, retries included
	Retries  int    `json:"retries"`
	Useful   int    `json:"useful"` // answered in time
	Late     int    `json:"late"`   // answered after the client gave up
	Rejected int    `json:"rejected"`
	Timeouts int    `json:"timeouts"`
	// Goodput is useful ÷ clients: the share of clients answered in time.
	Goodput float64 `json:"goodput"`
	// WastedWork is the server's work on requests whose client had gone, in
	// requests' worth; WastedShare, its share of all the server's work.
	WastedWork  float64 `json:"wasted_work"`
	WastedShare float64 `json:"wasted_share"`
	// WorstResponse and P99Response are times inside the system (queue
	// included) of the requests that finished, as multiples of the nominal.
	WorstResponse float64 `json:"worst_response_x"`
	P99Response   float64 `json:"p99_response_x"`
	// PeakConcurrency is the most requests in work at a second's end, at
	// PeakAt seconds; LoadPeakAt is when the clients' demand was highest.
	PeakConcurrency int `json:"peak_concurrency"`
	PeakAt          int `json:"peak_at_s"`
	LoadPeakAt      int `json:"load_peak_at_s"`

	// Peak says whether the profile has a peak, and so whether the rest
	// was measured.
	Peak bool `json:"peak"`
	// LowestUsefulMinute is the least useful throughput of any minute from
	// the start of the largest peak on, as a share of the server's
	// capacity.
	LowestUsefulMinute float64 `json:"lowest_useful_minute"`
	// UsefulAfterPeak is the useful throughput from the end of the largest
	// peak to the profile's AfterEnd as a share of normal — of the clients'
	// demand then, which a healthy server answers in full; WastedAfterPeak
	// is the share of the server's work then spent on clients who had gone.
	UsefulAfterPeak float64 `json:"useful_after_peak"`
	WastedAfterPeak float64 `json:"wasted_after_peak"`
	// RecoverySeconds is the time from the end of the largest peak until
	// the server is back to normal for 30 s in a row: nothing waits longer
	// than twice the nominal and no client gives up. −1: not within the run.
	RecoverySeconds float64 `json:"recovery_s"`

	// The database scenario: the requests the server refused for want of a
	// connection, and the second service's requests, errors and error rate.
	Refused        int     `json:"refused"`
	OtherRequests  int     `json:"other_requests"`
	OtherErrors    int     `json:"other_errors"`
	OtherErrorRate float64 `json:"other_error_rate"`
	// OtherWorstSecond is the second service's highest error rate in any
	// one second.
	OtherWorstSecond float64 `json:"other_worst_second"`
}

// Result is a run's series and summary.
type Result struct {
	Config  Config
	Profile Profile // with the Config's overrides applied
	Series  []Second
	Summary Summary
	// Responses are the times inside the system of every request of the
	// first client that finished, in seconds, in the order they finished.
	Responses []float64
}

// request is one try of one client's request.
type request struct {
	arrival, deadline float64
	work              float64
	attempt           int  // 0 for the first try
	other             bool // the second service's
	permit            bulkhead.Permit
	inWork            bool // in the server
	gone              bool // its client has given up
	done              bool // answered, refused, or dropped
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
	if err := cfg.Validate(); err != nil {
		return Result{}, err
	}
	p, _ := LookupProfile(cfg.Profile)
	switch {
	case cfg.Retries == NoRetries:
		p.Retries = 0
	case cfg.Retries > 0:
		p.Retries = cfg.Retries
	}
	if cfg.Timeout > 0 {
		p.Timeout, p.MaxPatience = cfg.Timeout, 0
	}
	if cfg.MaxPatience > 0 {
		p.MaxPatience = cfg.MaxPatience
	}
	if cfg.Duration > 0 {
		p.Duration = math.Max(cfg.Duration, p.Tick)
	}
	return run(ctx, cfg, p)
}

// run runs a valid Config on p, the profile with the Config's overrides.
func run(ctx context.Context, cfg Config, p Profile) (Result, error) {
	s := &sim{p: p, cfg: cfg, rand: rng.New(cfg.Seed), clk: vclock.New(epoch), server: newServer(p.K, cfg.Alpha),
		retries: newRetries()}
	s.series = make([]Second, int(math.Ceil(p.Duration)))
	for i := range s.series {
		s.series[i].T = i
	}
	var err error
	switch {
	case cfg.Threads > 0:
		// A thread pool is, for the requests' concurrency, a semaphore with
		// a queue nobody bounds.
		s.gate, err = bulkhead.New(cfg.Threads, bulkhead.WithClock(clock{s.clk}), bulkhead.WithQueue(bulkhead.MaxQueue))
	case cfg.Inside > 0:
		opts := []bulkhead.Option{bulkhead.WithClock(clock{s.clk}), bulkhead.WithQueue(cfg.Outside)}
		if cfg.Adaptive {
			opts = append(opts, bulkhead.WithAdaptive(bulkhead.AdaptiveConfig{}))
		}
		s.gate, err = bulkhead.New(cfg.Inside, opts...)
	}
	if err != nil {
		return Result{}, fmt.Errorf("%w: %v", ErrConfig, err)
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
	server *server
	gate   *bulkhead.Bulkhead // the bulkhead or the thread pool; nil for none

	series    []Second
	waiting   [2]deadlines     // tries not known to be done, by deadline: the clients', the other service's
	retries   heap.Heap[retry] // clients that gave up and will try again, by when
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
		// Clients whose deadline has come give up first; then the clock
		// moves (the bulkhead's own expiries fire), and the tries of this
		// tick arrive: retries, then newcomers.
		s.expire(t0 + p.Tick/2)
		s.clk.AdvanceTo(at(t0))
		for s.retries.Len() > 0 && s.retries.Min().at <= t0+p.Tick/2 {
			s.send(t0, s.retries.Pop().attempt, false)
		}
		n := int(math.Round(p.Rate(t0) * p.Tick))
		if !p.EveryTick {
			n = s.rand.Poisson(p.Rate(t0) * p.Tick)
		}
		for range n {
			s.send(t0, 0, false)
		}
		if p.Other != nil {
			for range s.rand.Poisson(p.Other(t0) * p.Tick) {
				s.send(t0, 0, true)
			}
		}

		// Fluid processor sharing until the end of the tick, completion by
		// completion, each at its own instant.
		sec := s.second(t0)
		now, end := t0, t0+p.Tick
		for {
			dt := s.server.nextCompletion()
			if now+dt > end {
				work, wasted := s.server.advance(end - now)
				sec.Work, sec.Wasted = sec.Work+work/p.Work, sec.Wasted+wasted/p.Work
				break
			}
			work, wasted := s.server.advance(dt)
			sec.Work, sec.Wasted = sec.Work+work/p.Work, sec.Wasted+wasted/p.Work
			now += dt
			r := s.server.pop()
			s.clk.AdvanceTo(at(now))
			s.finish(r, now)
		}

		if s.gate != nil {
			sec.Limit += float64(s.gate.Limit()) * p.Tick / math.Min(1, p.Duration) // time-weighted over the second
		}
		if next := float64(k+1) * p.Tick; int(next) != int(t0) || k == ticks-1 {
			sec.Concurrency = s.server.inWork()
			sec.Queued = s.queued
		}
	}
	return nil
}

// expire lets the clients whose deadline is by now give up: a try still
// queued or in work goes on without them (the server cannot know), and the
// client tries again if it has tries left.
func (s *sim) expire(now float64) {
	for i := range s.waiting {
		d := &s.waiting[i]
		for r := d.next(); r != nil && r.deadline <= now; r = d.next() {
			d.pop()
			if !r.done {
				s.giveUp(r)
			}
		}
	}
}

func (s *sim) giveUp(r *request) {
	r.gone = true
	if r.inWork {
		s.server.giveUp()
	}
	if r.other {
		// Counted by arrival, so that a second's error rate is the share
		// of its requests that failed.
		s.second(r.arrival).OtherErrors++
		return
	}
	s.second(r.deadline).Timeouts++
	if r.attempt < s.p.Retries {
		s.retries.Push(retry{at: r.deadline, attempt: r.attempt + 1})
	}
}

// send is a try arriving at t.
func (s *sim) send(t float64, attempt int, other bool) {
	timeout := s.p.Timeout
	switch {
	case other:
		timeout = s.p.OtherTimeout
	case s.p.MaxPatience > timeout:
		// Log-uniform: as many clients give up between 10 s and 20 s as
		// between 10 min and 20 min.
		timeout *= math.Exp(s.rand.Float64() * math.Log(s.p.MaxPatience/timeout))
	}
	r := &request{arrival: t, deadline: t + timeout, work: s.p.Work, attempt: attempt, other: other}
	if s.p.WorkCV > 0 {
		// Lognormal with the nominal mean and the profile's variation.
		sigma := math.Sqrt(math.Log(1 + s.p.WorkCV*s.p.WorkCV))
		r.work = s.p.Work * math.Exp(s.rand.Normal(-sigma*sigma/2, sigma))
	}
	if !math.IsInf(r.deadline, 1) {
		k := 0
		if other {
			k = 1
		}
		s.waiting[k].push(r)
	}
	sec := s.second(t)
	if other {
		sec.OtherArrivals++
		s.enter(r, t) // the other service has no gate of ours
		return
	}
	sec.Arrivals++
	if attempt > 0 {
		sec.Retries++
	}
	if s.gate == nil {
		s.enter(r, t)
		return
	}
	var deadline time.Time
	if s.cfg.Adaptive && !math.IsInf(r.deadline, 1) {
		deadline = at(r.deadline) // the client's deadline travels with the request
	}
	s.queued++
	s.gate.Submit(bulkhead.PriorityNormal, deadline, func(pm bulkhead.Permit, err error) {
		s.queued--
		now := seconds(s.clk.Now())
		if err != nil {
			// A refusal is an answer: the client goes home. One whose client
			// had already gone is dropped, and nobody hears of it.
			if !r.gone {
				s.second(now).Rejected++
			}
			s.second(now).Departures++
			r.done = true
			return
		}
		r.permit = pm
		s.enter(r, now)
	})
}

// enter puts a try in work, unless the server has no connection left for
// it: then it fails at once.
func (s *sim) enter(r *request, now float64) {
	if s.p.Conns > 0 && s.server.inWork() >= s.p.Conns {
		r.done = true
		sec := s.second(now)
		sec.Refused++
		sec.Departures++
		if r.other && !r.gone {
			sec.OtherErrors++
		}
		r.permit.Release()
		return
	}
	s.server.add(r)
}

func (s *sim) finish(r *request, now float64) {
	r.done = true
	sec := s.second(now)
	sec.Departures++
	switch {
	case r.other:
		if !r.gone {
			sec.OtherResponses++
		}
	default:
		took := now - r.arrival
		s.responses = append(s.responses, took)
		sec.Worst = math.Max(sec.Worst, took)
		if r.gone {
			sec.Late++
		} else {
			sec.Responses++
		}
	}
	r.permit.Release()
}

func (s *sim) summary() Summary {
	p := s.p
	sum := Summary{Run: s.cfg.Label(), RecoverySeconds: -1, LowestUsefulMinute: -1, UsefulAfterPeak: -1, WastedAfterPeak: -1}
	work, highest := 0.0, math.Inf(-1)
	for _, sec := range s.series {
		sum.Arrivals += sec.Arrivals
		sum.Retries += sec.Retries
		sum.Useful += sec.Responses
		sum.Late += sec.Late
		sum.Rejected += sec.Rejected
		sum.Timeouts += sec.Timeouts
		sum.WastedWork += sec.Wasted
		sum.Refused += sec.Refused
		sum.OtherRequests += sec.OtherArrivals
		sum.OtherErrors += sec.OtherErrors
		work += sec.Work
		if sec.OtherArrivals > 0 {
			sum.OtherWorstSecond = math.Max(sum.OtherWorstSecond, float64(sec.OtherErrors)/float64(sec.OtherArrivals))
		}
		if sec.Concurrency > sum.PeakConcurrency {
			sum.PeakConcurrency, sum.PeakAt = sec.Concurrency, sec.T
		}
		if rate := p.Rate(float64(sec.T)); rate > highest {
			highest, sum.LoadPeakAt = rate, sec.T
		}
	}
	sum.Clients = sum.Arrivals - sum.Retries
	if sum.Clients > 0 {
		sum.Goodput = float64(sum.Useful) / float64(sum.Clients)
	}
	if work > 0 {
		sum.WastedShare = sum.WastedWork / work
	}
	if sum.OtherRequests > 0 {
		sum.OtherErrorRate = float64(sum.OtherErrors) / float64(sum.OtherRequests)
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
		// After the peak: useful answers against the demand, and the work
		// that went to clients who had gone against all the work.
		if end := min(len(s.series), int(p.AfterEnd)); end > int(p.PeakEnd) {
			useful, demand, wasted, work := 0, 0, 0.0, 0.0
			for _, sec := range s.series[int(p.PeakEnd):end] {
				useful += sec.Responses
				demand += sec.Arrivals - sec.Retries
				wasted += sec.Wasted
				work += sec.Work
			}
			if demand > 0 {
				sum.UsefulAfterPeak = float64(useful) / float64(demand)
			}
			if work > 0 {
				sum.WastedAfterPeak = wasted / work
			}
		}
		// Recovery: 30 s in a row with no give-ups and every answer within
		// twice the nominal time.
		run := 0
		for t := int(p.PeakEnd); t < len(s.series); t++ {
			sec := s.series[t]
			if sec.Timeouts == 0 && sec.Late == 0 && sec.Worst <= 2*p.Work {
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
