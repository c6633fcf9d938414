// Package overload is the lab of the "sudden server death": a
// processor-sharing server in fluid time, the seed's two games in whole
// periods, the "World Cup" day that knocks an unprotected server over, and
// the asynchronous server that takes a shared database down — each run
// through the real bulkhead (package bulkhead), driven in virtual time, so
// the lab shows what the middleware does and not a copy of it.
//
//	r, err := overload.Run(overload.Config{Profile: "worldcup", Inside: 100, Outside: 100})
//	fmt.Println(r.Summary.Goodput, r.Summary.WorstResponse)
//
//	// no limit, 100/100, 100/500, 100/1000, adaptive
//	runs, err := overload.Compare(overload.Config{Profile: "worldcup", Seed: 1})
//
//	// afloat's hypothesis for the seed's death, tested: no limit and no
//	// retries, on the linear server (it recovers) and the non-linear one
//	vs, err := overload.VariantsContext(ctx, overload.Config{Profile: "worldcup", Seed: 1})
//
//	g, err := overload.PlayGame("game1", 8) // the grid, period by period
//
// The zero value of a Config's fields is the default: no bulkhead, the
// seed's linear server (twice the requests in work, each twice as slow),
// and the profile's clients. Alpha above 0 makes the server lose capacity
// as well (the non-linear mode); Retries and Timeout change the clients.
//
// A run is deterministic: arrivals are drawn from the seed, and time is a
// parameter, never the wall clock. The live HTTP comparison on a real
// machine is package overload/live.
package overload
