package quota_test

import (
	"fmt"

	"github.com/afloat/afloat/quota"
)

// The rebalancing policy on the seed's tenant: demand 60/30/10 of 600
// tokens a second, more than R. The quiet regions get what they ask; the
// busy one gets the rest of R.
func ExampleAllocate() {
	t := quota.Tenant{Name: "acme", Rate: 500 * quota.One, Burst: 6000 * quota.One, Regions: []string{"eu", "us", "ap"}}
	shares := quota.Allocate(t, map[string]quota.Micro{"eu": 360 * quota.One, "us": 180 * quota.One, "ap": 60 * quota.One})
	for _, r := range t.Regions {
		fmt.Printf("%s: rate %v/s, burst %v\n", r, shares[r].Rate, shares[r].Burst)
	}
	// Output:
	// eu: rate 260/s, burst 3120
	// us: rate 180/s, burst 2160
	// ap: rate 60/s, burst 720
}

// A region's old and new leases overlap while the old one is confirmed
// returned: they count once, as their maximum.
func ExampleCheck() {
	t := quota.Tenant{Name: "acme", Rate: 500 * quota.One, Burst: 6000 * quota.One, Regions: []string{"eu", "us"}}
	spans := []quota.Span{
		{Region: "eu", Rate: 300 * quota.One, Burst: 3600 * quota.One, From: 0, To: 10},
		{Region: "eu", Rate: 200 * quota.One, Burst: 2400 * quota.One, From: 8, To: 20}, // the shrink
		{Region: "us", Rate: 200 * quota.One, Burst: 2400 * quota.One, From: 0, To: 20},
		{Region: "us", Rate: 300 * quota.One, Burst: 3600 * quota.One, From: 10, To: 20}, // moves after eu's old lease ends
	}
	fmt.Println(quota.Check(t, spans, 0))
	// Output:
	// <nil>
}
