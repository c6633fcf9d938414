// Package loadgen is the open-loop load generator of afloat's network
// benchmarks: Spin offers a protocol's requests to a server at a fixed
// rate from one spinning thread and measures each answer from its
// scheduled time; HTTP1, Pong (Redis's PING) and GRPC are the protocols;
// PinSelf and PinProcess give the generator and the server a core each.
// Each run also says how far the machine disturbed it: the generator's own
// stalls and lateness (Result.Gaps, Result.Own) and the host's steal on
// every CPU (Result.Steal, Steal). It is the same instrument for afloat's
// services and for its peers', so that a comparison measures the services
// and not their clients.
//
//	r, err := loadgen.Spin(addr, loadgen.HTTP1(req), 64, 10_000, 10*time.Second)
//	fmt.Println(loadgen.Pct(r.Sched, 0.99)) // p99 from the schedule
//
// Only benchmarks import it; it is Linux-only (epoll, sched_setaffinity),
// and elsewhere its functions return an error.
package loadgen
