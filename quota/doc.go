// Package quota is the global rate limit's vocabulary, pure and without
// I/O: tenants (a global rate R and burst B, a mode, a lease duration and
// a skew margin), leases (a region's share of R and B, by epoch, in an
// interval), the messages between regions and the coordinator, the two
// conservation invariants, and the rebalancing policy.
//
// A tenant buys R (say 30,000 requests a minute, 500 a second) with a
// burst B (6,000), and its traffic enters several regions. A coordinator
// (package quota/coordinator) leases shares of R and B to the regions,
// whose limiters (package quota/region) spend them through local token
// buckets with no network call per request. Shares are conserved, never
// copied: at every instant the regions' largest live shares sum to at
// most R and B, so admissions in any window of length Δ stay within
// R·Δ + B. Package quota/chaos proves it under faults.
//
//	t := quota.Tenant{Name: "acme", Rate: 500 * quota.One, Burst: 6000 * quota.One,
//		Regions: []string{"eu", "us", "ap"}}
//	demand := map[string]quota.Micro{"eu": 360 * quota.One, "us": 180 * quota.One}
//	shares := quota.Allocate(t, demand, demand) // peaks: here, the demand now
//
// Amounts are Micro, millionths of a token, so that sums are exact.
package quota
