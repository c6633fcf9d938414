package quota_test

import (
	"fmt"

	"github.com/afloat/afloat/quota"
)

// The rebalancing policy on the seed's tenant: demand 60/30/10 of 600
// tokens a second, more than R. The quiet regions get what they ask of
// the rate; the busy one gets the rest of R. The burst goes by peaks —
// 60 (1 % of B) each, and the other 5,820 in proportion to them: us
// lately peaked at 1,000 a second, so it holds most of B, though eu is the
// busier now.
func ExampleAllocate() {
	t := quota.Tenant{Name: "acme", Rate: 500 * quota.One, Burst: 6000 * quota.One, Regions: []string{"eu", "us", "ap"}}
	demand := map[string]quota.Micro{"eu": 360 * quota.One, "us": 180 * quota.One, "ap": 60 * quota.One}
	peak := map[string]quota.Micro{"eu": 400 * quota.One, "us": 1000 * quota.One, "ap": 100 * quota.One}
	shares := quota.Allocate(t, demand, peak)
	for _, r := range t.Regions {
		fmt.Printf("%s: rate %v/s, burst %v\n", r, shares[r].Rate, shares[r].Burst)
	}
	// Output:
	// eu: rate 260/s, burst 1612
	// us: rate 180/s, burst 3940
	// ap: rate 60/s, burst 448
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
