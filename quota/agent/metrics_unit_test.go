package agent

import (
	"bufio"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/afloat/afloat/quota"
	"github.com/afloat/afloat/quota/internal/ops"
	"github.com/afloat/afloat/quota/internal/opstest"
	"github.com/afloat/afloat/quota/region"
)

const sec = int64(time.Second)

// metricsServer serves m's /metrics.
func metricsServer(t *testing.T, m *agentMetrics) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	ops.Observe(mux, m.reg, func() ops.Readiness { return ops.Readiness{} })
	ts := httptest.NewServer(mux)
	t.Cleanup(ts.Close)
	return ts
}

// seriesIn counts the series of one scrape of base's /metrics: the
// samples of the text exposition (a histogram's buckets, sum and count
// each one), every line that is not a comment.
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
		names[strings.TrimRight(line[:strings.IndexAny(line, "{ ")], " ")]++
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return n, names
}

// grantAt asks for tenant's lease at sent and installs a grant of a
// 10 s lease (500 ms skew margin) of rate 10 and burst 20 at once.
func grantAt(t *testing.T, lim *region.Limiter, tenant string, sent int64, id uint64) {
	t.Helper()
	req, err := lim.Request(sent, tenant)
	if err != nil {
		t.Fatal(err)
	}
	in := lim.Install(sent, quota.Grant{Lease: quota.Lease{ID: id, Tenant: tenant, Region: lim.Region(), Epoch: 1,
		Rate: 10 * quota.One, Burst: 20 * quota.One, Activates: time.Duration(sent), Expires: time.Duration(sent) + 10500*time.Millisecond},
		Seq: req.Seq, ValidFor: 10 * time.Second, Margin: 500 * time.Millisecond})
	if !in.OK() {
		t.Fatalf("grant of %s: %v", tenant, in.Outcome)
	}
}

// TestRegionMetricsAggregates: three tenants at a fixed instant — acme
// with a valid lease, beta with one ending in 1.5 s (less than a fifth of
// its 10.5 s term), gamma without — give one tenant in each state; the
// admissions and refusals are summed over the tenants by reason; a
// tenant's own series are there for the names given and the tenants
// refused most, and for no other. A tenant removed takes nothing from the
// sums, and a read lower than the last is held.
func TestRegionMetricsAggregates(t *testing.T) {
	lim, err := region.New(region.DefaultConfig("eu", "acme", "beta", "gamma"))
	opstest.Must(t, err)
	now := 20 * sec
	grantAt(t, lim, "acme", now-1*sec, 1)
	grantAt(t, lim, "beta", now-8*sec, 2)
	m := newAgentMetrics(lim, func() int64 { return now }, nil, []string{"acme", "nobody"}, 1)
	ts := metricsServer(t, m)

	// acme has 10 tokens (a second at 10/s), beta 20 (its burst), gamma
	// no lease.
	for i, c := range []struct {
		tenant string
		cost   int64
		want   bool
	}{{"acme", 4, true}, {"acme", 7, false}, {"beta", 20, true}, {"beta", 25, false}, {"gamma", 3, false}} {
		if got := lim.AllowAt(now, c.tenant, c.cost); got != c.want {
			t.Fatalf("step %d: AllowAt(%s, %d) = %v, want %v", i, c.tenant, c.cost, got, c.want)
		}
	}
	type sample struct {
		name   string
		labels []string
		want   float64
	}
	check := func(step string, s opstest.Scraped, samples []sample) {
		t.Helper()
		for _, x := range samples {
			if v, ok := s.Value(x.name, x.labels...); !ok || v != x.want {
				t.Errorf("%s: %s%v = %v (present %v), want %v", step, x.name, x.labels, v, ok, x.want)
			}
		}
	}
	absent := func(step string, s opstest.Scraped, name string, labels ...string) {
		t.Helper()
		if v, ok := s.Value(name, labels...); ok {
			t.Errorf("%s: %s%v = %v, want no such series", step, name, labels, v)
		}
	}
	s := opstest.Scrape(t, ts.URL)
	check("three tenants", s, []sample{
		{"afloat_quota_region_tenants", []string{"state", "valid", "region", "eu"}, 1},
		{"afloat_quota_region_tenants", []string{"state", "expiring"}, 1},
		{"afloat_quota_region_tenants", []string{"state", "none"}, 1},
		{"afloat_quota_region_admitted_tokens_total", []string{"reason", "lease"}, 4 + 20},
		{"afloat_quota_region_admitted_tokens_total", []string{"reason", "emergency"}, 0},
		{"afloat_quota_region_refused_tokens_total", []string{"reason", "exhausted"}, 7 + 25},
		{"afloat_quota_region_refused_tokens_total", []string{"reason", "no_lease"}, 3},
		{"afloat_quota_region_refused_tokens_total", []string{"reason", "allowance_spent"}, 0},
		{"afloat_quota_region_refused_tokens_total", []string{"reason", "too_large"}, 0},
		{"afloat_quota_region_metrics_tenants_missing", nil, 1},
		// acme, named
		{"afloat_quota_region_tenant_lease_valid", []string{"tenant", "acme"}, 1},
		{"afloat_quota_region_tenant_lease_rate_tokens_per_second", []string{"tenant", "acme"}, 10},
		{"afloat_quota_region_tenant_admitted_tokens_total", []string{"tenant", "acme", "reason", "lease"}, 4},
		{"afloat_quota_region_tenant_refused_tokens_total", []string{"tenant", "acme", "reason", "exhausted"}, 7},
		// beta, refused most (25 tokens)
		{"afloat_quota_region_tenant_lease_valid", []string{"tenant", "beta"}, 1},
		{"afloat_quota_region_tenant_refused_tokens_total", []string{"tenant", "beta", "reason", "exhausted"}, 25},
	})
	if v := s.Must(t, "afloat_quota_region_tenant_lease_remaining_seconds", "tenant", "acme"); v < 8.4 || v > 8.5 {
		t.Errorf("acme's lease_remaining_seconds %v, want about 8.5", v)
	}
	absent("three tenants", s, "afloat_quota_region_tenant_lease_valid", "tenant", "gamma")
	absent("three tenants", s, "afloat_quota_region_tenant_lease_valid", "tenant", "nobody")

	// beta removed: its counts stay in the sums; gamma is now the tenant
	// refused most.
	_, removed, err := lim.SetTenants(now, []string{"acme", "gamma"})
	if err != nil || !slices.Equal(removed, []string{"beta"}) {
		t.Fatalf("SetTenants: removed %v, %v", removed, err)
	}
	lim.AllowAt(now, "gamma", 2)
	s = opstest.Scrape(t, ts.URL)
	check("beta removed", s, []sample{
		{"afloat_quota_region_tenants", []string{"state", "valid"}, 1},
		{"afloat_quota_region_tenants", []string{"state", "expiring"}, 0},
		{"afloat_quota_region_tenants", []string{"state", "none"}, 1},
		{"afloat_quota_region_admitted_tokens_total", []string{"reason", "lease"}, 4 + 20},
		{"afloat_quota_region_refused_tokens_total", []string{"reason", "exhausted"}, 7 + 25},
		{"afloat_quota_region_refused_tokens_total", []string{"reason", "no_lease"}, 3 + 2},
		{"afloat_quota_region_tenant_refused_tokens_total", []string{"tenant", "gamma", "reason", "no_lease"}, 5},
		{"afloat_quota_region_tenant_lease_valid", []string{"tenant", "gamma"}, 0},
	})
	absent("beta removed", s, "afloat_quota_region_tenant_lease_valid", "tenant", "beta")

	// A read lower than the last reported (as one racing requests may
	// be) is held at the last.
	m.region.counts["acme"] = tenantCounts{Counts: region.Counts{Admitted: 100}}
	s = opstest.Scrape(t, ts.URL)
	check("a low read", s, []sample{
		{"afloat_quota_region_admitted_tokens_total", []string{"reason", "lease"}, 100 + 20},
		{"afloat_quota_region_tenant_admitted_tokens_total", []string{"tenant", "acme", "reason", "lease"}, 100},
	})
}

// TestLeaseState: the states at the edges of the horizon.
func TestLeaseState(t *testing.T) {
	lease := quota.Lease{ID: 1, Activates: 0, Expires: 10 * time.Second}
	for i, tc := range []struct {
		st   region.Status
		want int
	}{
		{region.Status{}, stateNone},
		{region.Status{Lease: lease, Valid: true, Until: 10 * sec}, stateValid},
		{region.Status{Lease: lease, Valid: true, Until: 2 * sec}, stateValid}, // a fifth left: not less
		{region.Status{Lease: lease, Valid: true, Until: 2*sec - 1}, stateExpiring},
		{region.Status{Lease: lease, Valid: false, Until: 2*sec - 1}, stateNone},
	} {
		if got := leaseState(0, tc.st); got != tc.want {
			t.Errorf("step %d: leaseState(%+v) = %s, want %s", i, tc.st, stateLabels[got], stateLabels[tc.want])
		}
	}
}

// TestTopRefused: the tenants refused most, most first, ties by name;
// none never refused; none at all for n 0.
func TestTopRefused(t *testing.T) {
	offers := []ranked{{"a", 5}, {"b", 0}, {"c", 9}, {"d", 5}, {"e", 1}, {"f", 9}, {"g", 7}}
	for i, tc := range []struct {
		n    int
		want string
	}{
		{0, ""}, {1, "c"}, {3, "c f g"}, {5, "c f g a d"}, {10, "c f g a d e"},
	} {
		top := topRefused{n: tc.n}
		for _, r := range offers {
			top.offer(r)
		}
		var got []string
		for _, r := range top.list {
			got = append(got, r.tenant)
		}
		if strings.Join(got, " ") != tc.want {
			t.Errorf("step %d: top %d = %v, want %s", i, tc.n, got, tc.want)
		}
	}
}

// TestMetricsAtMaxTenants: a region of region.MaxTenants (100,000)
// tenants — two thirds with a valid lease, some refused — scrapes in
// under 10,000 series, with the bounded set at its largest (100 names
// and the 100 refused most) and without it; the state gauges add up to
// every tenant.
func TestMetricsAtMaxTenants(t *testing.T) {
	names := make([]string, region.MaxTenants)
	for i := range names {
		names[i] = fmt.Sprintf("tenant-%06d", i)
	}
	lim, err := region.New(region.DefaultConfig("eu", names...))
	opstest.Must(t, err)
	now := 20 * sec
	for i, name := range names {
		if i%3 != 0 {
			grantAt(t, lim, name, now-sec, uint64(i+1))
		}
		if i%7 == 0 {
			lim.AllowAt(now, name, int64(1+i%50)) // refused without a lease, or taken from one
		}
	}
	var fewest int
	for i, set := range []struct {
		named []string
		top   int
	}{
		{nil, 0},
		{names[:ops.MaxMetricsTenants], ops.MaxMetricsTenants},
	} {
		m := newAgentMetrics(lim, func() int64 { return now }, nil, set.named, set.top)
		ts := metricsServer(t, m)
		n, per := seriesIn(t, ts.URL)
		t.Logf("step %d: %d names, top %d: %d series in a scrape of %d tenants (%d of them a tenant's own)", i, len(set.named), set.top, n, len(names),
			per["afloat_quota_region_tenant_lease_valid"]*13)
		if n >= 10_000 {
			t.Errorf("step %d: %d series, want under 10,000", i, n)
		}
		if got, want := per["afloat_quota_region_tenant_lease_valid"], len(set.named)+set.top; got != want {
			t.Errorf("step %d: %d tenants with series of their own, want %d", i, got, want)
		}
		if i == 0 {
			fewest = n
		}
		s := opstest.Scrape(t, ts.URL)
		valid, none := s.Must(t, "afloat_quota_region_tenants", "state", "valid"), s.Must(t, "afloat_quota_region_tenants", "state", "none")
		if valid+none+s.Must(t, "afloat_quota_region_tenants", "state", "expiring") != float64(len(names)) || none != float64((len(names)+2)/3) {
			t.Errorf("step %d: %v valid and %v none of %d tenants, want %d none", i, valid, none, len(names), (len(names)+2)/3)
		}
	}
	if fewest >= 1000 {
		t.Errorf("%d series without a tenant's own, want a few hundred", fewest)
	}
}

// TestMetricsOptionsRefused: New refuses a bounded set it cannot export,
// naming the flag and the range.
func TestMetricsOptionsRefused(t *testing.T) {
	cfg := opstest.MustConfig(t, good)
	many := make([]string, ops.MaxMetricsTenants+1)
	for i := range many {
		many[i] = fmt.Sprint("t", i)
	}
	for i, tc := range []struct {
		edit func(o *Options)
		want string
	}{
		{func(o *Options) { o.MetricsTop = -1 }, "--metrics-top -1: want 0 (none) to 100 tenants"},
		{func(o *Options) { o.MetricsTop = 101 }, "--metrics-top 101: want 0 (none) to 100 tenants"},
		{func(o *Options) { o.MetricsTenants = many }, "--metrics-tenants: 101 names: want 0 to 100"},
		{func(o *Options) { o.MetricsTenants = []string{"acme", ""} }, `--metrics-tenants: name 2 "": want 1 to 128 bytes, no slash`},
		{func(o *Options) { o.MetricsTenants = []string{"a/b"} }, `--metrics-tenants: name 1 "a/b": want 1 to 128 bytes, no slash`},
		{func(o *Options) { o.MetricsTenants = []string{"acme", "beta", "acme"} }, `--metrics-tenants: "acme" given twice`},
	} {
		o := Options{Config: cfg, Name: "eu", Coordinators: []string{"127.0.0.1:1"}, Listen: "127.0.0.1:0", Logger: opstest.QuietLog()}
		tc.edit(&o)
		if _, err := New(o); !errors.Is(err, ErrOptions) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("step %d: New: %v; want ErrOptions naming %q", i, err, tc.want)
		}
	}
	o := Options{Config: cfg, Name: "eu", Coordinators: []string{"127.0.0.1:1"}, Listen: "127.0.0.1:0", Logger: opstest.QuietLog(),
		MetricsTenants: many[:100], MetricsTop: 100}
	if _, err := New(o); err != nil {
		t.Errorf("New with 100 names and the top 100: %v", err)
	}
}
