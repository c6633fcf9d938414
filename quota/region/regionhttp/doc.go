// Package regionhttp puts a region limiter (package region) in front of
// net/http handlers: each request spends its tenant's cost, and a refused
// one gets 429 Too Many Requests with Retry-After. It is a package of its
// own so that the region limiter, and the models that drive it in virtual
// time (package quota/chaos), import no net/http.
//
//	lim, err := region.New(region.DefaultConfig("eu", "acme"))
//	go lim.Run(ctx, coord)                                // renews leases through the coordinator
//	mw, err := regionhttp.Middleware(lim, tenantOfAPIKey) // whose quota a request spends: a proved identity
//	http.Handle("/", mw(handler))                         // 429 + Retry-After when the quota is spent
package regionhttp
