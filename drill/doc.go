// Package drill runs the on-call simulator (package sim) as a live
// service for a team's own monitoring: its metrics in the Prometheus
// exposition format, its levers over authenticated HTTP, and a
// postmortem at the end (docs/drill.md).
//
// A Drill lays a run of the model on the wall clock: simulated minute m
// takes the wall interval [start + m·Speed, start + (m+1)·Speed), from a
// minute of wall time (RealTime) down to MinSpeed. It is a pure function
// of its configuration, its start, the levers pulled and the instant its
// methods are given; Server is the thin runner that reads the clock,
// serves HTTP and ends the drill on a timer.
//
// A lever pulled during minute m takes effect at the start of minute m+1
// and is recorded with that minute, through the console's validation
// (sim.Action); the frames are those sim.Run gives for the recorded
// actions, so the drill's share link replays it in the console minute for
// minute.
//
// How counters advance: during the wall interval of a simulated minute
// every counter grows linearly, at the model's own per-second figure for
// that minute (requests, errors, cache hits, queries, observations). So
// rate() over any wall window gives back the model's per-second rates at
// every speed, and ratios of rates (the error ratio, the hit ratio) are
// the model's; increase() over a wall window is the model's count scaled
// by Speed/1m. What time compresses is the windows: a rule's 1h window
// covers 1h of wall time, 12 simulated hours at 5 s a minute. ScaleRules
// divides a rule file's windows and durations by the same factor, so the
// SRE workbook's burn-rate rules fire in a drill at the simulated minute
// they would in real time. Gauges show the minute under way. The wall
// clock is Prometheus's own: samples carry no timestamps.
//
//	cfg := drill.DefaultConfig() // mystery, 5 s a simulated minute, 127.0.0.1:8081
//	cfg.Token = drill.NewToken()
//	err := drill.Run(ctx, cfg) // until ctx is done
//
// Lever is the client of POST /lever that afloat drill lever uses.
package drill
