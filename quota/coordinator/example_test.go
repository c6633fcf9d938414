package coordinator_test

import (
	"context"
	"fmt"
	"time"

	"github.com/afloat/afloat/quota"
	"github.com/afloat/afloat/quota/coordinator"
)

// A region asks for a lease and later confirms it; the coordinator counts
// each region's overlapping leases once.
func ExampleCore() {
	ctx := context.Background()
	t := quota.Tenant{Name: "acme", Rate: 500 * quota.One, Burst: 6000 * quota.One, Regions: []string{"eu", "us"}}
	ledger := coordinator.NewMemLedger()
	c, err := coordinator.Open(ctx, coordinator.Config{Tenants: []quota.Tenant{t}}, ledger, 0)
	if err != nil {
		panic(err)
	}
	// The core proposes a step; its runner writes it, then acknowledges it
	// (Advance), which gives the grant to send.
	renew := func(now time.Duration, req quota.Request) quota.Grant {
		step, err := c.Renew(now, req)
		if err != nil {
			panic(err)
		}
		ans, err := c.Advance(step, ledger.Commit(ctx, c.Epoch(), step.Ops...))
		if err != nil {
			panic(err)
		}
		return ans.Grant
	}
	g := renew(0, quota.Request{Tenant: "acme", Region: "eu", Seq: 1, Demand: 600 * quota.One})
	fmt.Printf("lease %d: %v/s, burst %v, valid %v\n", g.Lease.ID, g.Lease.Rate, g.Lease.Burst, g.ValidFor)
	g = renew(time.Second, quota.Request{Tenant: "acme", Region: "us", Seq: 1, Demand: 400 * quota.One})
	fmt.Printf("lease %d: %v/s while eu holds its share\n", g.Lease.ID, g.Lease.Rate)
	// Output:
	// lease 1: 495/s, burst 5940, valid 10s
	// lease 2: 5/s while eu holds its share
}
