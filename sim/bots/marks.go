package bots

import "math"

// marks are what the bots look back for on the dashboards — the first
// minute a sign showed, the last minute a button ran, the surge's peak —
// kept as each minute is appended to a view. A policy is asked every
// minute and looked back over every minute before, which made a run
// quadratic in its length (a fifth of `afloat sim bots`' CPU with the
// 240-minute mystery morning); the runner folds each new minute in once
// instead.
//
// They carry nothing the frames do not: add takes only a Shown and the
// view's briefing, and a view whose marks were not folded from exactly its
// frames (one built by hand, or cut by Upto) has them folded again when
// read (View.marked). Minutes are frame indexes, as v.Frames[d:] counts
// them; −1 is "not yet".
type marks struct {
	n int // frames folded in; the zero value has none

	// The opening minute, which the signs are measured against.
	openRequests, openHit float64

	// The surge: requests surgeAbove over the daily curve drawn from the
	// opening minute. The curve is stepped by rotation, one minute a
	// frame, rather than by a sin a minute.
	curveOpen, sin, cos float64
	firstSurge          int
	surgePeak           float64 // the most requests since firstSurge

	lastPaged, lastRollback, lastWarmup, lastErrors int

	firstFlush          int // the cache's hit rate under half the opening minute's
	firstFlushSaturated int // … with the database saturated
	firstEmptySaturated int // the hit rate under 50 % with the database saturated
	firstAbove130       int // requests 30 % above the opening minute's
}

// rotation is the daily curve's step from one minute to the next.
var rotationSin, rotationCos = math.Sincos(2 * math.Pi / (24 * 60))

// add folds in the next frame of a view whose briefing is b, minute m.n.
func (m *marks) add(b *Briefing, f *Shown) {
	i := m.n
	if i == 0 {
		start := float64(b.Start)
		*m = marks{
			openRequests: f.RequestsPerS, openHit: f.CacheHit,
			curveOpen:  f.RequestsPerS / curve(start),
			firstSurge: -1, lastPaged: -1, lastRollback: -1, lastWarmup: -1, lastErrors: -1,
			firstFlush: -1, firstFlushSaturated: -1, firstEmptySaturated: -1, firstAbove130: -1,
		}
		m.sin, m.cos = math.Sincos(2 * math.Pi * (start/60 - 6) / 24)
	}
	if m.firstSurge < 0 && f.RequestsPerS > surgeAbove*m.curveOpen*(1+dailySwing*m.sin) {
		m.firstSurge = i
	}
	if m.firstSurge >= 0 {
		m.surgePeak = max(m.surgePeak, f.RequestsPerS)
	}
	m.sin, m.cos = m.sin*rotationCos+m.cos*rotationSin, m.cos*rotationCos-m.sin*rotationSin
	if f.Paged {
		m.lastPaged = i
	}
	if f.RollbackLeft > 0 {
		m.lastRollback = i
	}
	if f.WarmupLeft > 0 {
		m.lastWarmup = i
	}
	if f.ErrorRate > sloErrors {
		m.lastErrors = i
	}
	first := func(at *int, ok bool) {
		if *at < 0 && ok {
			*at = i
		}
	}
	first(&m.firstFlush, f.CacheHit < m.openHit/2)
	first(&m.firstFlushSaturated, f.CacheHit < m.openHit/2 && f.DBUtilization >= 0.99)
	first(&m.firstEmptySaturated, f.CacheHit < 0.5 && f.DBUtilization >= 0.99)
	first(&m.firstAbove130, f.RequestsPerS > 1.3*m.openRequests)
	m.n++
}

// push appends a minute to the view and folds it into the marks.
func (v *View) push(f Shown) {
	if v.seen.n != len(v.Frames) {
		v.seen = v.marked()
	}
	v.seen.add(&v.Scenario, &f)
	v.Frames = append(v.Frames, f)
}

// marked is the view's marks, folded again from its frames when they were
// not folded from exactly these.
func (v View) marked() marks {
	if v.seen.n == len(v.Frames) {
		return v.seen
	}
	var m marks
	for i := range v.Frames {
		m.add(&v.Scenario, &v.Frames[i])
	}
	return m
}
