// Package proxypool runs a least-used pool of outbound HTTP proxies on an
// assign.Pool: candidates read from a list (ParseList) are probed — a GET
// of a URL through each must answer 2xx in time — before they join the
// pool and on every check while they serve; an unhealthy one leaves, with
// its count kept, and comes back by the restore policy once it is healthy
// again. An http.Client's Transport then sends each request through the
// least-used healthy proxy, counted in the pool that every worker shares.
//
//	pp, err := proxypool.New(pool, proxypool.DefaultProbeConfig("https://example.com/health"), assign.RestoreCurrentMinimum)
//	proxies, bad, err := proxypool.ParseList(file)
//	pp.Import(proxies...)
//	go pp.Run(ctx, 30*time.Second) // a check now, then every 30 s
//	client := &http.Client{Transport: pp.Transport(nil)}
//
// A proxy's member name is its URL without the password, so credentials
// never reach Redis; the pool keeps the full URL in memory. The probes'
// streaks (ProbeConfig's Fall and Rise) are each process's own; the
// membership, in Redis, is what the processes agree on.
package proxypool
