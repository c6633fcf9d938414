package overload

import (
	"errors"
	"math"
	"reflect"
	"testing"
)

func mustRun(t *testing.T, c Config) Result {
	t.Helper()
	r, err := Run(c)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestGame1: two CPUs, 3 units a request, one request a period, no limit.
// Concurrency and response time grow without bound; the first request
// already takes 4 periods instead of 3.
func TestGame1(t *testing.T) {
	r := mustRun(t, Config{Profile: "game1", Alpha: math.NaN()})
	if got := r.Responses[0]; got <= 3 || got > 4 {
		t.Errorf("the first request took %v periods, want more than 3, at most 4", got)
	}
	// Load is 150 % of capacity: a third of a request piles up each period.
	for _, tc := range []struct{ period, atLeast int }{{10, 3}, {30, 9}, {59, 19}} {
		if c := r.Series[tc.period].Concurrency; c < tc.atLeast {
			t.Errorf("period %d: %d in the system, want at least %d (growing without bound)", tc.period, c, tc.atLeast)
		}
	}
	n := len(r.Responses)
	if n < 20 || r.Responses[n-1] < 3*r.Responses[0] {
		t.Errorf("responses grew from %v to %v over %d requests; want them to keep growing", r.Responses[0], r.Responses[n-1], n)
	}
	for i := 1; i < n; i++ {
		if r.Responses[i] < r.Responses[i-1]-1e-9 {
			t.Fatalf("request %d took %v, faster than request %d's %v: time inside should only grow", i, r.Responses[i], i-1, r.Responses[i-1])
		}
	}
}

// TestGame2: the bouncer — at most 2 inside, 2 waiting, and a newcomer
// who sees 2 waiting goes home. Every admitted request is served within 6
// periods, twice the nominal, forever.
func TestGame2(t *testing.T) {
	r := mustRun(t, Config{Profile: "game2", Inside: 2, Outside: 2, Alpha: math.NaN()})
	for _, s := range r.Series {
		if s.Concurrency > 2 || s.Queued > 2 || s.Concurrency+s.Queued > 4 {
			t.Fatalf("period %d: %d inside, %d waiting; want at most 2, 2 and 4", s.T, s.Concurrency, s.Queued)
		}
	}
	for i, took := range r.Responses {
		if took > 6+1e-9 {
			t.Fatalf("request %d took %v periods, want at most 6", i, took)
		}
	}
	if len(r.Responses) < 35 || r.Summary.Rejected < 15 {
		t.Errorf("%d served, %d turned away in 60 periods; want about two thirds served", len(r.Responses), r.Summary.Rejected)
	}
	if w := r.Summary.WorstResponse; math.Abs(w-2) > 1e-9 {
		t.Errorf("worst response %v× nominal, want exactly 2×", w)
	}
}

// TestWorldCup: the seed's experiment. Without a limit the half-time peak
// knocks the server over and concurrency keeps rising long after it; 100
// inside and 100 outside keeps every answer within twice the nominal;
// longer queues grow a long tail.
func TestWorldCup(t *testing.T) {
	runs, err := Compare("worldcup", 1)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]Summary{}
	for _, r := range runs {
		byName[r.Summary.Run] = r.Summary
	}
	none, r100, r500, r1000, adaptive := byName["no limit"], byName["100/100"], byName["100/500"], byName["100/1000"], byName["adaptive"]

	p, _ := LookupProfile("worldcup")
	noneRun := runs[0]
	atPeakEnd := noneRun.Series[int(p.PeakEnd)].Concurrency
	atEnd := noneRun.Series[len(noneRun.Series)-1].Concurrency
	t.Logf("no limit: useful throughput falls to %.0f %% of capacity in the worst minute after half-time; goodput %.1f %%; concurrency %d at the end of the peak, %d at the end",
		100*none.LowestUsefulMinute, 100*none.Goodput, atPeakEnd, atEnd)
	if none.LowestUsefulMinute > 0.25 || none.RecoverySeconds >= 0 {
		t.Errorf("no limit: worst useful minute %.0f %% of capacity, recovery %v s; want a collapse that does not recover", 100*none.LowestUsefulMinute, none.RecoverySeconds)
	}
	if atEnd <= atPeakEnd || float64(none.PeakAt) <= p.PeakEnd {
		t.Errorf("no limit: concurrency %d after the peak, %d at the end, highest at %d s; want it still rising after the peak", atPeakEnd, atEnd, none.PeakAt)
	}

	if r100.WorstResponse > 2+1e-6 || r100.Timeouts != 0 || r100.Goodput < 0.95 || r100.RecoverySeconds != 0 {
		t.Errorf("100/100: worst %.2f× nominal, %d timeouts, goodput %.3f, recovery %v; want ≤ 2×, none, ≥ 95 %%, at once",
			r100.WorstResponse, r100.Timeouts, r100.Goodput, r100.RecoverySeconds)
	}
	if r100.PeakConcurrency > 100 || r100.Rejected == 0 {
		t.Errorf("100/100: peak concurrency %d, %d rejected; want ≤ 100 and brief rejections at the peaks", r100.PeakConcurrency, r100.Rejected)
	}
	// The long tail: fewer rejections, slower answers.
	if !(r500.WorstResponse >= 5.5 && r1000.WorstResponse >= 10 && r500.Rejected < r100.Rejected && r1000.Rejected < r500.Rejected) {
		t.Errorf("long tail: worst %.1f× and %.1f× nominal, rejected %d, %d, %d; want ≥ 5.5× and ≥ 10×, and fewer rejections as the queue grows",
			r500.WorstResponse, r1000.WorstResponse, r100.Rejected, r500.Rejected, r1000.Rejected)
	}
	if r1000.Wasted == 0 || r1000.Goodput >= r100.Goodput {
		t.Errorf("100/1000: %d wasted, goodput %.3f; want work wasted on clients who gave up, and less goodput than 100/100 (%.3f)", r1000.Wasted, r1000.Goodput, r100.Goodput)
	}
	if adaptive.Goodput < 0.95 || adaptive.Wasted != 0 || adaptive.RecoverySeconds < 0 {
		t.Errorf("adaptive: goodput %.3f, %d wasted, recovery %v; want ≥ 95 %%, none, a recovery", adaptive.Goodput, adaptive.Wasted, adaptive.RecoverySeconds)
	}
}

func TestRunsAreDeterministic(t *testing.T) {
	c := Config{Profile: "overload2x", Inside: 100, Outside: 50, Adaptive: true, Seed: 9, Alpha: math.NaN(), Duration: 30}
	a, b := mustRun(t, c), mustRun(t, c)
	if !reflect.DeepEqual(a.Series, b.Series) || !reflect.DeepEqual(a.Summary, b.Summary) {
		t.Fatal("two runs of one configuration differ")
	}
	c.Seed = 10
	if d := mustRun(t, c); reflect.DeepEqual(a.Series, d.Series) {
		t.Fatal("seeds 9 and 10 gave the same run")
	}
}

func TestConfigErrors(t *testing.T) {
	nan := math.NaN()
	for i, c := range []Config{
		{Profile: "derby", Alpha: nan},
		{Profile: "worldcup", Inside: -1, Alpha: nan},
		{Profile: "worldcup", Inside: 70000, Alpha: nan},
		{Profile: "worldcup", Inside: 10, Outside: -5, Alpha: nan},
		{Profile: "worldcup", Outside: 10, Alpha: nan},
		{Profile: "worldcup", Adaptive: true, Alpha: nan},
		{Profile: "worldcup", Alpha: -1},
		{Profile: "worldcup", Alpha: nan, Timeout: -1},
		{Profile: "worldcup", Alpha: nan, Timeout: math.Inf(1)},
		{Profile: "worldcup", Alpha: nan, Duration: -3},
	} {
		if _, err := Run(c); !errors.Is(err, ErrConfig) {
			t.Errorf("step %d: Run(%+v) = %v, want ErrConfig", i, c, err)
		}
	}
}
