package bots

import (
	"context"
	"testing"
	"time"

	"github.com/afloat/afloat/sim"
)

// BenchmarkPolicyBots1000Seeds is `afloat sim bots --all --seeds 1-1000`
// on one goroutine: the three policy bots (nothing, runbook, expert) over
// seeds 1–1000 of each of the five scenarios, 15,000 runs. Its time is the
// CPU time of the command (target: ≤ 5 s). cpu-s/op is the process's CPU
// time, which a busy shared machine inflates less than the wall clock.
func BenchmarkPolicyBots1000Seeds(b *testing.B) {
	defer reportCPU(b, cpuTime())
	for b.Loop() {
		for _, sc := range sim.ScenarioNames() {
			for _, bot := range []string{BotNothing, BotRunbook, BotExpert} {
				if _, err := Sweep(context.Background(), sc, bot, 1, 1000, 1); err != nil {
					b.Fatal(err)
				}
			}
		}
	}
}

// BenchmarkFloorRuns1000Seeds is the floor under it: the same 15,000 runs
// with no bot at the levers (sim.Run), scored.
func BenchmarkFloorRuns1000Seeds(b *testing.B) {
	defer reportCPU(b, cpuTime())
	for b.Loop() {
		for _, name := range sim.ScenarioNames() {
			sc, _ := sim.Lookup(name)
			for range 3 {
				for seed := uint32(1); seed <= 1000; seed++ {
					frames, err := sim.Run(sim.Config{Scenario: name, Seed: seed, Noise: true})
					if err != nil {
						b.Fatal(err)
					}
					_ = sim.ScoreFrames(sc, frames)
				}
			}
		}
	}
}

// reportCPU reports the process's CPU time since start per iteration, as
// cpu-s/op.
func reportCPU(b *testing.B, start time.Duration) {
	b.ReportMetric((cpuTime()-start).Seconds()/float64(b.N), "cpu-s/op")
}

// BenchmarkHindsight is the hindsight search on one seed of each scenario
// (target: ≤ 1 s, so that a debrief shows it on demand); each
// iteration takes the next seed from 1. max-ms is the slowest seed seen
// by the wall clock, max-cpu-ms by the process's CPU time (which a busy
// shared machine does not inflate). BenchmarkFloorRun is one plain run of
// the scenario: the ratio is the search's cost in runs.
func BenchmarkHindsight(b *testing.B) {
	for _, name := range sim.ScenarioNames() {
		b.Run(name, func(b *testing.B) {
			var worst, worstCPU time.Duration
			seed := uint32(0)
			for b.Loop() {
				seed++
				start, startCPU := time.Now(), cpuTime()
				if _, err := Hindsight(context.Background(), sim.Config{Scenario: name, Seed: seed, Noise: true}); err != nil {
					b.Fatal(err)
				}
				worst = max(worst, time.Since(start))
				worstCPU = max(worstCPU, cpuTime()-startCPU)
			}
			b.ReportMetric(float64(worst.Microseconds())/1000, "max-ms")
			b.ReportMetric(float64(worstCPU.Microseconds())/1000, "max-cpu-ms")
		})
	}
}

func BenchmarkFloorRun(b *testing.B) {
	for _, name := range sim.ScenarioNames() {
		b.Run(name, func(b *testing.B) {
			seed := uint32(0)
			for b.Loop() {
				seed++
				if _, err := sim.Run(sim.Config{Scenario: name, Seed: seed, Noise: true}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkCoach is the coach on a bad deploy with three actions, the
// expert's plan given (the debrief's what-ifs, after par).
func BenchmarkCoach(b *testing.B) {
	cfg := sim.Config{Scenario: "bad-deploy", Seed: 7, Noise: true}
	par, err := Expert(context.Background(), cfg)
	if err != nil {
		b.Fatal(err)
	}
	cfg.Actions = []sim.Action{sim.Set(5, sim.ControlTargetUtilization, 0.5), sim.Press(29, sim.ControlRollback), sim.Set(40, sim.ControlFleetFloor, 12)}
	for b.Loop() {
		if _, err := Coach(context.Background(), cfg, par.Config.Actions); err != nil {
			b.Fatal(err)
		}
	}
}
