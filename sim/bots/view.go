package bots

import (
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"runtime"
	"strings"

	"github.com/afloat/afloat/sim"
)

// ErrHiddenState refuses a policy as the expert that sets par because it
// could see what a player does not: an input that is not observation-only,
// or a closure or bound method that could have captured the seed.
var ErrHiddenState = errors.New("bots: the policy could see hidden state")

// View is what a player sees before a minute: the scenario's briefing, the
// dashboards of every minute so far and the deploy markers on them. It is
// the realistic view (docs/model.md, "Difficulty") and the only input a
// policy gets. It is built from types of its own (Briefing, Shown), not
// from sim.Frame or sim.Scenario, so that what it carries can be checked
// field by field (checkObservation): the share of traffic on the bad
// build, the cache's warm fraction, the surge and the model's inner
// figures (demand before noise, service and query times, Erlang C, the
// fleet's utilization, the one-minute burn) are not in it, nor is the
// seed.
//
// Build a view with ViewOf, Upto or the runner; a view's frames are not to
// be changed in place, since the marks the bots look back with are kept
// as they are appended (marks).
type View struct {
	Scenario Briefing
	Frames   []Shown // minutes 0 … Minute()−1
	Deploys  []int   // minutes at which a deploy went out, seen so far

	seen marks // folded from Frames, one minute at a time
}

// Briefing is what a player is told about a scenario before it starts.
type Briefing struct {
	Name      string
	Start     int // minutes after midnight
	Minutes   int // the run's length
	BootDelay int // minutes before a launched instance serves
	Budget    float64
	Controls  sim.Controls // the levers at minute 0
}

// Shown is one minute as the realistic dashboards show it: the tiles but
// the bad build's share, the charts (error rate, p99), the page, the
// levers' positions and the buttons' countdowns.
type Shown struct {
	Minute int
	Clock  string

	RequestsPerS float64
	AdmittedPerS float64
	ShedShare    float64

	Serving int
	Booting int

	CacheHit      float64
	MeanAgeS      float64
	DBUtilization float64

	P99Ms     float64
	ErrorRate float64

	Burn5m          float64
	Burn1h          float64
	BudgetRemaining float64
	Paged           bool

	FleetCostPerH float64
	CostSoFar     float64

	RecommendationsAvailable float64

	WarmupLeft   int
	RollbackLeft int

	sim.Controls
}

func briefing(sc sim.Scenario, minutes int) Briefing {
	return Briefing{Name: sc.Name, Start: sc.Start, Minutes: minutes, BootDelay: sc.BootDelay, Budget: sc.Budget, Controls: sc.Controls}
}

// Minute is the minute the player's next actions apply to.
func (v View) Minute() int { return len(v.Frames) }

// Last is the minute on the dashboard.
func (v View) Last() Shown { return v.Frames[len(v.Frames)-1] }

// Mask returns a frame as a player sees it on the realistic dashboards.
func Mask(f sim.Frame) Shown {
	return Shown{
		Minute: f.Minute, Clock: f.Clock,
		RequestsPerS: f.RequestsPerS, AdmittedPerS: f.AdmittedPerS, ShedShare: f.ShedShare,
		Serving: f.Serving, Booting: f.Booting,
		CacheHit: f.CacheHit, MeanAgeS: f.MeanAgeS, DBUtilization: f.DBUtilization,
		P99Ms: f.P99Ms, ErrorRate: f.ErrorRate,
		Burn5m: f.Burn5m, Burn1h: f.Burn1h, BudgetRemaining: f.BudgetRemaining, Paged: f.Paged,
		FleetCostPerH: f.FleetCostPerH, CostSoFar: f.CostSoFar,
		RecommendationsAvailable: f.RecommendationsAvailable,
		WarmupLeft:               f.WarmupLeft, RollbackLeft: f.RollbackLeft,
		Controls: f.Controls,
	}
}

// ViewOf is what a player of the scenario, in a run of the given length,
// has seen after the given frames (minutes 0 … len(frames)−1).
func ViewOf(sc sim.Scenario, minutes int, frames []sim.Frame) View {
	v := View{Scenario: briefing(sc, minutes), Frames: make([]Shown, 0, len(frames))}
	for _, f := range frames {
		v.push(Mask(f))
		if f.Deploy {
			v.Deploys = append(v.Deploys, f.Minute)
		}
	}
	return v
}

// Upto is the view after the first n minutes only.
func (v View) Upto(n int) View {
	out := View{Scenario: v.Scenario, Frames: v.Frames[:n]}
	for _, d := range v.Deploys {
		if d < n {
			out.Deploys = append(out.Deploys, d)
		}
	}
	out.seen = out.marked()
	return out
}

// shownFields are the names a policy's input may carry, each something
// the realistic page shows: the briefing, the dashboard's figures, charts,
// page and deploy markers, the levers. Anything else — BadBuildShare,
// CacheWarm, DemandPerS, Surge, Events, Seed, a run — is hidden state.
var shownFields = map[string]bool{
	// View and Briefing
	"Scenario": true, "Frames": true, "Deploys": true,
	"Name": true, "Start": true, "Minutes": true, "BootDelay": true, "Budget": true,
	// Shown
	"Minute": true, "Clock": true, "RequestsPerS": true, "AdmittedPerS": true, "ShedShare": true,
	"Serving": true, "Booting": true, "CacheHit": true, "MeanAgeS": true, "DBUtilization": true,
	"P99Ms": true, "ErrorRate": true, "Burn5m": true, "Burn1h": true, "BudgetRemaining": true,
	"Paged": true, "FleetCostPerH": true, "CostSoFar": true, "RecommendationsAvailable": true,
	"WarmupLeft": true, "RollbackLeft": true,
	// sim.Controls: the levers' positions
	"Controls": true, "FleetFloor": true, "Autoscaling": true, "TargetUtilization": true,
	"CacheTTL": true, "ShedLowPriority": true, "HeavyFeature": true,
}

// checkObservation refuses a type that could carry what the page does not
// show: every field, however deep, must be named in shownFields and be a
// number, a bool, a string, or a slice, array or struct of those. A
// pointer, map, interface, function or channel is refused whatever it
// points to, since it could reach a run (a *sim.Sim) or the seed.
func checkObservation(t reflect.Type) error {
	return checkShown(t, t.String())
}

func checkShown(t reflect.Type, path string) error {
	switch t.Kind() {
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
		reflect.Float32, reflect.Float64, reflect.String:
		return nil
	case reflect.Slice, reflect.Array:
		return checkShown(t.Elem(), path+"[]")
	case reflect.Struct:
		for i := range t.NumField() {
			f := t.Field(i)
			if f.Type == marksType {
				continue // a fold of the frames: marks.add takes only a Shown
			}
			if !shownFields[f.Name] {
				return fmt.Errorf("%w: %s.%s (%s) is not on the page", ErrHiddenState, path, f.Name, f.Type)
			}
			if err := checkShown(f.Type, path+"."+f.Name); err != nil {
				return err
			}
		}
		return nil
	}
	return fmt.Errorf("%w: %s is a %s, which could reach anything", ErrHiddenState, path, t.Kind())
}

// checkPolicy refuses, as the expert that sets par, a policy that could
// know more than the page shows: it must be a function whose inputs are
// observation-only (checkObservation), and a top-level one — a closure
// could have captured the seed, a run or the scenario's schedule.
func checkPolicy(p any) error {
	v := reflect.ValueOf(p)
	if v.Kind() != reflect.Func || v.IsNil() {
		return fmt.Errorf("%w: the expert must be a function of what the page shows, got %T", ErrHiddenState, p)
	}
	t := v.Type()
	for i := range t.NumIn() {
		if err := checkObservation(t.In(i)); err != nil {
			return err
		}
	}
	fn := runtime.FuncForPC(v.Pointer())
	if fn == nil {
		return fmt.Errorf("%w: the expert's function cannot be named", ErrHiddenState)
	}
	name := fn.Name()
	local := name[strings.LastIndex(name, "/")+1:]
	if closureName.MatchString(local) || strings.HasSuffix(local, "-fm") {
		return fmt.Errorf("%w: the expert %s is a closure or a bound method, which could have captured the seed", ErrHiddenState, name)
	}
	return nil
}

var marksType = reflect.TypeFor[marks]()

// closureName matches the runtime's names of function literals
// ("bots.F.func1", "bots.F.func1.2", "bots.glob..func1").
var closureName = regexp.MustCompile(`\.func\d+(\.|$)`)
