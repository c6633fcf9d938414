package coordinator

import (
	"context"
	"testing"
	"time"

	"github.com/afloat/afloat/quota"
)

// BenchmarkCoveredRenewals is the coordinator's steady state at scale:
// 10,000 tenants in three regions, every lease granted, each renewal
// changing nothing but its lease's end and so answered with a covered
// lease (no write), in batches of 2,048 as a region sends them, each
// tenant's renewals a sweep apart. It
// reports the cost of one renewal through Server.RenewBatch, the core's
// work and the server's included, the ledger's not (there is none).
func BenchmarkCoveredRenewals(b *testing.B) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	tenants := manyTenants(10_000)
	for i := range tenants {
		// Short leases, so that a tenant renewed once a sweep of the
		// batches is past a quarter lease (keepFor) each time: a renewal
		// any earlier is answered Unchanged, not covered.
		tenants[i].LeaseDuration, tenants[i].SkewMargin = 400*time.Millisecond, 50*time.Millisecond
	}
	srv, err := NewServer(ctx, Config{Tenants: tenants}, NewMemLedger())
	if err != nil {
		b.Fatal(err)
	}
	go srv.Run(ctx)
	regions := []string{"eu", "us", "ap"}
	held := make(map[string][]uint64, len(regions))
	var seq uint64
	const batch = 2048
	epoch := srv.Epoch()
	renew := func(r string, from int) {
		reqs := make([]quota.Request, 0, batch)
		for i := from; i < min(from+batch, len(tenants)); i++ {
			seq++
			reqs = append(reqs, quota.Request{Tenant: tenants[i].Name, Region: r, Seq: seq, Holding: held[r][i], Epoch: epoch, Demand: 0})
		}
		res, err := srv.RenewBatch(ctx, reqs)
		if err != nil {
			b.Fatal(err)
		}
		for k, x := range res {
			if x.Err != nil {
				b.Fatal(x.Err)
			}
			held[r][from+k] = x.Grant.Lease.ID
		}
	}
	for _, r := range regions {
		held[r] = make([]uint64, len(tenants))
	}
	// The first leases, then renewals until the shares settle and a
	// quarter of a lease has passed: from then on they are covered.
	for range 3 {
		for _, r := range regions {
			for from := 0; from < len(tenants); from += batch {
				renew(r, from)
			}
		}
	}
	time.Sleep(200 * time.Millisecond)
	before := srv.Stats()
	b.ResetTimer()
	n := 0
	for b.Loop() {
		r := regions[n%len(regions)]
		renew(r, (n/len(regions)*batch)%len(tenants))
		n++
	}
	b.StopTimer()
	after := srv.Stats()
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n*batch), "ns/renewal")
	if cov := after.Covered - before.Covered; cov < int64(n*batch)/2 {
		b.Fatalf("%d of %d renewals covered: the benchmark measures writes, not covered renewals", cov, n*batch)
	}
}
