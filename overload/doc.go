// Package overload is the lab of the "sudden server death": a
// processor-sharing server in fluid time, the seed's two games, and the
// "World Cup" day that knocks an unprotected server over — each run
// through the real bulkhead (package bulkhead), driven in virtual time, so
// the lab shows what the middleware does and not a copy of it.
//
//	r, err := overload.Run(overload.Config{
//		Profile: "worldcup", Inside: 100, Outside: 100, Alpha: math.NaN(),
//	})
//	fmt.Println(r.Summary.Goodput, r.Summary.WorstResponse)
//
//	runs, err := overload.Compare("worldcup", seed) // no limit, 100/100, 100/500, 100/1000, adaptive
//
// A run is deterministic: arrivals are drawn from the seed, and time is a
// parameter, never the wall clock.
package overload
