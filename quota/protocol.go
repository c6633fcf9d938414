package quota

import "time"

// The protocol between regions and the coordinator is four messages. Each
// may be lost, delayed, duplicated or reordered; each is safe to handle
// twice.
//
//	region → coordinator  Request  ask for a lease (renewal, more or less)
//	coordinator → region  Grant    a new lease, in answer to one request
//	region → coordinator  Return   a lease the region no longer uses
//	coordinator → region  Nudge    renew soon: your share is wanted elsewhere
//
// Time never travels as a clock reading: a Grant carries durations, and a
// region measures them on its own monotonic clock — the lease's end from
// the moment it sent the request (no later than the grant, so the region
// stops first), its start from the moment the grant arrived (no earlier
// than the grant, so it starts last).
//
// One agent spends for a region at a time. An agent attaches before it
// renews: the coordinator issues it an incarnation, refused
// (ErrRegionHeld) while a lease granted to another incarnation of the
// region still counts, and answers a Request or Return from any other
// incarnation with ErrSuperseded. Two processes under one region name
// would otherwise break what the coordinator assumes of a region: that it
// spends under one lease at a time (so its overlapping leases count as
// their maximum), and that a region holding lease H never goes back to an
// older one.

// Request asks for a lease. It also confirms: a region that holds lease H
// never uses an older one again, so the coordinator stops counting them.
type Request struct {
	Tenant string `json:"tenant"`
	Region string `json:"region"`
	// Seq numbers the region's requests; the grant echoes it, and the
	// region anchors the lease's end to when it sent this request.
	Seq uint64 `json:"seq"`
	// Holding is the lease the region uses now; 0 for none.
	Holding uint64 `json:"holding"`
	// Resumed: the region does not use Holding yet — its agent was
	// handed the lease by the agent it replaced, which stopped spending
	// under it (region.Handover) — so it cannot keep it unchanged
	// (Grant.Unchanged: it never measured that lease's end): the answer
	// is a lease to install, covered by Holding's record where nothing
	// else changes.
	Resumed bool `json:"resumed,omitempty"`
	// Epoch is the highest coordinator epoch the region has seen.
	Epoch uint64 `json:"epoch"`
	// Incarnation is the agent's, as the coordinator issued it when the
	// agent attached; 0 for an in-process limiter of a region no agent
	// has ever attached. Over the network it travels once per body, not
	// per request.
	Incarnation uint64 `json:"incarnation,omitempty"`
	// Demand is what the region's clients offered since the last request,
	// admitted or not, per second.
	Demand Micro `json:"demand"`
	// Balance is the region's bucket now.
	Balance Micro `json:"balance"`
}

// Grant is a lease on its way to a region.
type Grant struct {
	Lease Lease  `json:"lease"`
	Seq   uint64 `json:"seq"` // the request it answers
	// ValidFor is the lease's length, from when the request was sent.
	ValidFor time.Duration `json:"valid_for_ns"`
	// Margin is the skew margin the region takes off ValidFor.
	Margin time.Duration `json:"margin_ns"`
	Mode   Mode          `json:"mode"`
	// Emergency is the region's allowance in BestEffort mode.
	Emergency Micro `json:"emergency"`
	// Ceiling is the largest burst any lease of the tenant's can have in
	// this region under its current limits (MaxBurstShare): a request
	// costing more can never be admitted there, and a region says so
	// rather than have its client retry forever. 0 when not given (a
	// coordinator that predates it): the region then cannot tell.
	Ceiling Micro `json:"ceiling,omitempty"`
	// Unchanged: the coordinator had nothing to change — Lease is the
	// lease the region holds (Request.Holding), with the same shares, no
	// transfer, and young enough not to need a later end — and it wrote
	// nothing. The region keeps that lease and the end it measured for it
	// when it installed it; ValidFor and Margin are that lease's, not a
	// new term. Safe because the coordinator counts the held lease as it
	// did before the request: nothing it answers rests on a write it did
	// not make.
	Unchanged bool `json:"unchanged,omitempty"`
	// Short: the lease falls short of the region's target share because
	// other regions' leases still hold the rest; they were nudged to give
	// it up. A region that is refusing asks again soon to take it. A
	// region refusing without Short holds its fair part of the tenant's
	// limit, and asking sooner would change nothing: it asks at the
	// ordinary cadence (half a lease), sooner only when nudged (the
	// coordinator nudges a refusing region when a return or an end frees
	// share it could take) or when its own demand doubles.
	Short bool `json:"short,omitempty"`
}

// Return gives a lease back: the region has invalidated it and stopped
// using it, and hands over the tokens it released. A region sends one
// when a newer lease replaces the old (Balance: what the old bucket held
// beyond the new one's burst) and when it shuts down (Balance: all).
type Return struct {
	Tenant  string `json:"tenant"`
	Region  string `json:"region"`
	LeaseID uint64 `json:"lease_id"`
	Epoch   uint64 `json:"epoch"`
	Balance Micro  `json:"balance"`
	// Incarnation is the agent's, as in Request.
	Incarnation uint64 `json:"incarnation,omitempty"`
}

// Nudge asks a region to renew now: another region wants the share it
// holds beyond its target.
type Nudge struct {
	Tenant string `json:"tenant"`
	Region string `json:"region"`
	Epoch  uint64 `json:"epoch"`
}

// Result is the answer to one Request of a batch: a grant, or why there
// is none (Err). A batch of requests is answered request by request: one
// tenant's refusal says nothing of another's.
type Result struct {
	Grant Grant
	Err   error
}
