// Package ops holds what both quota processes — the coordinator replica
// (quota/coordinator/replica) and the region agent (quota/agent) — serve
// for operators and guard their listeners with: GET /metrics, /healthz
// and /readyz (Observe, Readiness), the host names a listener answers
// (HostNames, HostGuard: 421 to any other Host), the check of a listen
// address's port (CheckListen), the metric helpers of
// their collectors, and the start events of their event logs.
//
//	mux := http.NewServeMux()
//	ops.Observe(mux, reg, ready)
//	h := ops.HostGuard(names, "quota region", mux)
package ops
