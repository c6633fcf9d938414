//go:build mutation

package chaos

import (
	"testing"
	"time"

	"github.com/afloat/afloat/quota/internal/breakage"
)

// The mutation checks: each plants a deliberate fault, which only a build
// with the tag mutation has (faults_mutation.go); make test runs them
// with -tags mutation.

// TestMutationsAreCaught: each deliberately broken component fails the
// checker — the checker can tell, so its silence on the real ones means
// something.
func TestMutationsAreCaught(t *testing.T) {
	// TestBoundIsApproached's, with a trickle while the buckets fill, so
	// that the token caches hold tokens when the surge comes.
	surge := boundSchedule(2)
	pause := &Schedule{
		Traffic: []Segment{{At: 0, Rates: rates(600, 300, 300)}, {At: 30 * s, Rates: rates(100, 900, 100)}},
		Outages: []Outage{{At: 20 * s, Down: 3 * s, Pause: true, Wake: 8 * s,
			Reconnect: map[string]time.Duration{"eu": 0, "us": 10 * s, "ap": 10 * s}}},
	}
	// The old leader wakes after its successor took over, and us and ap
	// go on asking it for twenty seconds more while every region wants
	// more than its share: renewals it would answer without a write
	// (covered) after its successor's count of their records has run out.
	wokenLeader := &Schedule{
		Traffic: []Segment{{At: 0, Rates: rates(300, 300, 300)}, {At: 26 * s, Rates: rates(900, 300, 300)}},
		Outages: []Outage{{At: 20 * s, Down: 3 * s, Pause: true, Wake: 5 * s,
			Reconnect: map[string]time.Duration{"eu": 0, "us": 20 * s, "ap": 20 * s}}},
	}
	for _, tc := range []struct {
		name  string
		b     breakage.Set
		sched *Schedule
		dup   string // Config.Duplicate
	}{
		{"renew refills", breakage.Set{RenewRefills: true}, nil, ""},
		{"return reused before confirmation", breakage.Set{ReuseBeforeConfirm: true}, nil, ""},
		{"no epoch fencing", breakage.Set{NoFencing: true}, pause, ""},
		{"full R to every region", breakage.Set{FullToEvery: true}, nil, ""},
		{"caches on top of a full bucket", breakage.Set{CachesOverBurst: true}, surge, ""},
		{"two agents of a region unfenced", breakage.Set{NoIncarnations: true}, nil, "eu"},
		{"answers without a write, unproven", breakage.Set{NoLeaderProof: true}, wokenLeader, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sum := mustRun(t, Config{Seed: 6, Duration: 120 * s, Schedule: tc.sched, Duplicate: tc.dup}, faults{tc.b})
			if sum.OK() {
				t.Fatalf("the checker found nothing wrong with %q", tc.name)
			}
			t.Logf("%d violations; first: %s", sum.Violations, sum.Messages[0])
			// The same schedule without the fault is clean.
			mustHold(t, mustRun(t, Config{Seed: 6, Duration: 120 * s, Schedule: tc.sched, Duplicate: tc.dup}))
		})
	}
}

// TestMutationCachesCaughtOnEverySeed: the caches' fault is caught only
// when a region's caches sit on a full bucket as the surge comes, so it
// is the one most easily hidden by a schedule that leaves a bucket short;
// TestMutationsAreCaught plants it on one seed, this on twenty.
func TestMutationCachesCaughtOnEverySeed(t *testing.T) {
	for seed := uint32(1); seed <= 20; seed++ {
		sum := mustRun(t, Config{Seed: seed, Duration: 100 * s, Schedule: boundSchedule(2)}, faults{breakage.Set{CachesOverBurst: true}})
		if sum.OK() {
			t.Fatalf("seed %d: the checker found nothing wrong with caches on top of a full bucket (worst window %.2f tokens over R·Δ + B)", seed, sum.WorstExcess)
		}
	}
}

// TestMutationLogRoundTrip: the checker reading the JSON log of a broken
// run (TestMutationsAreCaught's first) finds the violations it found live.
func TestMutationLogRoundTrip(t *testing.T) {
	if sum := logRoundTrip(t, Config{Seed: 6, Duration: 120 * s}, faults{breakage.Set{RenewRefills: true}}); sum.OK() {
		t.Fatal("a run with renewals that refill found nothing wrong: the round trip checks no violation")
	}
}

// TestScriptedMutationsAreCaught: the lab's verdict can say the bound
// broke: with each planted fault, the same script fails the checker.
func TestScriptedMutationsAreCaught(t *testing.T) {
	for _, b := range []breakage.Set{{RenewRefills: true}, {NoFencing: true}, {FullToEvery: true}} {
		sum := mustRun(t, scripted(t, Config{Seed: 11, Duration: 150 * s}, labActions()), faults{b})
		if sum.OK() {
			t.Fatalf("%+v: the checker found nothing wrong", b)
		}
	}
}

// TestCountedMutationsAreCaught: TestMutationsAreCaught's broken
// components fail the check of their counted logs too, at the agent's
// default interval (1 s) and at 100 ms: the slack the counts add does not
// hide the classic mistakes. The same runs unbroken pass
// (TestCountedLogHolds does the same for its runs).
func TestCountedMutationsAreCaught(t *testing.T) {
	surge := boundSchedule(2)
	pause := &Schedule{
		Traffic: []Segment{{At: 0, Rates: rates(600, 300, 300)}, {At: 30 * s, Rates: rates(100, 900, 100)}},
		Outages: []Outage{{At: 20 * s, Down: 3 * s, Pause: true, Wake: 8 * s,
			Reconnect: map[string]time.Duration{"eu": 0, "us": 10 * s, "ap": 10 * s}}},
	}
	for _, tc := range []struct {
		name  string
		b     breakage.Set
		sched *Schedule
		dup   string
	}{
		{"renew refills", breakage.Set{RenewRefills: true}, nil, ""},
		{"return reused before confirmation", breakage.Set{ReuseBeforeConfirm: true}, nil, ""},
		{"no epoch fencing", breakage.Set{NoFencing: true}, pause, ""},
		{"full R to every region", breakage.Set{FullToEvery: true}, nil, ""},
		{"caches on top of a full bucket", breakage.Set{CachesOverBurst: true}, surge, ""},
		{"two agents of a region unfenced", breakage.Set{NoIncarnations: true}, nil, "eu"},
	} {
		for _, every := range []time.Duration{time.Second, 100 * time.Millisecond} {
			t.Run(tc.name+"/"+every.String(), func(t *testing.T) {
				cfg := Config{Seed: 6, Duration: 120 * s, Schedule: tc.sched, Duplicate: tc.dup}
				_, res := countedCheck(t, cfg, every, faults{tc.b})
				if res.Violations == 0 {
					t.Fatalf("the counted check found nothing wrong with %q (worst excess %v, slack %v)", tc.name, res.WorstExcess, res.Slack)
				}
				t.Logf("%d violations; first: %s", res.Violations, res.Messages[0])
				_, res = countedCheck(t, cfg, every)
				if res.Violations != 0 {
					t.Fatalf("unbroken: %d violations: %v", res.Violations, res.Messages)
				}
			})
		}
	}
}
