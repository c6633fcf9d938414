// Package remote is the network API between region agents and the
// coordinator: HTTP/1.1 and JSON (why not gRPC: docs/quota/design.md,
// "The network API").
//
// Handler serves a coordinator (a coordinator.Server, or whichever
// replica leads: a follower answers 503 and names the leader). Each
// region presents its own bearer token, compared in constant time; a body
// holds at most MaxBatch renewals or returns in MaxBody bytes; calls are
// idempotent (a renewal's Seq is its request id). One agent spends for a
// region at a time: an agent attaches first, and every call carries the
// incarnation the coordinator gave it (wire.go). Client is a region's
// side — it implements region.Coordinator, attaches before its first
// call, sends each batch as one HTTP request (split at MaxBatch) with
// the caller's patience, and follows the leader among the coordinators
// it was configured with. Operator is an
// operator's side of the tenants API served beside it, and follows the
// leader the same way (one leader-following client for both: leader.go).
// ParseEndpoints reads endpoints as an operator types them (host:port or
// http(s)://host:port), for these and for the processes' options.
//
//	h, err := remote.Handler(remote.HandlerConfig{Tokens: tokens, Lead: lead})
//	http.ListenAndServe(addr, h)
//
//	c, err := remote.NewClient(remote.ClientConfig{Endpoints: urls, Region: "eu", Token: tok, OnNudge: lim.Nudge})
//	lim.Run(ctx, c, region.WithExit(c.Detach)) // at the end, one detach ends every lease
//
//	op, err := remote.NewOperator(remote.OperatorConfig{Endpoints: urls, Token: opToken})
//	list, err := op.List(ctx) // {"tenants":[...]}, from the leader
package remote
