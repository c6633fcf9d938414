package replica

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/afloat/afloat/quota"
	"github.com/afloat/afloat/quota/coordinator"
	"github.com/afloat/afloat/quota/remote"
)

// BenchmarkCoordinatorScrape: one scrape of a leader's /metrics at
// 100,000 tenants in three regions, each leased in one — what
// Prometheus's scrape costs the leader's process (the handler, the
// collector, the encoding), reported per scrape.
func BenchmarkCoordinatorScrape(b *testing.B) {
	const n = 100_000
	tenants := make([]quota.Tenant, n)
	names := make([]string, n)
	for i := range tenants {
		names[i] = fmt.Sprintf("tenant-%06d", i)
		tenants[i] = quota.Tenant{Name: names[i], Rate: quota.One, Burst: quota.One, Regions: []string{"eu", "us", "ap"},
			LeaseDuration: time.Hour}.WithDefaults()
	}
	ctx, cancel := context.WithCancel(context.Background())
	srv, err := coordinator.NewServer(ctx, coordinator.Config{Tenants: tenants}, coordinator.NewMemLedger())
	if err != nil {
		cancel()
		b.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Go(func() { srv.Run(ctx) }) //nolint:errcheck // ends with ctx
	defer func() { cancel(); wg.Wait() }()
	for rest := names; len(rest) > 0; {
		k := min(len(rest), remote.MaxBatch)
		reqs := make([]quota.Request, k)
		for i, name := range rest[:k] {
			reqs[i] = quota.Request{Tenant: name, Region: "eu", Seq: 1, Demand: -1}
		}
		if _, err := srv.RenewBatch(ctx, reqs); err != nil {
			b.Fatal(err)
		}
		rest = rest[k:]
	}
	current := func() *coordinator.Server { return srv }
	ts := httptest.NewServer(newCoordMetrics(current, nil).handler(http.NotFoundHandler(),
		coordReady(current, func() string { return "" }, "", func() bool { return false })))
	defer ts.Close()
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
