package bots

import (
	"context"
	"fmt"
	"testing"

	"github.com/afloat/afloat/sim"
)

// TestCoachTipsAreRight: over seeds 1–200 of every scenario, for a player
// who follows the runbook and one who rolls back the minute after every
// deploy marker, each tip of the coach names a sign shown before its move
// and that the move answers: never a sign at or after the move, never a
// bad deploy's marker the run had already rolled back, never a sign of
// trouble for a move that relaxes a lever; no tip sets a lever to where
// it already was; no two tips of one debrief share their move or their
// saving. Seeds 1–50 under -short (make test), all 200 in make test-long.
func TestCoachTipsAreRight(t *testing.T) {
	ctx := context.Background()
	seeds := uint32(200)
	if testing.Short() {
		seeds = 50
	}
	tips := 0
	for _, name := range sim.ScenarioNames() {
		for seed := uint32(1); seed <= seeds; seed++ {
			cfg := cfgOf(name, seed)
			par, _, err := Par(ctx, cfg)
			if err != nil {
				t.Fatal(err)
			}
			players := map[string][]sim.Action{
				"runbook": mustPlay(t, cfg, BotRunbook).Config.Actions,
				"reflex":  deployReflex(t, cfg),
			}
			for player, acts := range players {
				cfg.Actions = acts
				whatIfs, err := Coach(ctx, cfg, par.Config.Actions)
				if err != nil {
					t.Fatal(err)
				}
				frames, err := sim.Run(cfg)
				if err != nil {
					t.Fatal(err)
				}
				moves, savings := map[string]bool{}, map[float64]bool{}
				for _, w := range whatIfs {
					tips++
					where := func() string {
						return fmt.Sprintf("%s seed %d, %s: %s %s at %d", name, seed, player, w.Kind, w.Action.Control, w.To)
					}
					if moves[w.move()] || savings[w.Points] {
						t.Errorf("%s: a second tip with the same move or the same saving (%v)", where(), w.Points)
					}
					moves[w.move()], savings[w.Points] = true, true
					if w.Kind == "removed" {
						continue
					}
					if w.Sign == nil || w.Sign.Minute >= w.To {
						t.Errorf("%s: sign %+v, want one shown before the move", where(), w.Sign)
						continue
					}
					before := frames[0].Controls
					if w.To > 0 {
						before = controlsBefore(t, cfg, w)
					}
					button := w.Action.Control == sim.ControlRollback || w.Action.Control == sim.ControlWarmup
					if !button && before.With(w.Action) == before {
						t.Errorf("%s: sets %v to %v, where it already was", where(), w.Action.Control, w.Action.Value)
					}
					if !protective(w.Action, before) && w.Sign.Kind != SignCalm && w.Sign.Kind != SignBriefing {
						t.Errorf("%s: relaxes the lever, and names a sign of trouble, %+v", where(), *w.Sign)
					}
					if w.Sign.Kind == SignDeploy {
						for _, a := range w.Actions {
							if a.Control == sim.ControlRollback && a.Minute > w.Sign.Minute && a.Minute < w.To {
								t.Errorf("%s: names the deploy marker of %s, rolled back at minute %d", where(), w.Sign.Clock, a.Minute)
							}
						}
					}
				}
			}
		}
	}
	if tips < int(seeds)*5 {
		t.Errorf("%d tips over every scenario's %d seeds: the coach hardly coached", tips, seeds)
	}
}

// deployReflex rolls back the minute after every deploy marker of the run
// without actions.
func deployReflex(t *testing.T, cfg sim.Config) []sim.Action {
	t.Helper()
	frames, err := sim.Run(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var acts []sim.Action
	for _, f := range frames {
		if f.Deploy && f.Minute+1 < len(frames) {
			acts = append(acts, sim.Press(f.Minute+1, sim.ControlRollback))
		}
	}
	return acts
}

// controlsBefore is where the levers stood in the what-if's own run just
// before its move, by the model: the frame of the minute before, run
// without the move.
func controlsBefore(t *testing.T, cfg sim.Config, w WhatIf) sim.Controls {
	t.Helper()
	var acts []sim.Action
	for _, a := range w.Actions {
		if a.Minute < w.To {
			acts = append(acts, a)
		}
	}
	cfg.Actions = acts
	frames, err := sim.Run(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return frames[w.To-1].Controls
}
