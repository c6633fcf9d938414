// Package etcdledger keeps the quota coordinator's ledger in etcd
// (go.etcd.io/etcd/client/v3): the leases granted and not yet ended, each
// tenant's credit and the next lease id, under one key prefix.
//
// Fencing is etcd's election: Fence campaigns (concurrency.Election) and
// returns once this process leads; the epoch is its election key's create
// revision, and every Commit is one transaction guarded by
// Compare(CreateRevision(key) = epoch). A leader that was paused, cut off
// or replaced cannot write, so it cannot grant. Lease expiries are the
// coordinator's own deadlines, stored as data, never etcd lease TTLs.
//
// The election key lives on an etcd lease the ledger keeps alive itself
// (session.go): it rides through etcd's own leader elections, ending only
// when etcd answers that the lease is gone or no keep-alive was confirmed
// for its whole TTL; and a replica campaigning behind a leader revokes
// the leader's lease once etcd counts it DeposeAfter without a
// keep-alive, so that a dead leader is replaced in about a second however
// long the TTL (docs/quota/design.md, "etcd's own leader
// elections").
//
//	cli, err := clientv3.New(clientv3.Config{Endpoints: endpoints})
//	ledger, err := etcdledger.Open(ctx, etcdledger.Config{Client: cli, Cluster: "prod", Candidate: myURL})
//	srv, err := coordinator.NewServer(ctx, cfg, ledger) // blocks until this replica leads
//
// Backup saves an etcd snapshot (etcdctl snapshot save's file); Restore
// writes the ledger it holds back under the prefix, marked restored, so
// that the next leader waits out the leases the snapshot may lack before
// it grants (coordinator.Restored, docs/quota/operations.md, "Backup and
// restore").
//
// Its tests run against a real embedded etcd: go test -tags embedetcd.
package etcdledger
