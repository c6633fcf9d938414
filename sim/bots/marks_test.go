package bots

import (
	"math"
	"testing"

	"github.com/afloat/afloat/sim"
)

// scanMarks is the simple reference for marks: each mark found by looking
// back over every minute of the view, as the bots did before the runner
// kept them.
func scanMarks(v View) marks {
	ref := marks{n: len(v.Frames), firstSurge: -1, lastPaged: -1, lastRollback: -1, lastWarmup: -1, lastErrors: -1,
		firstFlush: -1, firstFlushSaturated: -1, firstEmptySaturated: -1, firstAbove130: -1}
	if len(v.Frames) == 0 {
		return marks{}
	}
	open := v.Frames[0]
	start := float64(v.Scenario.Start)
	ref.openRequests, ref.openHit, ref.curveOpen = open.RequestsPerS, open.CacheHit, open.RequestsPerS/curve(start)
	theta := 2 * math.Pi * (start/60 - 6) / 24
	step := 2 * math.Pi / (24 * 60)
	sin, cos := math.Sincos(theta)
	dsin, dcos := math.Sincos(step)
	first := func(at *int, i int, ok bool) {
		if *at < 0 && ok {
			*at = i
		}
	}
	for i, f := range v.Frames {
		first(&ref.firstSurge, i, f.RequestsPerS > surgeAbove*ref.curveOpen*(1+dailySwing*sin))
		if ref.firstSurge >= 0 {
			ref.surgePeak = max(ref.surgePeak, f.RequestsPerS)
		}
		sin, cos = sin*dcos+cos*dsin, cos*dcos-sin*dsin
		for _, last := range []struct {
			at *int
			ok bool
		}{{&ref.lastPaged, f.Paged}, {&ref.lastRollback, f.RollbackLeft > 0}, {&ref.lastWarmup, f.WarmupLeft > 0}, {&ref.lastErrors, f.ErrorRate > sloErrors}} {
			if last.ok {
				*last.at = i
			}
		}
		first(&ref.firstFlush, i, f.CacheHit < open.CacheHit/2)
		first(&ref.firstFlushSaturated, i, f.CacheHit < open.CacheHit/2 && f.DBUtilization >= 0.99)
		first(&ref.firstEmptySaturated, i, f.CacheHit < 0.5 && f.DBUtilization >= 0.99)
		first(&ref.firstAbove130, i, f.RequestsPerS > 1.3*open.RequestsPerS)
	}
	ref.sin, ref.cos = sin, cos
	return ref
}

// TestMarksMatchAScan: at every minute of runs of every scenario, played
// by every policy bot and by Watch, the marks the runner keeps as it
// appends each minute equal those found by scanning the view whole, and
// so do those of a view cut by Upto and of one built by hand without them
// (which View.marked folds again).
func TestMarksMatchAScan(t *testing.T) {
	seeds := []uint32{1, 2, 3, 7, 11, 19, 23, 42}
	if testing.Short() {
		seeds = seeds[:4]
	}
	for _, sc := range sim.ScenarioNames() {
		scn := mustLookup(t, sc)
		for _, seed := range seeds {
			for name, p := range map[string]Policy{"runbook": Runbook, "expert": Reactive, "watch": Watch} {
				r, err := Play(cfgOf(sc, seed), p)
				if err != nil {
					t.Fatal(err)
				}
				whole := ViewOf(scn, len(r.Frames), r.Frames)
				var kept View
				kept.Scenario = whole.Scenario
				for n := 0; n <= len(whole.Frames); n++ {
					byHand := View{Scenario: whole.Scenario, Frames: whole.Frames[:n]}
					want := scanMarks(byHand)
					for _, c := range []struct {
						how string
						got marks
					}{{"kept", kept.seen}, {"Upto", whole.Upto(n).seen}, {"by hand", byHand.marked()}} {
						if c.got != want {
							t.Fatalf("%s seed %d, %s, minute %d: marks %s %+v, want (a scan) %+v", sc, seed, name, n, c.how, c.got, want)
						}
					}
					if n < len(whole.Frames) {
						kept.push(whole.Frames[n])
					}
				}
			}
		}
	}
}
