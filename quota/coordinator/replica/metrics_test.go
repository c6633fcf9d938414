package replica

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/afloat/afloat/quota"
	"github.com/afloat/afloat/quota/coordinator"
	"github.com/afloat/afloat/quota/internal/ops"
	"github.com/afloat/afloat/quota/internal/opstest"
	"github.com/afloat/afloat/quota/remote"
)

// leadingServer runs a server of tenants on an in-memory ledger until the
// test ends.
func leadingServer(t testing.TB, tenants []quota.Tenant) *coordinator.Server {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	srv, err := coordinator.NewServer(ctx, coordinator.Config{Tenants: tenants}, coordinator.NewMemLedger())
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Go(func() { srv.Run(ctx) }) //nolint:errcheck // ends with ctx
	t.Cleanup(func() { cancel(); wg.Wait() })
	return srv
}

// metricsOf serves the metrics of a replica that leads with srv, naming
// named.
func metricsOf(t testing.TB, srv *coordinator.Server, named []string) *httptest.Server {
	t.Helper()
	current := func() *coordinator.Server { return srv }
	ts := httptest.NewServer(newCoordMetrics(current, named).handler(http.NotFoundHandler(),
		coordReady(current, func() string { return "" }, "", func() bool { return false })))
	t.Cleanup(ts.Close)
	return ts
}

// renew renews each tenant's lease in region, in calls of at most
// remote.MaxBatch, as a region agent does.
func renew(t testing.TB, srv *coordinator.Server, region string, tenants []string) {
	t.Helper()
	for len(tenants) > 0 {
		n := min(len(tenants), remote.MaxBatch)
		reqs := make([]quota.Request, n)
		for i, name := range tenants[:n] {
			reqs[i] = quota.Request{Tenant: name, Region: region, Seq: 1, Demand: -1}
		}
		res, err := srv.RenewBatch(t.Context(), reqs)
		if err != nil {
			t.Fatal(err)
		}
		for i, r := range res {
			if r.Err != nil {
				t.Fatalf("%s in %s: %v", reqs[i].Tenant, region, r.Err)
			}
		}
		tenants = tenants[n:]
	}
}

// TestCoordinatorMetricsAggregates: three tenants, acme leased in eu and
// us, beta in eu, gamma nowhere: the sums by region — leases, tenants
// leased and not, shares — are those of the tenants' own series, and
// the server's queue is empty and has refused nothing.
func TestCoordinatorMetricsAggregates(t *testing.T) {
	tenant := func(name string, r, b int64, regions ...string) quota.Tenant {
		return quota.Tenant{Name: name, Rate: quota.Micro(r) * quota.One, Burst: quota.Micro(b) * quota.One, Regions: regions}.WithDefaults()
	}
	srv := leadingServer(t, []quota.Tenant{
		tenant("acme", 10, 20, "eu", "us"), tenant("beta", 100, 100, "eu"), tenant("gamma", 1, 1, "eu", "us"),
	})
	ts := metricsOf(t, srv, []string{"acme", "beta", "gamma", "nobody"})
	renew(t, srv, "eu", []string{"acme", "beta"})
	renew(t, srv, "us", []string{"acme"})
	s := opstest.Scrape(t, ts.URL)
	for _, x := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"afloat_quota_coordinator_leader", nil, 1},
		{"afloat_quota_coordinator_tenants", nil, 3},
		{"afloat_quota_coordinator_rate_tokens_per_second", nil, 111},
		{"afloat_quota_coordinator_burst_tokens", nil, 121},
		{"afloat_quota_coordinator_live_leases", []string{"region", "eu"}, 2},
		{"afloat_quota_coordinator_live_leases", []string{"region", "us"}, 1},
		{"afloat_quota_coordinator_region_tenants", []string{"region", "eu", "state", "leased"}, 2},
		{"afloat_quota_coordinator_region_tenants", []string{"region", "eu", "state", "none"}, 1},
		{"afloat_quota_coordinator_region_tenants", []string{"region", "us", "state", "leased"}, 1},
		{"afloat_quota_coordinator_region_tenants", []string{"region", "us", "state", "none"}, 1},
		{"afloat_quota_coordinator_metrics_tenants_missing", nil, 1},
		{"afloat_quota_coordinator_tenant_live_leases", []string{"tenant", "gamma", "region", "eu"}, 0},
		{"afloat_quota_coordinator_queued_steps", nil, 0},
		{"afloat_quota_coordinator_busy_refusals_total", nil, 0},
		{"afloat_quota_coordinator_abandoned_steps_total", nil, 0},
	} {
		if v, ok := s.Value(x.name, x.labels...); !ok || v != x.want {
			t.Errorf("%s%v = %v (present %v), want %v", x.name, x.labels, v, ok, x.want)
		}
	}
	for _, region := range []string{"eu", "us"} {
		for _, name := range []string{"share_rate_tokens_per_second", "share_burst_tokens"} {
			var sum float64
			for _, tenant := range []string{"acme", "beta", "gamma"} {
				v, _ := s.Value("afloat_quota_coordinator_tenant_"+name, "tenant", tenant, "region", region)
				sum += v
			}
			if v := s.Must(t, "afloat_quota_coordinator_"+name, "region", region); v != sum || v == 0 {
				t.Errorf("%s{region=%s} = %v, want the tenants' sum %v (not 0)", name, region, v, sum)
			}
		}
	}
}

// TestCoordinatorMetricsAtMaxTenants: a leader of 100,000 tenants in
// three regions, each leased in one, scrapes in under 10,000 series with
// 100 tenants named and without; the sums count every tenant.
func TestCoordinatorMetricsAtMaxTenants(t *testing.T) {
	const n = maxTenants
	srv, names := leaderAtMaxTenants(t)
	for i, named := range [][]string{nil, names[:ops.MaxMetricsTenants]} {
		ts := metricsOf(t, srv, named)
		count, per := seriesIn(t, ts.URL)
		t.Logf("step %d: %d tenants named: %d series in a scrape of %d tenants (%d of them a tenant's own)", i, len(named), count, n,
			per["afloat_quota_coordinator_tenant_rate_tokens_per_second"]*12)
		if count >= 10_000 {
			t.Errorf("step %d: %d series, want under 10,000", i, count)
		}
		if got := per["afloat_quota_coordinator_tenant_rate_tokens_per_second"]; got != len(named) {
			t.Errorf("step %d: %d tenants with series of their own, want %d", i, got, len(named))
		}
		s := opstest.Scrape(t, ts.URL)
		for _, x := range []struct {
			name   string
			labels []string
			want   float64
		}{
			{"afloat_quota_coordinator_tenants", nil, n},
			{"afloat_quota_coordinator_live_leases", []string{"region", "eu"}, n},
			{"afloat_quota_coordinator_region_tenants", []string{"region", "eu", "state", "leased"}, n},
			{"afloat_quota_coordinator_region_tenants", []string{"region", "us", "state", "none"}, n},
			{"afloat_quota_coordinator_rate_tokens_per_second", nil, n},
		} {
			if v := s.Must(t, x.name, x.labels...); v != x.want {
				t.Errorf("step %d: %s%v = %v, want %v", i, x.name, x.labels, v, x.want)
			}
		}
	}
}

// maxTenants is the most tenants a leader serves.
const maxTenants = 100_000

// leaderAtMaxTenants runs a leader of maxTenants tenants in three
// regions, each leased in eu, and gives their names.
func leaderAtMaxTenants(t testing.TB) (*coordinator.Server, []string) {
	t.Helper()
	tenants := make([]quota.Tenant, maxTenants)
	names := make([]string, maxTenants)
	for i := range tenants {
		names[i] = fmt.Sprintf("tenant-%06d", i)
		// Hour-long leases: none expires while a loaded machine takes
		// its time over the scrapes.
		tenants[i] = quota.Tenant{Name: names[i], Rate: quota.One, Burst: quota.One, Regions: []string{"eu", "us", "ap"},
			LeaseDuration: time.Hour}.WithDefaults()
	}
	srv := leadingServer(t, tenants)
	renew(t, srv, "eu", names)
	return srv, names
}

// seriesIn counts the series of one scrape of base's /metrics: the
// samples of the text exposition (a histogram's buckets, sum and count
// each one), every line that is not a comment; and the samples by name.
func seriesIn(t *testing.T, base string) (n int, names map[string]int) {
	t.Helper()
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	names = map[string]int{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		n++
		names[line[:strings.IndexAny(line, "{ ")]]++
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return n, names
}
