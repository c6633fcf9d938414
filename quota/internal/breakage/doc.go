// Package breakage names the deliberate faults the chaos harness plants in
// the coordinator and the region limiter to prove that its checker
// catches each way of breaking the protocol (mutation checks). Only a
// build with the tag mutation plants them — coordinator.OpenBroken,
// region.NewBroken and the harness's own fault wiring exist only there —
// so no release consults a fault; and being internal, the package cannot
// be imported outside quota/....
//
//	go test -tags mutation -run Mutation ./quota/chaos
package breakage
