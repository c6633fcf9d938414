package overload

import (
	"fmt"
	"math"
	"testing"
)

// The adaptive limit is tested on the overload2x and healthy profiles: a
// server whose knee is 50 requests in work (100 ms each, lognormal with a
// variation of 30 %), offered 1,000 and 300 requests a second. The knee is
// the right value: below it the service is idle some of the time, above it
// requests queue inside it.
const knee = 50.0

func adaptiveRun(t *testing.T, profile string, initial int, alpha float64, seed uint32, seconds float64) Result {
	t.Helper()
	return mustRun(t, Config{Profile: profile, Inside: initial, Outside: 100, Adaptive: true, Alpha: alpha, Seed: seed, Duration: seconds})
}

// TestAdaptiveConverges: from 20 or from 1,000, at 1,000 requests a second
// on the linear server, the limit is within ±10 % of the knee within 5
// simulated seconds and stays there: the mean of seconds 5–10 is within
// ±10 %, and so are at least 97 % of all the 5-second means of the next
// ten minutes, none off by more than 15 %.
func TestAdaptiveConverges(t *testing.T) {
	seeds, seconds := []uint32{1, 2, 3}, 600.0
	switch {
	case raceEnabled:
		seeds, seconds = seeds[:1], 120 // the race detector makes the model ten times slower
	case testing.Short():
		seeds = seeds[:1] // make test; make test-long runs all three
	}
	for _, seed := range seeds {
		for _, initial := range []int{20, 1000} {
			t.Run(fmt.Sprintf("seed%d-from%d", seed, initial), func(t *testing.T) {
				r := adaptiveRun(t, "overload2x", initial, 0, seed, seconds)
				in, n := 0, 0
				for s := 5; s+5 <= len(r.Series); s++ {
					mean := 0.0
					for _, sec := range r.Series[s : s+5] {
						mean += sec.Limit / 5
					}
					off := math.Abs(mean-knee) / knee
					if s == 5 && off > 0.10 {
						t.Fatalf("seconds 5–10: mean limit %.1f, want within ±10 %% of %v", mean, knee)
					}
					if off > 0.15 {
						t.Fatalf("seconds %d–%d: mean limit %.1f, want within ±15 %% of %v", s, s+5, mean, knee)
					}
					if off <= 0.10 {
						in++
					}
					n++
				}
				if share := float64(in) / float64(n); share < 0.97 {
					t.Errorf("%.1f %% of 5-second means within ±10 %% of the knee, want at least 97 %%", 100*share)
				}
				// Goodput: the server can answer half the offered load.
				if g := r.Summary.Goodput; g < 0.48 {
					t.Errorf("goodput %.3f of the offered load, want at least 0.48 (the server's capacity is 0.5)", g)
				}
			})
		}
	}
}

// TestAdaptiveDoesNotCreep: ten minutes of sustained overload do not raise
// the limit: the last five minutes average no higher than the first.
func TestAdaptiveDoesNotCreep(t *testing.T) {
	alphas := []float64{0, 0.5}
	if raceEnabled {
		alphas = alphas[:1]
	}
	for _, alpha := range alphas {
		r := adaptiveRun(t, "overload2x", 20, alpha, 3, 0)
		early, late, highest := 0.0, 0.0, 0.0
		for _, s := range r.Series[60:300] {
			early += s.Limit / 240
		}
		for _, s := range r.Series[300:] {
			late += s.Limit / 300
			highest = max(highest, s.Limit)
		}
		t.Logf("alpha %v: mean limit %.1f in minutes 1–5, %.1f in minutes 5–10, highest second %.1f", alpha, early, late, highest)
		if late > early*1.05 || late > 1.1*knee || highest > 1.25*knee {
			t.Errorf("alpha %v: the limit crept: %.1f, then %.1f, highest %.1f (knee %v)", alpha, early, late, highest, knee)
		}
	}
}

// TestAdaptiveNeverRejectsHealthyTraffic: at 60 % of capacity the limit
// refuses nothing — once it has grown past the demand when it starts
// below it — for ten minutes: it never steps down to probe while nobody is
// refused.
func TestAdaptiveNeverRejectsHealthyTraffic(t *testing.T) {
	for _, initial := range []int{20, 1000} {
		r := adaptiveRun(t, "healthy", initial, 0.5, 4, 0)
		for _, s := range r.Series[5:] {
			if s.Rejected > 0 {
				t.Fatalf("from %d: %d refused at second %d of healthy traffic (limit %.1f)", initial, s.Rejected, s.T, s.Limit)
			}
		}
		if initial == 1000 && r.Summary.Rejected > 0 {
			t.Errorf("from 1000: %d refused, want none", r.Summary.Rejected)
		}
		if r.Summary.Goodput < 0.999 {
			t.Errorf("from %d: goodput %.4f, want all but a handful", initial, r.Summary.Goodput)
		}
	}
}

// TestAdaptiveOnMetastableServer: on the server that loses efficiency above
// its knee, the limit converges from below as fast; from 1,000 it first
// lets the server collapse — requests admitted before the first one
// finishes — and converges once they have drained.
func TestAdaptiveOnMetastableServer(t *testing.T) {
	r := adaptiveRun(t, "overload2x", 20, 0.5, 1, 60)
	mean := 0.0
	for _, s := range r.Series[5:60] {
		mean += s.Limit / 55
	}
	if mean < 0.9*knee || mean > 1.1*knee {
		t.Errorf("from 20: mean limit %.1f from 5 s to 60 s, want within ±10 %% of %v", mean, knee)
	}
	r = adaptiveRun(t, "overload2x", 1000, 0.5, 1, 60)
	settled := -1
	for s := range r.Series {
		if l := r.Series[s].Limit; l >= 0.8*knee && l <= 1.2*knee {
			settled = s
			break
		}
	}
	t.Logf("from 1000 on the metastable server: near the knee after %d s", settled)
	if settled < 0 || settled > 30 {
		t.Errorf("from 1000: near the knee after %d s, want within 30 s", settled)
	}
}
