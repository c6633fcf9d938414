// Package coordinator is the global rate limit's coordinator: it leases
// shares of each tenant's rate R and burst B to regions, renews them
// (never refilling), shrinks them, and moves a share from a cold region to
// a hot one only after the cold region has confirmed its smaller lease or
// its old lease has expired — until then both count.
//
// Core is the logic, stepping on explicit time; Server runs it in process
// with a clock and a lock. Durable state goes through a Ledger: every
// grant is written before it is sent, and New fences the ledger with a
// higher epoch, so a successor keeps counting the leases it restores and
// a predecessor that wakes up cannot write, and so cannot grant. MemLedger
// is the in-memory ledger; an etcd ledger comes with the network API.
//
//	ledger := coordinator.NewMemLedger()
//	srv, err := coordinator.NewServer(ctx, coordinator.Config{Tenants: tenants}, ledger, deliverNudge)
//	go srv.Run(ctx)
//	go limiter.Run(ctx, srv) // a region.Limiter renews through it
//
// The rebalancing policy is quota.Allocate: floors for every region,
// max-min fairness on reported demand above them. docs/quota.md gives the
// guarantees and the numbers measured.
package coordinator
