package sim

import (
	"fmt"
	"math"
	"slices"

	"github.com/afloat/afloat/internal/queueing"
	"github.com/afloat/afloat/internal/rng"
)

// Sim is one run of the model, stepped a minute at a time. Everything it
// does is a function of the scenario, the seed, the noise switch and the
// actions given to Step: it reads no clock and no global random source.
//
// A Sim is not safe for concurrent use.
type Sim struct {
	sc      Scenario
	rand    *rng.Rand
	noise   bool
	surge   *Surge
	events  []Event  // the scenario's and the morning's, in minute order
	morning *Morning // what a mystery scenario's seed drew; nil otherwise

	minute int
	ctl    Controls

	serving  int
	booting  []int // booting[r]: instances with r minutes of boot left, r = 1…BootDelay
	nBooting int
	quiet    int // consecutive quiet minutes seen by the autoscaler

	warm       float64
	warmupLeft int

	rolloutStart int     // minute the live rollout started; -1 when none is live
	buildErrors  float64 // the live rollout's build's errors; 0 for a good build
	rollbackLeft int
	// rollbackOf is the rollout live when the rollback was last pressed
	// (its start minute), -1 for none: a rollback redeploys the build
	// that was good before the one it was pressed against, so it can undo
	// only a build that was live at the press, never one deployed while it
	// was being prepared.
	rollbackOf int

	budget float64
	errs   [longWindow]float64 // error rates of the last 60 minutes, a ring
	cost   float64
}

// New starts a run of the scenario at minute 0. The seed draws the
// scenario's hidden parameters (the surge, then a mystery's morning) first, then, with noise on, two
// normal numbers each minute for the request count. With noise off the
// count is exactly 60λ, but the surge is still drawn from the seed.
//
// A scenario that fails Validate is refused with an error wrapping
// ErrInvalidConfig.
func New(sc Scenario, seed uint32, noise bool) (*Sim, error) {
	if err := sc.Validate(); err != nil {
		return nil, err
	}
	s := &Sim{
		sc:           sc,
		rand:         rng.New(seed),
		noise:        noise,
		ctl:          sc.Controls,
		serving:      sc.Serving,
		booting:      make([]int, sc.BootDelay+1),
		warm:         1,
		rolloutStart: -1,
		rollbackOf:   -1,
		budget:       sc.Budget,
	}
	if sc.Surge != nil {
		surge := sc.Surge.draw(s.rand)
		s.surge = &surge
	}
	s.events = sc.Events
	if sc.Mystery {
		m := drawMorning(s.rand)
		s.morning = &m
		if m.Surge != nil && s.surge == nil {
			s.surge = m.Surge
		}
		s.events = append(slices.Clone(sc.Events), m.events()...)
		slices.SortStableFunc(s.events, func(a, b Event) int { return a.Minute - b.Minute })
	}
	return s, nil
}

// Minute returns the minute the next Step will simulate.
func (s *Sim) Minute() int { return s.minute }

// Surge returns the surge drawn for this run, if the scenario has one. The
// player is not told; a debrief may reveal it.
func (s *Sim) Surge() (Surge, bool) {
	if s.surge == nil {
		return Surge{}, false
	}
	return *s.surge, true
}

// Morning returns what the seed drew for a mystery scenario. The player is
// not told; a debrief may reveal it once the run is over.
func (s *Sim) Morning() (Morning, bool) {
	if s.morning == nil {
		return Morning{}, false
	}
	m := *s.morning
	m.Incidents = slices.Clone(m.Incidents)
	return m, true
}

// Rollout returns the minute the live rollout started — the newest
// deploy, until a rollback of it completes — and false while the build
// live is the one the run opened with or the one a rollback went back to:
// what a service's build_info shows, read after a Step for the minutes
// after it. Whether the build is bad it does not tell.
func (s *Sim) Rollout() (start int, live bool) { return s.rolloutStart, s.rolloutStart >= 0 }

// Events returns the run's scheduled events, the scenario's and those the
// seed drew for a mystery morning, in minute order.
func (s *Sim) Events() []Event { return slices.Clone(s.events) }

// Step applies the actions at the start of the current minute, in order,
// simulates the minute and returns its frame. Every action must be for the
// current minute and valid; if any is not, Step changes nothing and returns
// an error wrapping ErrInvalidAction.
func (s *Sim) Step(actions []Action) (Frame, error) {
	for i, a := range actions {
		if err := a.Validate(math.MaxInt32); err != nil {
			return Frame{}, indexed(err, i)
		}
		if a.Minute != s.minute {
			return Frame{}, &ActionError{Index: i, Field: "minute",
				Msg: fmt.Sprintf("%d is not the minute being simulated, %d", a.Minute, s.minute)}
		}
	}
	for _, a := range actions {
		s.apply(a)
	}
	return s.step(), nil
}

func indexed(err error, i int) error {
	if ae, ok := err.(*ActionError); ok {
		ae.Index = i
	}
	return err
}

// apply moves a lever. The action has been validated.
func (s *Sim) apply(a Action) {
	s.ctl = s.ctl.With(a)
	switch a.Control {
	case ControlFleetFloor:
		if s.ctl.Autoscaling {
			// Raising the floor launches at once; lowering it leaves the
			// autoscaler to scale in when the fleet has been quiet.
			s.launch(s.ctl.FleetFloor - s.fleet())
		} else {
			s.resize(s.ctl.FleetFloor)
		}
	case ControlAutoscaling:
		if !s.ctl.Autoscaling {
			s.resize(s.ctl.FleetFloor)
		}
		s.quiet = 0
	case ControlWarmup:
		if s.warmupLeft == 0 { // pressing it while it runs does nothing
			s.warmupLeft = warmupMinutes
		}
	case ControlRollback:
		s.rollbackLeft = rollbackMinutes // a second press starts over
		s.rollbackOf = s.rolloutStart    // the build live now, if any
	}
}

// Controls returns the levers' positions now: before the minute's
// actions, for a Sim that has not stepped it yet.
func (s *Sim) Controls() Controls { return s.ctl }

// fleet is every instance that bills: serving and booting.
func (s *Sim) fleet() int { return s.serving + s.nBooting }

// launch starts n instances booting, keeping the fleet within MaxFleet.
func (s *Sim) launch(n int) {
	n = min(n, MaxFleet-s.fleet())
	if n <= 0 {
		return
	}
	s.booting[len(s.booting)-1] += n
	s.nBooting += n
}

// resize makes the fleet exactly n instances at once: it launches the
// missing ones, or stops the newest booting instances first, then serving
// ones.
func (s *Sim) resize(n int) {
	if extra := s.fleet() - n; extra > 0 {
		for r := len(s.booting) - 1; r >= 1 && extra > 0; r-- {
			k := min(extra, s.booting[r])
			s.booting[r] -= k
			s.nBooting -= k
			extra -= k
		}
		s.serving -= extra
		return
	}
	s.launch(n - s.fleet())
}

// rate returns the arrival rate λ(t) in requests per second at minute t:
// the daily curve, peaking at 12:00, times any surge.
func (s *Sim) rate(t int) float64 {
	hours := float64(s.sc.Start)/60 + float64(t)/60
	lambda := s.sc.BaseRate * (1 + dailySwing*math.Sin(2*math.Pi*(hours-(peakHour-6))/24))
	if s.surge != nil {
		lambda *= s.surge.Multiplier(float64(t))
	}
	return lambda
}

// badShare returns the share of traffic on the bad build at minute m: none
// while the live build, if any, is good.
func (s *Sim) badShare(m int) float64 {
	if s.rolloutStart < 0 || s.buildErrors == 0 {
		return 0
	}
	return math.Min(1, rolloutStep*float64(m-s.rolloutStart+1))
}

// step simulates the current minute, in the specification's order, and
// advances to the next.
func (s *Sim) step() Frame {
	m := s.minute

	// Scenario events, after the player's actions.
	deploy := false
	for _, ev := range s.events {
		if ev.Minute != m {
			continue
		}
		switch ev.Kind {
		case EventDeploy:
			s.rolloutStart, s.buildErrors = m, ev.Errors
			deploy = true
		case EventFlush:
			s.warm = 0
		}
	}
	bad := s.badShare(m)

	// Arrivals: n ≈ N(60λ, √(60λ))·(1 + N(0, 0.02)), a whole count.
	demand := s.rate(m)
	expected := 60 * demand
	count := expected
	if s.noise {
		z1 := s.rand.Normal(0, 1)
		z2 := s.rand.Normal(0, 1)
		count = math.Max(0, math.Round((expected+math.Sqrt(expected)*z1)*(1+countNoiseStd*z2)))
	}
	observed := count / 60

	// Shedding at the load balancer.
	shedShare := lowPriority * s.ctl.ShedLowPriority
	admitted := observed * (1 - shedShare)

	// Cache, from the warm fraction at the start of the minute.
	rT := admitted / hotObjects * s.ctl.CacheTTL
	hit := s.warm * rT / (1 + rT)

	// Database.
	q := float64(queries)
	appSeconds := appTime
	if s.ctl.HeavyFeature {
		q += heavyQueries
		appSeconds += heavyAppTime
	}
	// Only requests an instance serves query the database: with none
	// serving, the load balancer fails them all before any query (the
	// warm-up job, which loads the cache itself, still queries).
	querying := admitted
	if s.serving == 0 {
		querying = 0
	}
	dbLoad := querying * q * (1 - hit)
	if s.warmupLeft > 0 {
		dbLoad += warmupQueries
	}
	rho := dbLoad / dbCapacity
	queryTime := queryTimeCap
	if rho < 1 {
		queryTime = math.Min(queryTimeCap, baseQueryTime/(1-rho))
	}

	// The fleet as an M/M/N queue.
	service := appSeconds*(1+badBuildCPU*bad) + (1-hit)*q*queryTime
	queue := queueing.MMN{Lambda: admitted, S: service, N: s.serving * workersPerInstance}
	utilization := queue.Utilization()
	var timeouts, failed float64
	wait := 1.0 // saturated or no server: everyone waits
	p99 := clientTimeout
	switch {
	case queue.N == 0:
		if admitted > 0 {
			failed = 1 // with no server every admitted request fails
		}
	case !queue.Stable():
		failed = 1 - float64(queue.N)/queue.Load()
	default:
		wait = queue.ErlangC()
		timeouts = queue.WaitExceeds(wait, clientTimeout)
		p99 = math.Min(clientTimeout, queue.P99(wait))
	}
	if admitted == 0 {
		p99, wait = 0, 0
	}

	// Errors and the budget.
	errorRate := 1 - (1-timeouts)*(1-failed)*(1-s.buildErrors*bad)
	if m == 0 {
		// The windows start full of the opening minute, so that a run does
		// not open with a burn rate diluted by minutes that never happened.
		for i := range s.errs {
			s.errs[i] = errorRate
		}
	}
	s.errs[m%longWindow] = errorRate
	var sum1h, sum5m float64
	for i := range longWindow {
		e := s.errs[(m-i+longWindow)%longWindow]
		sum1h += e
		if i < shortWindow {
			sum5m += e
		}
	}
	burn := errorRate / errorBudget
	burn1h := sum1h / longWindow / errorBudget
	burn5m := sum5m / shortWindow / errorBudget
	s.budget -= burn / monthMinutes

	// Cost of this minute; the frame shows the cost before it.
	fleetPerHour := float64(s.fleet()) * pricePerHour
	if s.rollbackLeft > 0 {
		fleetPerHour *= 2 // the new fleet is billed alongside the old one
	}
	costBefore := s.cost
	s.cost += fleetPerHour / 60

	recs := 0.0
	if s.ctl.HeavyFeature && s.serving > 0 { // no instance, no recommendations served
		recs = 1
	}
	f := Frame{
		Minute:                   m,
		Clock:                    Clock(s.sc.Start + m),
		DemandPerS:               demand,
		RequestsPerS:             observed,
		AdmittedPerS:             admitted,
		ShedShare:                shedShare,
		Serving:                  s.serving,
		Booting:                  s.nBooting,
		CacheHit:                 hit,
		CacheWarm:                s.warm,
		MeanAgeS:                 s.ctl.CacheTTL / 2,
		DBQueriesPerS:            dbLoad,
		DBUtilization:            math.Min(1, rho),
		QueryTimeMs:              1000 * queryTime,
		ServiceTimeMs:            1000 * service,
		OfferedLoad:              queue.Load(),
		WaitShare:                wait,
		Utilization:              utilization,
		P99Ms:                    1000 * p99,
		TimeoutShare:             timeouts,
		FailedShare:              failed,
		ErrorRate:                errorRate,
		Burn:                     burn,
		Burn5m:                   burn5m,
		Burn1h:                   burn1h,
		BudgetRemaining:          s.budget,
		Paged:                    burn1h >= pageBurn && burn5m >= pageBurn,
		FleetCostPerH:            fleetPerHour,
		CostSoFar:                costBefore,
		BadBuildShare:            bad,
		Deploy:                   deploy,
		RecommendationsAvailable: recs,
		WarmupLeft:               s.warmupLeft,
		RollbackLeft:             s.rollbackLeft,
		Controls:                 s.ctl,
	}

	// End of the minute.
	s.refill(rho)
	s.bootTick()
	s.rollbackTick()
	if s.ctl.Autoscaling {
		s.autoscale(f.Serving, utilization, admitted > 0)
	}
	s.minute++
	return f
}

// refillStep is the share of the cold cache refilled in a minute at full
// speed, 1 − e^(−1/τ).
var refillStep = 1 - math.Exp(-1/refillMinutes)

// refill warms the cache: warm += (1 − warm)(1 − e^(−1/30))·min(1, 1/ρ_db),
// slower while the database is saturated, plus the warm-up job's 12 %.
func (s *Sim) refill(rho float64) {
	speed := 1.0
	if rho > 1 {
		speed = 1 / rho
	}
	s.warm += (1 - s.warm) * refillStep * speed
	if s.warmupLeft > 0 {
		s.warm += warmupStep
		s.warmupLeft--
	}
	s.warm = math.Min(1, s.warm)
}

// bootTick moves every booting instance a minute on; those done now serve.
func (s *Sim) bootTick() {
	s.serving += s.booting[1]
	s.nBooting -= s.booting[1]
	copy(s.booting[1:], s.booting[2:])
	s.booting[len(s.booting)-1] = 0
}

// rollbackTick counts down the rollback; when it is done the traffic
// switches to the good build and the rollout it was pressed against is
// over. A rollout that started after the press is not touched: the
// rollback was prepared from the build live at the press, which is the
// new build's predecessor only if the new build was already out.
func (s *Sim) rollbackTick() {
	if s.rollbackLeft == 0 {
		return
	}
	s.rollbackLeft--
	if s.rollbackLeft == 0 {
		if s.rollbackOf >= 0 && s.rollbackOf == s.rolloutStart {
			s.rolloutStart = -1
		}
		s.rollbackOf = -1
	}
}

// autoscale is target tracking on utilization, deciding the fleet for the
// next minute from the minute just simulated: desired =
// ⌈serving × utilization / target⌉ with utilization capped at 100 %, kept
// between the floor and MaxFleet.
func (s *Sim) autoscale(served int, utilization float64, traffic bool) {
	desired := int(math.Ceil(float64(served)*utilization/s.ctl.TargetUtilization - autoscaleSlack))
	if served == 0 && traffic {
		// No instance means no utilization to track; the fleet is
		// saturated by definition, so ask for one.
		desired = 1
	}
	desired = max(s.ctl.FleetFloor, min(MaxFleet, desired))

	if s.nBooting == 0 && desired > s.serving {
		s.launch(desired - s.serving)
	}
	if desired < s.serving {
		s.quiet++
	} else {
		s.quiet = 0
	}
	if s.quiet >= scaleInQuiet {
		step := max(1, int(scaleInFraction*float64(s.serving)))
		s.serving -= min(s.serving-desired, step)
		s.quiet = 0
	}
}

// Clone returns an independent copy of the run at its current minute: the
// same state, the same random stream. Stepping the copy and the original
// with the same actions gives the same frames; a search that tries several
// futures from one minute clones the run there instead of replaying the
// minutes before it.
func (s *Sim) Clone() *Sim {
	c := *s
	r := *s.rand
	c.rand = &r
	c.booting = append([]int(nil), s.booting...)
	if s.surge != nil {
		surge := *s.surge
		c.surge = &surge
	}
	// events and morning are never written after New: the copies share them.
	return &c
}

// Scenario returns the scenario being run.
func (s *Sim) Scenario() Scenario { return s.sc }
