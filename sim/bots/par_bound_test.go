package bots

import (
	"context"
	"testing"

	"github.com/afloat/afloat/sim"
)

// TestParNeverAboveTheRunbook: on seeds 1–1,000 of every scenario, par
// (Par) scores no worse than the runbook and no worse than the expert, is
// one of their runs, and says which; on mystery seed 36 — a morning on
// which the expert scores 3,639 against the runbook's 234 — it is the
// runbook's.
func TestParNeverAboveTheRunbook(t *testing.T) {
	ctx := context.Background()
	seeds := 1000
	if testing.Short() {
		seeds = 200 // make test; all 1,000 in make test-long
	}
	byRunbook := 0
	for _, sc := range sim.Scenarios() {
		for seed := 1; seed <= seeds; seed++ {
			cfg := cfgOf(sc.Name, uint32(seed))
			par, bot, err := Par(ctx, cfg)
			if err != nil {
				t.Fatal(err)
			}
			ex, rb := mustPlay(t, cfg, BotExpert).Score.Points, mustPlay(t, cfg, BotRunbook).Score.Points
			want := map[string]float64{BotExpert: ex, BotRunbook: rb}[bot]
			if p := par.Score.Points; p > rb || p > ex || p != want {
				t.Fatalf("%s seed %d: par %v by %q; the expert %v, the runbook %v", sc.Name, seed, p, bot, ex, rb)
			}
			if bot == BotRunbook {
				byRunbook++
			}
		}
	}
	if _, bot, err := Par(ctx, cfgOf("mystery", 36)); err != nil || bot != BotRunbook {
		t.Errorf("mystery seed 36: par by %q, %v; want the runbook's run", bot, err)
	}
	t.Logf("par is the runbook's run on %d of %d runs", byRunbook, seeds*len(sim.Scenarios()))
}
