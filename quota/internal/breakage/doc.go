// Package breakage names the deliberate faults the chaos harness plants in
// the coordinator and the region limiter to prove that its checker catches
// each way of breaking the protocol (mutation checks). Being internal, it
// cannot be imported outside quota/..., so no user can switch one on.
package breakage
