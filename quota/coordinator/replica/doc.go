// Package replica runs a coordinator replica, the process of the global
// quota that grants the regions' leases: a coordinator.Server on an etcd
// ledger (quota/etcdledger), serving the network API of quota/remote to
// the region agents (quota/agent) and the operators' tenants API
// (TenantsHandler), campaigning for the lead and failing over. Several
// replicas on one etcd cluster fail over to each other; with no etcd
// given, a replica starts an embedded single member (quota/etcdmember).
// It serves GET /metrics, /healthz and /readyz on its API listener
// (docs/quota/operations.md, "Metrics and health"), and writes the event log afloat
// quota check reads (Options.EventLog).
//
//	cfg, err := config.LoadConfig("quota.yaml")
//	err = replica.Run(ctx, replica.Options{Config: cfg, Listen: ":7070", Etcd: endpoints, Logger: log})
//
// Options.Validate (which Run calls first) refuses what a replica cannot
// run with, naming each option by its flag (ErrOptions). cmd/afloat's
// quota coordinator parses flags and calls Validate and Run;
// docs/quota/operations.md, "Deployment", shows a cluster end to end.
package replica
