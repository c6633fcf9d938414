package sim

import (
	"slices"

	"github.com/afloat/afloat/internal/rng"
)

// Incident names something that went wrong on a mystery morning.
type Incident string

// The incidents a mystery morning can hold.
const (
	IncidentBadDeploy Incident = "bad-deploy" // a deploy whose build fails some of its requests and needs more CPU
	IncidentSurge     Incident = "surge"      // a traffic surge
	IncidentFlush     Incident = "flush"      // the whole cache flushed
)

// Morning is what the seed drew for a mystery run: which incidents, when,
// and how bad. The player is told none of it; the deploy's marker shows on
// the dashboards, whether its build is bad does not. A debrief reveals it
// once the run is over.
type Morning struct {
	Incidents []Incident `json:"incidents"` // none on a quiet morning
	// Deploy is the minute a deploy went out, -1 for none; BuildErrors the
	// share of its requests the new build fails, 0 for a good build.
	Deploy      int     `json:"deploy_minute"`
	BuildErrors float64 `json:"build_errors"`
	Flush       int     `json:"flush_minute"` // -1 for none
	Surge       *Surge  `json:"surge,omitempty"`
}

// Has reports whether the morning holds the incident.
func (m Morning) Has(i Incident) bool { return slices.Contains(m.Incidents, i) }

// The windows a mystery morning is drawn from, in minutes after the
// scenario starts (docs/model.md, "Mystery" gives the reasons).
const (
	mysteryQuiet   = 0.04 // a quiet morning: nothing goes wrong
	mysteryPairs   = 0.30 // two incidents at once; the rest of the seeds get one
	mysteryDecoy   = 0.5  // without a bad deploy, the chance that a good one goes out
	mysteryFirst   = 10   // the earliest minute anything happens (10:10)
	mysteryLast    = 100  // the latest start of a deploy or a flush (11:40)
	mysteryErrMin  = 0.01 // the bad build fails 1 % to 8 % of its requests
	mysteryErrMax  = 0.08
	mysteryStart   = 10 * 60
	mysteryMinutes = 180
)

// mysterySurge is the range a mystery surge is drawn from: it starts in
// the same window as the other incidents and is smaller than the surge
// scenario's, since boots take the usual 3 minutes and nothing warned of it.
var mysterySurge = SurgeRange{
	StartMin: mysteryFirst, StartMax: mysteryLast,
	PeakMin: 1.8, PeakMax: 3,
	RampMean:   6,
	PlateauMin: 20, PlateauMax: 40,
	Decay: 45,
}

// drawMorning draws a mystery morning, always in the same order (the kind
// of morning, then the deploy, the flush, the surge, each drawn whether or
// not it happens), so that a seed always gives the same morning and one
// draw does not shift the others.
func drawMorning(r *rng.Rand) Morning {
	kind := r.Float64()
	deployAt := int(r.Uniform(mysteryFirst, mysteryLast+1))
	errs := r.Uniform(mysteryErrMin, mysteryErrMax)
	decoy := r.Float64() < mysteryDecoy
	flushAt := int(r.Uniform(mysteryFirst, mysteryLast+1))
	surge := mysterySurge.draw(r)

	all := []Incident{IncidentBadDeploy, IncidentSurge, IncidentFlush}
	m := Morning{Incidents: []Incident{}, Deploy: -1, Flush: -1}
	switch {
	case kind < mysteryQuiet:
	case kind < mysteryQuiet+mysteryPairs:
		// Leave one of the three out, each a third of the pairs.
		out := int(3 * (kind - mysteryQuiet) / mysteryPairs)
		for i, inc := range all {
			if i != min(out, 2) {
				m.Incidents = append(m.Incidents, inc)
			}
		}
	default:
		one := int(3 * (kind - mysteryQuiet - mysteryPairs) / (1 - mysteryQuiet - mysteryPairs))
		m.Incidents = append(m.Incidents, all[min(one, 2)])
	}
	switch {
	case m.Has(IncidentBadDeploy):
		m.Deploy, m.BuildErrors = deployAt, errs
	case decoy:
		m.Deploy = deployAt // a good build: its marker shows all the same
	}
	if m.Has(IncidentFlush) {
		m.Flush = flushAt
	}
	if m.Has(IncidentSurge) {
		m.Surge = &surge
	}
	return m
}

// events are the morning's scheduled events, in minute order.
func (m Morning) events() []Event {
	var out []Event
	if m.Deploy >= 0 {
		out = append(out, Event{Minute: m.Deploy, Kind: EventDeploy, Errors: m.BuildErrors})
	}
	if m.Flush >= 0 {
		out = append(out, Event{Minute: m.Flush, Kind: EventFlush})
	}
	slices.SortStableFunc(out, func(a, b Event) int { return a.Minute - b.Minute })
	return out
}
