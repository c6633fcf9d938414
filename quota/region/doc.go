// Package region is the global rate limit's region side: a Limiter holds
// one leased token bucket per tenant and spends it with no lock and no
// network call per request.
//
//	lim, err := region.New(region.DefaultConfig("eu", "acme"))
//	go lim.Run(ctx, coord)      // renews leases through the coordinator
//	d := lim.Decide("acme", 1)  // spends a token of acme's quota, or refuses
//	if !d.Allowed { ... d.RetryAfter, d.RetryKnown, d.Never ... }
//
// A front answers each request from one Decision (Decide, DecideAt): admitted
// or not, the balance left, for a refusal when to retry — a promise under
// the lease in use, else when the region will next ask the coordinator —
// or that it never can be admitted, and the lease that decided. It is
// read from one state of the tenant's bucket, with no lock and no
// allocation, so that no part of an answer comes from another lease than
// the one that decided (a renewal may replace it at any instant). Allow
// and AllowAt are the same decision without the rest of the answer.
//
// Package regionhttp puts a limiter in front of net/http handlers (429
// with Retry-After); this package imports no net/http, so that the
// models that drive it in virtual time (quota/chaos) import none either.
//
// The bucket refills at the leased rate and holds at most the leased
// burst. A renewal keeps the balance, truncated when the burst shrinks and
// never refilled; after a gap the bucket starts empty, unless the
// coordinator transfers confirmed returned tokens. A lease ends
// ValidFor − Margin after the region sent the request it answers, on the
// region's own monotonic clock, so the region always stops before the
// coordinator stops counting the lease; refill is derated by the clock's
// possible drift. The clock is time.Since, which reads the monotonic
// clock alone. In hard mode nothing is admitted without a valid lease; in
// best-effort mode an emergency allowance E covers the gap, refilled only
// from tokens a full bucket would drop.
//
// Two cores admitting for one tenant seldom share a cache line on the
// common path: a request spends from one of several small token caches
// (four per P; a goroutine keeps to one, by its stack address), refilled a few
// tokens at a time from the lease's shared bucket, whose capacity is the
// burst less what the caches may hold — so the tokens a region holds
// never exceed its burst, and an idle spell may leave up to a 64th of it
// unused (Config.Caches; docs/quota/design.md, "Token caches").
//
// The renewal side — Request, Install, Nudge, Due, Return — steps on
// explicit time; Run drives it per region, not per tenant: a schedule of
// when each tenant next needs a look, calls of many tenants each
// (Config.BatchSize), a few at a time (Config.InFlight), renewals spread
// over the lease (Config.Spread) and one backoff for the whole region
// when a call fails. It records what it does to the leases in a Journal
// whose failures it counts and reports (a return goes to the coordinator
// only once recorded); package quota/chaos drives the same methods in
// virtual time. SetTenants changes the tenants served while all of this
// runs (tenants are data on the coordinator): a decision finds a tenant
// through an immutable index that SetTenants replaces whole, so it still
// takes no lock. Limiter is safe for concurrent use.
package region
