package replica

import (
	"io"
	"net/http"
	"testing"
)

// BenchmarkCoordinatorScrape: one scrape of a leader's /metrics at
// 100,000 tenants in three regions, each leased in one — what
// Prometheus's scrape costs the leader's process (the handler, the
// collector, the encoding), reported per scrape.
func BenchmarkCoordinatorScrape(b *testing.B) {
	srv, _ := leaderAtMaxTenants(b)
	ts := metricsOf(b, srv, nil)
	b.ReportAllocs()
	for b.Loop() {
		resp, err := http.Get(ts.URL + "/metrics")
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body) //nolint:errcheck
		resp.Body.Close()
	}
}
