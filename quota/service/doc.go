// Package service runs the global quota as processes: RunCoordinator (a
// coordinator replica on etcd, serving the network API of quota/remote,
// campaigning for the lead and failing over), Agent (a region agent: a
// region.Limiter renewing over the network, and a local decision API,
// POST /v1/allow, for services not written in Go; Envoy's rate-limit
// service over gRPC, GRPCServer; a reverse proxy answering 429 with
// Retry-After, ProxyHandler), the cluster's config
// file (LoadConfig: YAML or JSON, every error naming its field), the
// event log each process writes for afloat quota check (an eventlog.File,
// with --event-log), and embedded etcd members (StartMember,
// only in a binary built with -tags embedetcd: see EmbeddedEtcd). Both
// processes serve GET /metrics (Prometheus, a registry per process),
// /healthz and /readyz on their API listener (docs/quota.md, "Metrics and
// health").
//
//	cfg, err := service.LoadConfig("quota.yaml")
//	err = service.RunCoordinator(ctx, service.CoordinatorOptions{Config: cfg, Listen: ":7070", Etcd: endpoints, Logger: log})
//
//	a, err := service.NewAgent(service.RegionOptions{Config: cfg, Name: "eu", Coordinators: urls, Listen: ":7080", Logger: log})
//	err = a.Run(ctx)
//
// cmd/afloat's quota coordinator and quota region parse flags and call
// these; docs/quota.md, "Deployment", shows a cluster end to end.
package service
