package sim

import (
	"testing"

	"github.com/afloat/afloat/internal/queueing"
)

// fullFleet is the steady scenario with the largest fleet, 40 instances
// (640 workers), under surge-level traffic: the most work one minute does.
func fullFleet() Scenario {
	sc, _ := Lookup("steady")
	sc.BaseRate = 3000 // 3,750 req/s at noon: about 280 busy workers
	sc.Serving = MaxFleet
	sc.Controls.FleetFloor = MaxFleet
	return sc
}

// BenchmarkStep is one simulated minute of a 40-instance fleet, noise on.
func BenchmarkStep(b *testing.B) {
	s, err := New(fullFleet(), 1, true)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.Step(nil); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkScenario is a whole 240-minute surge run with noise and the
// golden action file; ns/minute is the figure to compare with
// BenchmarkStep.
func BenchmarkScenario(b *testing.B) {
	actions := []Action{
		Set(0, ControlTargetUtilization, 0.45),
		Set(30, ControlFleetFloor, 14),
		Set(100, ControlShedLowPriority, 1),
		Set(180, ControlShedLowPriority, 0),
	}
	cfg := Config{Scenario: "surge", Seed: 7, Noise: true, Actions: actions}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Run(cfg); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*240), "ns/minute")
}

var sinkC float64

// BenchmarkFloorErlangC640 is the floor under BenchmarkStep: the one
// Erlang C of a 640-worker fleet at the load BenchmarkStep sees, which no
// minute can avoid.
func BenchmarkFloorErlangC640(b *testing.B) {
	for b.Loop() {
		sinkC = queueing.ErlangC(280, 640)
	}
}

// BenchmarkPeerTextbookErlangB640 is what the textbook recursion alone
// would cost a minute at 640 workers (B_k = a·B_{k−1}/(k + a·B_{k−1}), a
// division per step).
func BenchmarkPeerTextbookErlangB640(b *testing.B) {
	for b.Loop() {
		sinkC = queueing.ErlangBRecursion(280, 640)
	}
}
