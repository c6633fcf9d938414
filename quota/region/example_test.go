package region_test

import (
	"fmt"
	"time"

	"github.com/afloat/afloat/quota"
	"github.com/afloat/afloat/quota/region"
)

// A region asks for a lease, installs the grant and spends it, all on
// explicit time (nanoseconds of the region's clock).
func ExampleLimiter() {
	lim, err := region.New(region.DefaultConfig("eu", "acme"))
	if err != nil {
		panic(err)
	}
	req, _ := lim.Request(0, "acme")
	grant := quota.Grant{ // what the coordinator would answer
		Lease:    quota.Lease{ID: 1, Tenant: "acme", Region: "eu", Epoch: 1, Rate: 100 * quota.One, Burst: 50 * quota.One},
		Seq:      req.Seq,
		ValidFor: 10 * time.Second, Margin: 500 * time.Millisecond,
	}
	in := lim.Install(0, grant)
	fmt.Println("installed:", in.OK(), "until", time.Duration(in.Until).Round(time.Millisecond))

	second := int64(time.Second)
	admitted := 0
	for range 80 {
		if lim.AllowAt(second, "acme", 1) {
			admitted++
		}
	}
	fmt.Println("admitted after a second:", admitted, "(the burst)")
	fmt.Println("at the lease's end:", lim.AllowAt(in.Until, "acme", 1))
	// Output:
	// installed: true until 9.495s
	// admitted after a second: 50 (the burst)
	// at the lease's end: false
}

// A front's answer to each request is one Decision: admitted or not, the
// balance left, and for a refusal when to retry — a promise under a
// lease, a policy without one — or that it never can be. Here a lease of
// a token a second with a burst of 2, on explicit time; the next token
// comes in a second and half a millisecond, the refill being derated for
// the clock's possible drift (Config.MaxDrift).
func ExampleLimiter_DecideAt() {
	lim, err := region.New(region.DefaultConfig("eu", "acme", "globex"))
	if err != nil {
		panic(err)
	}
	req, _ := lim.Request(0, "acme")
	lim.Install(0, quota.Grant{ // what the coordinator would answer
		Lease: quota.Lease{ID: 7, Tenant: "acme", Region: "eu", Epoch: 1, Rate: 1 * quota.One, Burst: 2 * quota.One,
			Transfer: 2 * quota.One},
		Seq:      req.Seq,
		ValidFor: time.Hour, Margin: time.Second,
		Ceiling: 5 * quota.One, // the most acme's quota can ever hold here
	})
	for _, cost := range []int64{1, 1, 1, 6} {
		d := lim.DecideAt(0, "acme", cost)
		switch {
		case d.Allowed:
			fmt.Printf("cost %d: admitted by lease %d, %v left\n", cost, d.LeaseID, d.Remaining)
		case d.Never:
			fmt.Printf("cost %d: never (%v)\n", cost, d.Err())
		default:
			fmt.Printf("cost %d: refused, retry after %v (a promise: %v)\n", cost, d.RetryAfter, d.RetryKnown)
		}
	}
	d := lim.DecideAt(0, "globex", 1) // no lease yet: the region's next ask
	fmt.Printf("globex: refused, retry after %v (a promise: %v)\n", d.RetryAfter, d.RetryKnown)
	// Output:
	// cost 1: admitted by lease 7, 1 left
	// cost 1: admitted by lease 7, 0 left
	// cost 1: refused, retry after 1.0005s (a promise: true)
	// cost 6: never (region: the request costs more than the tenant's quota can ever admit: a cost of 6 tokens; tenant "acme"'s quota holds at most 5 in region "eu")
	// globex: refused, retry after 500ms (a promise: false)
}
