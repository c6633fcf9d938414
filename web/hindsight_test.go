package web

import (
	"fmt"
	"net/http/httptest"
	"testing"

	"github.com/afloat/afloat/sim"
)

// TestHindsightBoundsEveryFigure: the debrief's hindsight figure — "with
// perfect foresight of the seed" — is never above par, the runbook or any
// what-if the coach shows beside it, and par never above the runbook, on
// every scenario: for a player who did nothing on seeds 1–1,000, and one
// who followed the deploy-marker reflex (roll back the minute after every
// deploy marker) on seeds 1–200 (make test-long); 1–10 under -short. Each
// debrief runs par, the runbook, the coach and (once a seed) the
// hindsight search: about 2 minutes of CPU in all.
func TestHindsightBoundsEveryFigure(t *testing.T) {
	seeds, reflexSeeds := 1000, 200
	if testing.Short() {
		seeds, reflexSeeds = 10, 10
	}
	srv := newTestServer(t)
	for _, sc := range sim.Scenarios() {
		t.Run(sc.Name, func(t *testing.T) {
			t.Parallel()
			for seed := 1; seed <= seeds; seed++ {
				hindsightBounds(t, srv, sc.Name, uint32(seed), "nothing", "[]")
				if seed <= reflexSeeds {
					hindsightBounds(t, srv, sc.Name, uint32(seed), "the deploy-marker reflex", reflexActions(t, sc.Name, uint32(seed)))
				}
			}
		})
	}
}

// hindsightBounds checks one debrief's figures: hindsight ≤ par ≤ the
// runbook, and hindsight ≤ every what-if.
func hindsightBounds(t *testing.T, srv *httptest.Server, scenario string, seed uint32, player, actions string) {
	t.Helper()
	body := fmt.Sprintf(`{"scenario": %q, "seed": %d, "actions": %s, "coach": true}`, scenario, seed, actions)
	status, _, ans := call(t, srv, "POST", "/api/debrief", "application/json", []byte(body))
	if status != 200 {
		t.Fatalf("seed %d, %s: %d %v", seed, player, status, ans)
	}
	c := ans["coach"].(map[string]any)
	pts := func(m any) float64 { return m.(map[string]any)["score"].(map[string]any)["points"].(float64) }
	hs, par, rb := pts(c["hindsight"]), pts(c["par"]), pts(c["runbook"])
	if par > rb || hs > par || hs > rb {
		t.Fatalf("seed %d, %s: hindsight %v, par %v (%v), runbook %v", seed, player, hs, par, c["par"].(map[string]any)["bot"], rb)
	}
	for _, w := range c["what_ifs"].([]any) {
		if p := w.(map[string]any)["points"].(float64); hs > p {
			t.Fatalf("seed %d, %s: hindsight %v above a what-if shown beside it, %v: %v", seed, player, hs, p, w)
		}
	}
}

// reflexActions is the deploy-marker reflex on a seed, as the actions of a
// debrief body: Rollback the minute after every deploy marker of the run
// without actions (a rollback does not move later markers).
func reflexActions(t *testing.T, scenario string, seed uint32) string {
	t.Helper()
	frames, err := sim.Run(sim.Config{Scenario: scenario, Seed: seed, Noise: true})
	if err != nil {
		t.Fatal(err)
	}
	acts, sep := "[", ""
	for _, f := range frames {
		if f.Deploy && f.Minute+1 < len(frames) {
			acts += fmt.Sprintf(`%s{"minute": %d, "control": "rollback"}`, sep, f.Minute+1)
			sep = ", "
		}
	}
	return acts + "]"
}
