// Package opstest holds the helpers the tests of the quota's processes
// share — quota/agent's, quota/coordinator/replica's, quota/etcdmember's
// and the harness quota/servicetest: reading what a process serves for
// operators (Scrape of GET /metrics, Readyz, Healthz), the config files
// of quota/config's testdata (ConfigFile), free loopback ports, bounded
// waits, a log buffer, the tenants API's client calls and the load
// generator of the load benchmarks. Only tests import it.
//
//	s := opstest.Scrape(t, base)
//	n := s.Must(t, "afloat_quota_region_admitted_tokens_total", "tenant", "acme")
package opstest
