// Package bulkheadhttp runs net/http handlers inside a bulkhead: a request
// waits for a permit, runs, and releases it; a refused one gets 503
// Service Unavailable with Retry-After. It is a package of its own so that
// the bulkhead, and the models that drive it in virtual time (package
// overload), import no net/http.
//
//	b, err := bulkhead.New(100, bulkhead.WithQueue(100))
//	http.Handle("/", bulkheadhttp.Middleware(b)(handler))
package bulkheadhttp
