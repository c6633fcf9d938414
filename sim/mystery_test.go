package sim

import (
	"reflect"
	"strings"
	"testing"
)

// TestMysteryMorningsAreDrawnWithinTheirWindows draws 2,000 mornings: each
// within the documented windows, the same for the same seed, quiet on at
// most 5 % of seeds, every incident and every pair drawn, a good build
// changing nothing but the marker.
func TestMysteryMorningsAreDrawnWithinTheirWindows(t *testing.T) {
	sc, err := Lookup("mystery")
	if err != nil {
		t.Fatal(err)
	}
	for _, word := range []string{"deploy at", "surge", "flush", "cache", "bad"} {
		if strings.Contains(strings.ToLower(sc.Briefing), word) {
			t.Errorf("the briefing names %q: %s", word, sc.Briefing)
		}
	}
	const seeds = 2000
	quiet, kinds := 0, map[string]int{}
	for seed := uint32(1); seed <= seeds; seed++ {
		m, ok := mustNew(t, sc, seed, true).Morning()
		again, _ := mustNew(t, sc, seed, false).Morning()
		if !ok || !reflect.DeepEqual(m, again) {
			t.Fatalf("seed %d: morning %+v, then %+v", seed, m, again)
		}
		if len(m.Incidents) == 0 {
			quiet++
		}
		kinds[strings.ReplaceAll(strings.Join(toStrings(m.Incidents), "+"), "-", "")]++
		if m.Deploy >= 0 && (m.Deploy < mysteryFirst || m.Deploy > mysteryLast) ||
			m.Flush >= 0 && (m.Flush < mysteryFirst || m.Flush > mysteryLast) {
			t.Fatalf("seed %d: %+v outside minutes %d–%d", seed, m, mysteryFirst, mysteryLast)
		}
		if m.Has(IncidentBadDeploy) != (m.BuildErrors > 0) || m.BuildErrors > 0 && (m.BuildErrors < mysteryErrMin || m.BuildErrors > mysteryErrMax) {
			t.Fatalf("seed %d: bad deploy %v with build errors %v", seed, m.Has(IncidentBadDeploy), m.BuildErrors)
		}
		if s := m.Surge; m.Has(IncidentSurge) != (s != nil) || s != nil && (s.Start < mysteryFirst || s.Start > mysteryLast || s.Peak < mysterySurge.PeakMin || s.Peak > mysterySurge.PeakMax || s.Ramp < mysterySurge.RampMin) {
			t.Fatalf("seed %d: surge %v with %+v", seed, m.Has(IncidentSurge), s)
		}
		if m.Has(IncidentFlush) != (m.Flush >= 0) {
			t.Fatalf("seed %d: flush %v at minute %d", seed, m.Has(IncidentFlush), m.Flush)
		}
	}
	if quiet > seeds/20 || quiet == 0 {
		t.Errorf("%d quiet mornings in %d seeds, want at most 5 %%", quiet, seeds)
	}
	for _, k := range []string{"baddeploy", "surge", "flush", "baddeploy+surge", "baddeploy+flush", "surge+flush"} {
		if kinds[k] < seeds/20 {
			t.Errorf("%s on %d seeds of %d, want at least 5 %%: %v", k, kinds[k], seeds, kinds)
		}
	}
}

func toStrings(in []Incident) []string {
	out := make([]string, len(in))
	for i, v := range in {
		out[i] = string(v)
	}
	return out
}

// TestGoodBuildChangesOnlyTheMarker finds a mystery seed whose deploy is
// of a good build: its frames are those of the same run without the
// deploy, but for the marker.
func TestGoodBuildChangesOnlyTheMarker(t *testing.T) {
	sc, _ := Lookup("mystery")
	for seed := uint32(1); seed < 200; seed++ {
		m, _ := mustNew(t, sc, seed, true).Morning()
		if m.Deploy < 0 || m.BuildErrors > 0 {
			continue
		}
		frames := mustRun(t, Config{Scenario: "mystery", Seed: seed, Noise: true})
		if !frames[m.Deploy].Deploy {
			t.Fatalf("seed %d: no marker at minute %d", seed, m.Deploy)
		}
		for _, f := range frames {
			if f.BadBuildShare != 0 || f.Deploy != (f.Minute == m.Deploy) {
				t.Fatalf("seed %d minute %d: bad build share %v, marker %v", seed, f.Minute, f.BadBuildShare, f.Deploy)
			}
		}
		return
	}
	t.Fatal("no good deploy in seeds 1–199")
}
