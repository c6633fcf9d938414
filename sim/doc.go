// Package sim is the on-call simulator: a per-minute model of a web service
// — a load balancer in front of a fleet of instances, a cache in front of a
// database, a 99.9 % availability objective — built from textbook formulas
// (Erlang C queueing, TTL cache hit ratios, error budgets and burn rates,
// target-tracking autoscaling) and five scenarios to play on it.
//
// It is an educational model, not a tool for operational decisions: its
// constants are illustrative, and a real site calibrates every one of them
// on its own hardware and data.
//
// A run is a pure function of (scenario, seed, actions): the model reads no
// clock and no global random source, so a share link that carries those
// three replays the run minute for minute.
//
//	frames, err := sim.Run(sim.Config{
//		Scenario: "bad-deploy",
//		Seed:     7,
//		Noise:    true,
//		Actions:  []sim.Action{sim.Press(20, sim.ControlRollback)},
//	})
//
// To play minute by minute, step a Sim instead:
//
//	sc, _ := sim.Lookup("surge")
//	s, err := sim.New(sc, seed, true)
//	frame, err := s.Step(actionsForThisMinute)
//
// docs/model.md gives every formula with its source and every decision the
// specification made where the source documents left a point open.
package sim
