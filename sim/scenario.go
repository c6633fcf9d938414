package sim

import (
	"fmt"
	"math"
	"strings"

	"github.com/afloat/afloat/internal/rng"
)

// Scenario is the opening state of a run and what happens in it without
// the player. The four built-in scenarios come from Scenarios and Lookup.
type Scenario struct {
	Name     string // used on the command line and in share links
	Title    string
	Briefing string // what the player is told, nothing more

	Start     int     // time of day of minute 0, in minutes after midnight
	Minutes   int     // default length of a run
	BaseRate  float64 // requests per second before the daily curve and any surge
	Serving   int     // instances serving at minute 0; none are booting
	Budget    float64 // fraction of the month's error budget left at minute 0
	BootDelay int     // minutes before a launched instance serves
	Controls  Controls

	Events []Event     // scheduled events, in minute order
	Surge  *SurgeRange // the range a surge is drawn from; nil for none
	// Mystery has the seed draw the morning (Morning): a deploy whose
	// build may or may not be bad, a surge, a cache flush, or two at once,
	// on top of Events and Surge.
	Mystery bool
}

// EventKind names a scheduled event.
type EventKind string

// The scheduled events a scenario can hold.
const (
	// EventDeploy starts a rollout of a new build: 25 % of the traffic
	// moves onto it each minute, all of it by the fourth minute. The build
	// is bad when the event's Errors is above 0: it fails that share of
	// its requests and needs ×1.25 the CPU. A good build changes nothing
	// but the dashboards' deploy marker.
	EventDeploy EventKind = "deploy"
	// EventFlush empties the cache: the warm fraction drops to 0.
	EventFlush EventKind = "flush"
)

// Event is something a scenario does to the service at the start of a
// minute, before the minute's traffic.
type Event struct {
	Minute int       `json:"minute"`
	Kind   EventKind `json:"kind"`
	Errors float64   `json:"errors,omitempty"` // a deploy's: the share of its requests the new build fails
}

// SurgeRange is the distribution a traffic surge is drawn from. Times are
// minutes after the scenario starts.
type SurgeRange struct {
	StartMin, StartMax     float64 // start, uniform
	PeakMin, PeakMax       float64 // peak multiplier of the traffic, uniform
	RampMin                float64 // minutes from start to peak: RampMin plus an exponential of mean RampMean
	RampMean               float64
	PlateauMin, PlateauMax float64 // minutes at the peak, uniform
	Decay                  float64 // time constant of the decay back to 1×, minutes
}

// Surge is one surge drawn from a SurgeRange: the traffic multiplier rises
// linearly from 1 at Start to Peak over Ramp minutes, stays at Peak for
// Plateau minutes, then decays back towards 1 with time constant Decay.
type Surge struct {
	Start   float64 `json:"start_minute"`
	Peak    float64 `json:"peak"`
	Ramp    float64 `json:"ramp_minutes"`
	Plateau float64 `json:"plateau_minutes"`
	Decay   float64 `json:"decay_minutes"`
}

// draw takes a surge from the range, in a fixed order (start, peak, ramp,
// plateau) so that a seed always gives the same surge.
func (sr SurgeRange) draw(r *rng.Rand) Surge {
	return Surge{
		Start:   r.Uniform(sr.StartMin, sr.StartMax),
		Peak:    r.Uniform(sr.PeakMin, sr.PeakMax),
		Ramp:    sr.RampMin + r.Exp(sr.RampMean),
		Plateau: r.Uniform(sr.PlateauMin, sr.PlateauMax),
		Decay:   sr.Decay,
	}
}

// Multiplier returns the surge's traffic multiplier at minute t.
func (s Surge) Multiplier(t float64) float64 {
	top := s.Start + s.Ramp
	end := top + s.Plateau
	switch {
	case t < s.Start:
		return 1
	case t < top:
		return 1 + (s.Peak-1)*(t-s.Start)/s.Ramp
	case t < end:
		return s.Peak
	default:
		return 1 + (s.Peak-1)*math.Exp(-(t-end)/s.Decay)
	}
}

// defaultControls is the starting position of the levers unless a scenario
// says otherwise: autoscaling on at 60 %, TTL 60 s, no shedding, the heavy
// feature on. The fleet floor is the starting fleet.
func defaultControls(serving int) Controls {
	return Controls{
		FleetFloor:        serving,
		Autoscaling:       true,
		TargetUtilization: 0.6,
		CacheTTL:          60,
		ShedLowPriority:   0,
		HeavyFeature:      true,
	}
}

func scenarios() []Scenario {
	steady := Scenario{
		Name:  "steady",
		Title: "Steady",
		Briefing: "Free play on a quiet day from the noon peak. Nothing is scheduled to go wrong: " +
			"try the levers and watch what each one costs.",
		Start: 12 * 60, Minutes: 120, BaseRate: 900, Serving: 10, Budget: 1, BootDelay: 3,
		Controls: defaultControls(10),
	}
	badDeploy := Scenario{
		Name:  "bad-deploy",
		Title: "Bad deploy",
		Briefing: "A new build goes out at 09:10. The month has been rough: only 20 % of the " +
			"error budget is left. Minutes after the deploy the burn-rate page fires. Protect the budget.",
		Start: 9 * 60, Minutes: 120, BaseRate: 900, Serving: 10, Budget: 0.2, BootDelay: 3,
		Controls: defaultControls(10),
		Events:   []Event{{Minute: 10, Kind: EventDeploy, Errors: badBuildErrors}},
	}
	surge := Scenario{
		Name:  "surge",
		Title: "Traffic surge",
		Briefing: "A link to the service is spreading fast and a surge is expected some time this " +
			"morning — nobody knows when, or how big. Today new instances need 8 minutes to boot. " +
			"When it comes, keep errors and latency low without burning money on idle capacity.",
		Start: 8 * 60, Minutes: 240, BaseRate: 900, Serving: 10, Budget: 1, BootDelay: 8,
		Controls: defaultControls(10),
		Surge: &SurgeRange{
			StartMin: 20, StartMax: 160, // 08:20–10:40
			PeakMin: 2, PeakMax: 4,
			RampMean:   6,
			PlateauMin: 20, PlateauMax: 40,
			Decay: 45,
		},
	}
	flush := Scenario{
		Name:  "cache-flush",
		Title: "Cache flush",
		Briefing: "A busy day. At the noon peak a maintenance script flushes the whole cache. " +
			"Every request now goes to the database, which was sized for the normal hit rate of 85 %. " +
			"Restore service without overloading the database.",
		Start: 11*60 + 45, Minutes: 120, BaseRate: 1300, Serving: 13, Budget: 1, BootDelay: 3,
		Controls: defaultControls(13),
		Events:   []Event{{Minute: 15, Kind: EventFlush}},
	}
	flush.Controls.CacheTTL = 70 // hit ≈ 85 % warm at 11:45: the seed's "normal hit rate" the database was sized for
	mystery := Scenario{
		Name:  "mystery",
		Title: "On call",
		Briefing: "You are on call this morning. Teams ship when they are ready, so deploys may go out; " +
			"nothing else is planned. Watch the dashboards: if something goes wrong, work out what from " +
			"what they show, and fix it.",
		// The cache-flush scenario's busy day, so that a flush saturates the
		// database as it does there.
		Start: mysteryStart, Minutes: mysteryMinutes, BaseRate: 1300, Serving: 13, Budget: 1, BootDelay: 3,
		Controls: defaultControls(13),
		Mystery:  true,
	}
	mystery.Controls.CacheTTL = 70
	return []Scenario{steady, badDeploy, surge, flush, mystery}
}

// Validate checks a scenario's fields, so that a hand-made Scenario given to
// New cannot put the model outside the ranges it is defined on.
func (sc Scenario) Validate() error {
	bad := func(field, want string, got any) error {
		return fmt.Errorf("%w: scenario %q: %s %v: want %s", ErrInvalidConfig, sc.Name, field, got, want)
	}
	finite := func(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
	switch {
	case sc.Start < 0 || sc.Start >= 1440:
		return bad("Start", "minutes after midnight, 0 to 1439", sc.Start)
	case sc.Minutes < 1 || sc.Minutes > MaxMinutes:
		return bad("Minutes", fmt.Sprintf("1 to %d", MaxMinutes), sc.Minutes)
	case !(sc.BaseRate >= 0 && sc.BaseRate <= 1e6):
		return bad("BaseRate", "0 to 1,000,000 requests per second", sc.BaseRate)
	case sc.Serving < 0 || sc.Serving > MaxFleet:
		return bad("Serving", fmt.Sprintf("0 to %d instances", MaxFleet), sc.Serving)
	case !finite(sc.Budget) || sc.Budget > 1:
		return bad("Budget", "a finite fraction of at most 1", sc.Budget)
	case sc.BootDelay < 1 || sc.BootDelay > 60:
		return bad("BootDelay", "1 to 60 minutes", sc.BootDelay)
	}
	c := sc.Controls
	for _, a := range []Action{
		Set(0, ControlFleetFloor, float64(c.FleetFloor)),
		Set(0, ControlTargetUtilization, c.TargetUtilization),
		Set(0, ControlCacheTTL, c.CacheTTL),
		Set(0, ControlShedLowPriority, c.ShedLowPriority),
	} {
		if err := a.Validate(1); err != nil {
			return fmt.Errorf("%w: scenario %q: controls: %v", ErrInvalidConfig, sc.Name, err)
		}
	}
	for _, ev := range sc.Events {
		if ev.Minute < 0 || (ev.Kind != EventDeploy && ev.Kind != EventFlush) || !(ev.Errors >= 0 && ev.Errors <= 1) {
			return bad("Events", "minutes from 0, kinds deploy or flush, a deploy's errors from 0 to 1", ev)
		}
	}
	if sr := sc.Surge; sr != nil {
		ok := finite(sr.StartMin) && finite(sr.StartMax) && sr.StartMin <= sr.StartMax &&
			sr.PeakMin >= 0 && sr.PeakMin <= sr.PeakMax && sr.PeakMax <= 100 &&
			sr.RampMean >= 0 && sr.RampMean <= 1e4 && sr.RampMin >= 0 && sr.RampMin <= 1e4 &&
			sr.PlateauMin >= 0 && sr.PlateauMin <= sr.PlateauMax && sr.PlateauMax <= 1e6 &&
			sr.Decay > 0 && sr.Decay <= 1e6
		if !ok {
			return bad("Surge", "finite ranges with min ≤ max, a peak of at most 100×, a positive decay", *sr)
		}
	}
	return nil
}

// Scenarios returns the built-in scenarios: steady, bad-deploy, surge,
// cache-flush and mystery. The slice is a fresh copy each call.
func Scenarios() []Scenario {
	return scenarios()
}

// ScenarioNames returns the names Lookup accepts, in a stable order.
func ScenarioNames() []string {
	var names []string
	for _, sc := range scenarios() {
		names = append(names, sc.Name)
	}
	return names
}

// Lookup returns the built-in scenario with the given name.
func Lookup(name string) (Scenario, error) {
	for _, sc := range scenarios() {
		if sc.Name == name {
			return sc, nil
		}
	}
	return Scenario{}, &ConfigError{Field: "scenario", Msg: fmt.Sprintf("%q: want one of %s", name, strings.Join(ScenarioNames(), ", "))}
}

// clocks holds "00:00" to "23:59" back to back, so that Clock slices it
// instead of formatting a string every simulated minute.
var clocks = func() string {
	b := make([]byte, 0, 5*1440)
	for m := range 1440 {
		b = append(b, byte('0'+m/600), byte('0'+m/60%10), ':', byte('0'+m%60/10), byte('0'+m%10))
	}
	return string(b)
}()

// Clock formats a time of day given in minutes after midnight as HH:MM,
// wrapping past midnight.
func Clock(minuteOfDay int) string {
	m := ((minuteOfDay % 1440) + 1440) % 1440
	return clocks[5*m : 5*m+5]
}
