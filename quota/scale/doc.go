// Package scale runs the global quota as a user deploys it, at scale, and
// measures whether it keeps its head above water: each part an OS process
// of its own on free loopback ports — a 3-member etcd cluster (Debian's
// etcd binary, its data directories in the run's folder), coordinator
// replicas (afloat quota coordinator --etcd) and region agents (afloat
// quota region) — with a generated config of many tenants. It polls the
// agents' GET /readyz until every tenant holds a valid lease in every
// region, reads renewals and their latency from the agents' GET /metrics
// and transactions from etcd's, and the processes' CPU time and memory
// from /proc; it injects the faults an operator meets (kill -9, a pause
// with SIGSTOP and SIGCONT, a restart with SIGTERM) and CPU-bound busy
// loops that compete for the cores, and times how long the cluster takes
// to have every tenant leased again.
//
//	cfg := scale.DefaultConfig(afloatBin, etcdBin, dir)
//	cfg.Tenants = 10_000
//	c, err := scale.New(cfg)
//	...
//	err = c.Start(ctx)                         // etcd, coordinators, then the agents
//	leased := c.WaitLeased(ctx, c.AgentsStarted(), 2*time.Minute)
//	rec := c.KillLeader(ctx)                   // kill -9, timed; restarted after
//	fmt.Println(rec)                           // "kill -9 of the leading coordinator 0: every tenant valid again after 1.2s …"
//	c.Stop()
//
// It is the instrument of make bench-quota-scale (bench/quotascale) and
// of TestQuotaAtScale (cmd/afloat, make test-long). It lives apart from
// the quota's packages, which it only execs and asks over HTTP, so that
// importing them imports no process code; it is measurement, not product.
// Every wait is bounded: a cluster that never leases every tenant, or
// does not recover from a fault, is reported as such, not waited on. A
// Cluster is safe for use by one goroutine at a time; its Traffic runs
// beside it.
package scale
