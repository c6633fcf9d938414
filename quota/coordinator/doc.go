// Package coordinator is the global rate limit's coordinator: it leases
// shares of each tenant's rate R and burst B to regions, renews them
// (never refilling), shrinks them, and moves a share from a cold region to
// a hot one only after the cold region has confirmed its smaller lease or
// its old lease has expired — until then both count.
//
// Core is the logic, pure: it steps on explicit time, does no I/O, and
// proposes from each call a Step — the ledger ops to write and the leases
// that ended — whose answer only Advance gives, once the runner says the
// step is persisted (the shape of etcd raft's Ready and Advance). Server
// is its runner: a lock, the monotonic clock, and a committer that writes
// the steps of concurrent calls in batched ledger transactions outside
// the lock, records them in a Journal (the event log), acknowledges them,
// and only then answers: a grant is never sent before it is durable and
// logged, and a failed write or append fails its calls. Durable state
// goes through a Ledger: Fence makes the caller the only writer with a
// higher epoch, so a successor keeps counting the leases it restores and a
// predecessor that wakes up cannot write, and so cannot grant. MemLedger
// is the in-memory ledger; quota/etcdledger keeps it in etcd. One agent
// spends for a region at a time: Attach makes an agent's incarnation the
// region's holder once no lease of the region counts, and Renew and
// Return refuse any other (incarnation.go). With a reserve
// (Config.Reserve) a written lease's record reaches past its end and
// stands for the renewals of the same shares that follow: those are
// answered with covered leases, not written, ahead of the writes queued
// (cover.go), so that an outage of the ledger shorter than the reserve's
// two thirds stops no such renewal.
//
//	srv, err := coordinator.NewServer(ctx, coordinator.Config{Tenants: tenants}, ledger,
//		coordinator.WithNudges(deliver), coordinator.WithJournal(eventLog))
//	go srv.Run(ctx)          // the committer
//	go limiter.Run(ctx, srv) // a region.Limiter renews through it (or quota/remote over HTTP)
//
// The rebalancing policy is quota.Allocate: floors for every region,
// max-min fairness on reported demand above them for the rate, and the
// burst in proportion to each region's recent peak of demand, which the
// core keeps (held, then decaying slowly, and a split kept steady).
// docs/quota/design.md gives the guarantees and the numbers measured.
package coordinator
