// Package agent runs a region agent, the process of the global quota
// that serves one region: a region.Limiter for the tenants whose traffic
// enters the region, renewing its leases from the coordinators over the
// network (quota/remote), and the doors services spend through, answered
// from local state only — the decision API (POST /v1/allow, for services
// not written in Go; GET /v1/status), Envoy's rate-limit service over
// gRPC (GRPCServer; the config's envoy section) and a reverse proxy that
// answers 429 with Retry-After (ProxyHandler; the config's proxy
// section). It serves GET /metrics (Prometheus, a registry of its own),
// /healthz and /readyz beside the decision API (docs/quota/operations.md,
// "Metrics and health"), and writes the event log afloat quota check reads
// (Options.EventLog).
//
//	cfg, err := config.LoadConfig("quota.yaml")
//	a, err := agent.New(agent.Options{Config: cfg, Name: "eu", Coordinators: urls, Listen: "127.0.0.1:7080", Logger: log})
//	err = a.Run(ctx) // until ctx ends; then its leases go back
//
// New checks the options first, naming each by its flag (ErrOptions).
// cmd/afloat's quota region parses flags and calls these; the
// coordinators are quota/coordinator/replica; docs/quota/operations.md,
// "Deployment", shows a cluster end to end.
package agent
