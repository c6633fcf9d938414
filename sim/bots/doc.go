// Package bots plays the on-call simulator (package sim) by itself: the
// bots that give a player something to measure up to, and the coach that
// replays a player's run with one move changed.
//
// A bot reads only what a player sees — the realistic dashboards, the
// page, the deploy markers (View) — and acts through the same levers, so
// that its run is an action list any share link replays:
//
//   - Nothing never touches a lever;
//   - Runbook follows the scenario's runbook (Advise gives each step, the
//     training mode's hints quote them);
//   - Expert plays Reactive, which reacts to the dashboard and the
//     briefing; its score on a seed is par, and its runner refuses a
//     policy that could see hidden state (ErrHiddenState);
//   - Watch is the simple reactive policy the docs give a player.
//
// Hindsight is not a policy: it searches, knowing the seed's schedule,
// the timing and size of a few key actions — what perfect foresight would
// have scored, which the debrief shows beside par.
//
// Score a run with sim.ScoreFrames, grade it with GradeScore against par
// and the runbook, rank it against a bot's thousand seeds with
// Distribution.Percentile (Shipped holds them for every scenario), and ask
// Coach what a move at another minute would have saved:
//
//	par, err := bots.Expert(ctx, sim.Config{Scenario: "bad-deploy", Seed: 7, Noise: true})
//	rb, err := bots.Play(sim.Config{Scenario: "bad-deploy", Seed: 7, Noise: true}, bots.Runbook)
//	grade := bots.GradeScore(player, par.Score.Points, rb.Score.Points)
//	whatIfs, err := bots.Coach(ctx, playerConfig, par.Config.Actions)
//
// docs/model.md, "The score", gives the exchange rates of the score and
// the runbooks in full.
package bots
