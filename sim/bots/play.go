package bots

import (
	"context"
	"fmt"

	"github.com/afloat/afloat/sim"
)

// Policy is a bot: what it does at the start of the next minute, given
// what it has seen. It must be a pure function of the view, returning
// actions whose Minute is v.Minute(); it is called once a minute from
// minute 1 on (minute 0 is on the dashboard before anyone can act).
type Policy func(v View) []sim.Action

// Run is one run played by a bot: its configuration (the bot's actions
// included, so that the API and a share link replay it), its frames and
// their score.
type Run struct {
	Config sim.Config
	Frames []sim.Frame
	Score  sim.Score
}

// Play runs the configuration's scenario, seed and length with the policy
// at the levers; cfg.Actions must be empty. It is safe for concurrent use.
func Play(cfg sim.Config, p Policy) (Run, error) {
	return PlayContext(context.Background(), cfg, p)
}

// PlayContext is Play that stops, with the context's error, when ctx is
// done.
func PlayContext(ctx context.Context, cfg sim.Config, p Policy) (Run, error) {
	return play(ctx, cfg, p, true)
}

// play is PlayContext that keeps the run's frames only if keep: a sweep
// wants the score alone, and not keeping a run's frames halves what a
// sweep allocates (most of its system time is the memory's).
func play(ctx context.Context, cfg sim.Config, p Policy, keep bool) (Run, error) {
	if len(cfg.Actions) > 0 {
		return Run{}, fmt.Errorf("%w: a bot plays a run without actions, got %d", sim.ErrInvalidConfig, len(cfg.Actions))
	}
	minutes, err := cfg.Length()
	if err != nil {
		return Run{}, err
	}
	sc, _ := sim.Lookup(cfg.Scenario)
	s, err := sim.New(sc, cfg.Seed, cfg.Noise)
	if err != nil {
		return Run{}, err
	}
	run := Run{Config: cfg}
	if keep {
		run.Frames = make([]sim.Frame, 0, minutes)
	}
	tally := sim.NewTally(sc)
	v := View{Scenario: briefing(sc, minutes), Frames: make([]Shown, 0, minutes)}
	for m := 0; m < minutes; m++ {
		if m%60 == 0 && ctx.Err() != nil {
			return Run{}, ctx.Err()
		}
		var acts []sim.Action
		if m > 0 {
			acts = p(v)
		}
		f, err := s.Step(acts)
		if err != nil {
			return Run{}, fmt.Errorf("bots: minute %d: %w", m, err)
		}
		run.Config.Actions = append(run.Config.Actions, acts...)
		tally.Add(f)
		if keep {
			run.Frames = append(run.Frames, f)
		}
		v.push(Mask(f))
		if f.Deploy { // the marker: whether the build is bad does not show
			v.Deploys = append(v.Deploys, m)
		}
	}
	run.Score = tally.Score()
	return run, nil
}
