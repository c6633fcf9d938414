package region_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/afloat/afloat/quota"
	"github.com/afloat/afloat/quota/coordinator"
	"github.com/afloat/afloat/quota/region"
)

// The limiter running locally: a coordinator in the same process, on an
// in-memory ledger (coordinator.NewMemLedger; a real deployment writes to
// etcd), and a region's Run renewing its leases from it. Note the units:
// rates and bursts are in millionths of a token, so quota.Tokens(100) is
// 100 a second. A new lease starts empty — unlike x/time/rate's full
// bucket — and fills at the rate, up to the burst: the region cannot know
// what another region spent of the burst before the share moved.
func ExampleLimiter_Run() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	acme := quota.Tenant{Name: "acme", Rate: quota.Tokens(100), Burst: quota.Tokens(20), Regions: []string{"eu"}}
	srv, err := coordinator.NewServer(ctx, coordinator.Config{Tenants: []quota.Tenant{acme}}, coordinator.NewMemLedger())
	if err != nil {
		panic(err)
	}
	go srv.Run(ctx)

	lim, err := region.New(region.DefaultConfig("eu", "acme"))
	if err != nil {
		panic(err)
	}
	done := make(chan error, 1)
	go func() { done <- lim.Run(ctx, srv) }() // renews until ctx ends, then gives the leases back

	for !lim.Status(lim.Now(), "acme").Valid {
		time.Sleep(time.Millisecond)
	}
	fmt.Println("leased")
	time.Sleep(300 * time.Millisecond) // 100 tokens a second: the 20 of the burst, full
	admitted := 0
	for range 50 {
		if lim.Allow("acme", 1) {
			admitted++
		}
	}
	fmt.Println("admitted at once, 300 ms later: the burst, 20, and no more than a few tokens beyond:", admitted >= 20 && admitted < 25)
	cancel()
	<-done
	// Output:
	// leased
	// admitted at once, 300 ms later: the burst, 20, and no more than a few tokens beyond: true
}

// Wait, as x/time/rate's: it blocks until the tokens come, ctx ends, or
// waiting cannot help. It reserves nothing — a region cannot promise
// tokens its next lease may not carry — so it sleeps for each refusal's
// Retry-After and decides again.
func ExampleLimiter_Wait() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	acme := quota.Tenant{Name: "acme", Rate: quota.Tokens(100), Burst: quota.Tokens(20), Regions: []string{"eu"}}
	srv, err := coordinator.NewServer(ctx, coordinator.Config{Tenants: []quota.Tenant{acme}}, coordinator.NewMemLedger())
	if err != nil {
		panic(err)
	}
	go srv.Run(ctx)
	lim, err := region.New(region.DefaultConfig("eu", "acme"))
	if err != nil {
		panic(err)
	}
	done := make(chan error, 1)
	go func() { done <- lim.Run(ctx, srv) }()

	// No lease yet, then an empty one: Wait waits for the lease and for
	// 10 tokens of it at 100 a second.
	d, err := lim.Wait(ctx, "acme", 10)
	fmt.Println("admitted:", d.Allowed, err)

	// Waiting cannot help: more than the quota can ever hold.
	_, err = lim.Wait(ctx, "acme", 1000)
	fmt.Println("too large:", errors.Is(err, region.ErrTooLarge))

	// A deadline before the tokens come: it says so at once.
	for lim.Allow("acme", 1) { // the bucket emptied first, however late this runs
	}
	short, stop := context.WithTimeout(ctx, 10*time.Millisecond)
	defer stop()
	_, err = lim.Wait(short, "acme", 20)
	fmt.Println("deadline:", errors.Is(err, context.DeadlineExceeded))
	cancel()
	<-done
	// Output:
	// admitted: true <nil>
	// too large: true
	// deadline: true
}
