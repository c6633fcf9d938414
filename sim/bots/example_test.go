package bots_test

import (
	"context"
	"fmt"

	"github.com/afloat/afloat/sim"
	"github.com/afloat/afloat/sim/bots"
)

// The runbook bot on the bad deploy: it rolls back when the page fires,
// and the coach finds that a rollback at the deploy's marker would have
// saved most of what the incident cost.
func Example() {
	cfg := sim.Config{Scenario: "bad-deploy", Seed: 7, Noise: true}
	rb, _ := bots.Play(cfg, bots.Runbook)
	fmt.Println("runbook:", rb.Config.Actions)
	par, _ := bots.Expert(context.Background(), cfg)
	fmt.Println("expert:", par.Config.Actions)
	g := bots.GradeScore(rb.Score, par.Score.Points, rb.Score.Points)
	fmt.Printf("runbook %.0f points, par %.0f: %d stars\n", rb.Score.Points, par.Score.Points, g.Stars)

	whatIfs, _ := bots.Coach(context.Background(), rb.Config, par.Config.Actions)
	w := whatIfs[0]
	fmt.Printf("%s to %s (%s): %.0f points fewer\n", w.Kind, w.Clock, w.Why, w.Gain)
	// Output:
	// runbook: [{29 rollback 0}]
	// expert: [{11 rollback 0}]
	// runbook 107 points, par 28: 2 stars
	// moved to 09:11 (deploy): 79 points fewer
}
