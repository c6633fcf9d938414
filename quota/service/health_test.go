package service

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/afloat/afloat/quota"
	"github.com/afloat/afloat/quota/coordinator"
)

// TestCoordinatorReadiness: /readyz of a replica in each state — no
// leader known, a follower of a known leader, a candidate that has won
// but not loaded the ledger, the leader — and /healthz in all of them.
func TestCoordinatorReadiness(t *testing.T) {
	cfg, err := ParseConfig([]byte(metricsConfigNoEtcd))
	if err != nil {
		t.Fatal(err)
	}
	var (
		srv    *coordinator.Server
		leader string
	)
	const self = "http://self:7070"
	current := func() *coordinator.Server { return srv }
	m := newCoordMetrics(current)
	ts := httptest.NewServer(m.handler(http.NotFoundHandler(), coordReady(current, func() string { return leader }, self)))
	defer ts.Close()

	led, err := coordinator.NewServer(context.Background(), coordinator.Config{Tenants: cfg.QuotaTenants()}, coordinator.NewMemLedger())
	if err != nil {
		t.Fatal(err)
	}
	for i, tc := range []struct {
		leader string
		srv    *coordinator.Server
		code   int
		want   Readiness
		gauge  float64
	}{
		{"", nil, 503, Readiness{Role: "follower"}, 0},
		{"http://other:7070", nil, 200, Readiness{Ready: true, Role: "follower", Leader: "http://other:7070"}, 0},
		{self, nil, 503, Readiness{Role: "candidate", Leader: self}, 0},
		{self, led, 200, Readiness{Ready: true, Role: "leader", Leader: self, Epoch: 1}, 1},
	} {
		leader, srv = tc.leader, tc.srv
		code, rd := readyz(t, ts.URL)
		if code != tc.code || !readinessEqual(rd, tc.want) {
			t.Errorf("step %d: /readyz = %d %+v, want %d %+v", i, code, rd, tc.code, tc.want)
		}
		if g := scrape(t, ts.URL).must(t, "afloat_quota_coordinator_leader"); g != tc.gauge {
			t.Errorf("step %d: leader gauge %v, want %v", i, g, tc.gauge)
		}
		if code := healthz(t, ts.URL); code != 200 {
			t.Errorf("step %d: /healthz = %d", i, code)
		}
	}
	// The API behind is still reached; the health routes are GET-only.
	for _, tc := range []struct {
		method, path string
		code         int
	}{
		{"GET", "/v1/anything", 404},
		{"POST", "/metrics", 405},
		{"POST", "/readyz", 405},
		{"DELETE", "/healthz", 405},
	} {
		req, _ := http.NewRequest(tc.method, ts.URL+tc.path, strings.NewReader("{}"))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.code {
			t.Errorf("%s %s: %d, want %d", tc.method, tc.path, resp.StatusCode, tc.code)
		}
	}
}

func readinessEqual(a, b Readiness) bool {
	return a.Ready == b.Ready && a.Role == b.Role && a.Leader == b.Leader && a.Epoch == b.Epoch &&
		slices.Equal(a.Waiting, b.Waiting) && a.Missing == b.Missing
}

// TestRegionReadiness: a region agent is ready once it holds a valid
// lease for every tenant it serves, not before.
func TestRegionReadiness(t *testing.T) {
	cfg, err := ParseConfig([]byte(metricsConfigNoEtcd))
	if err != nil {
		t.Fatal(err)
	}
	a, err := NewAgent(RegionOptions{Config: cfg, Name: "eu", Coordinators: []string{"http://127.0.0.1:1"},
		Listen: "127.0.0.1:0", Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(a.Handler())
	defer ts.Close()
	grant := func(tenant string, id uint64) {
		now := a.now()
		req, err := a.lim.Request(now, tenant)
		if err != nil {
			t.Fatal(err)
		}
		in := a.lim.Install(now, quota.Grant{Lease: quota.Lease{ID: id, Tenant: tenant, Region: "eu", Epoch: 1,
			Rate: 10 * quota.One, Burst: 10 * quota.One}, Seq: req.Seq, ValidFor: time.Hour, Margin: time.Second})
		if !in.OK() {
			t.Fatal(in.Outcome)
		}
	}
	for i, step := range []struct {
		grant string
		code  int
		want  Readiness
	}{
		{"", 503, Readiness{Waiting: []string{"acme", "beta"}, Missing: 2}},
		{"acme", 503, Readiness{Waiting: []string{"beta"}, Missing: 1}},
		{"beta", 200, Readiness{Ready: true}},
	} {
		if step.grant != "" {
			grant(step.grant, uint64(i))
		}
		code, rd := readyz(t, ts.URL)
		if code != step.code || !readinessEqual(rd, step.want) {
			t.Errorf("step %d: /readyz = %d %+v, want %d %+v", i, code, rd, step.code, step.want)
		}
		if code := healthz(t, ts.URL); code != 200 {
			t.Errorf("step %d: /healthz = %d", i, code)
		}
	}
	s := scrape(t, ts.URL)
	if v := s.must(t, "afloat_quota_region_lease_valid", "tenant", "beta", "region", "eu"); v != 1 {
		t.Fatalf("lease_valid of beta: %v", v)
	}
}

// TestMonotonic: a counter read lower than last time reports the last
// value; a series missing from a scrape is forgotten.
func TestMonotonic(t *testing.T) {
	var m monotonic
	d := prometheus.NewDesc("x", "x", nil, nil)
	a, b := seriesKey{d: d, a: "acme"}, seriesKey{d: d, a: "beta"}
	for i, step := range []struct {
		keys []seriesKey
		vals []float64
		want []float64
	}{
		{[]seriesKey{a, b}, []float64{10, 5}, []float64{10, 5}},
		{[]seriesKey{a, b}, []float64{9, 7}, []float64{10, 7}},  // a read racing requests: held
		{[]seriesKey{a}, []float64{12}, []float64{12}},          // beta gone
		{[]seriesKey{a, b}, []float64{12, 1}, []float64{12, 1}}, // beta back, from its new count
	} {
		m.begin()
		for j, k := range step.keys {
			if got := m.at(k, step.vals[j]); got != step.want[j] {
				t.Errorf("step %d: at(%v, %v) = %v, want %v", i, k, step.vals[j], got, step.want[j])
			}
		}
		m.end()
	}
}

// TestScrapeSurvivesABadLabel: a tenant name Prometheus refuses (not
// UTF-8) costs its own series, not the scrape (with the default error
// handling the whole scrape would be a 500) or the process.
func TestScrapeSurvivesABadLabel(t *testing.T) {
	srv, err := coordinator.NewServer(context.Background(), coordinator.Config{Tenants: []quota.Tenant{
		{Name: "ok", Rate: quota.One, Burst: quota.One, Regions: []string{"eu"}},
		{Name: "bad\xff", Rate: quota.One, Burst: quota.One, Regions: []string{"eu"}},
	}}, coordinator.NewMemLedger())
	if err != nil {
		t.Fatal(err)
	}
	current := func() *coordinator.Server { return srv }
	m := newCoordMetrics(current)
	ts := httptest.NewServer(m.handler(http.NotFoundHandler(), coordReady(current, func() string { return "" }, "")))
	defer ts.Close()
	s := scrape(t, ts.URL)
	if v := s.must(t, "afloat_quota_coordinator_tenant_rate_tokens_per_second", "tenant", "ok"); v != 1 {
		t.Fatalf("the good tenant's R: %v", v)
	}
	if v := s.must(t, "afloat_quota_coordinator_leader"); v != 1 {
		t.Fatalf("leader: %v", v)
	}
}

// TestCoordinatorMetricsFollowTenants: a tenant created through the
// leader's API shows in the next scrape, and is gone from the one after
// its deletion — the collector reads the leader's own list.
func TestCoordinatorMetricsFollowTenants(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cfg, err := ParseConfig([]byte(metricsConfigNoEtcd))
	if err != nil {
		t.Fatal(err)
	}
	srv, err := coordinator.NewServer(ctx, coordinator.Config{Tenants: cfg.QuotaTenants()}, coordinator.NewMemLedger())
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { srv.Run(ctx); close(done) }() //nolint:errcheck // ends with ctx
	defer func() { cancel(); <-done }()
	current := func() *coordinator.Server { return srv }
	ts := httptest.NewServer(newCoordMetrics(current).handler(http.NotFoundHandler(), coordReady(current, func() string { return "" }, "")))
	defer ts.Close()
	const rate = "afloat_quota_coordinator_tenant_rate_tokens_per_second"
	if _, ok := scrape(t, ts.URL).value(rate, "tenant", "gamma"); ok {
		t.Fatal("gamma before it exists")
	}
	gamma := quota.Tenant{Name: "gamma", Rate: 7 * quota.One, Burst: 70 * quota.One, Regions: []string{"eu"}}.WithDefaults()
	if _, err := srv.PutTenant(ctx, gamma, "test", true, 0); err != nil {
		t.Fatal(err)
	}
	s := scrape(t, ts.URL)
	if v := s.must(t, rate, "tenant", "gamma"); v != 7 {
		t.Fatalf("gamma's R: %v, want 7", v)
	}
	if v := s.must(t, "afloat_quota_coordinator_share_rate_tokens_per_second", "tenant", "gamma", "region", "eu"); v != 0 {
		t.Fatalf("gamma's share before any renewal: %v", v)
	}
	if err := srv.DeleteTenant(ctx, "gamma", "test", 0); err != nil {
		t.Fatal(err)
	}
	if _, ok := scrape(t, ts.URL).value(rate, "tenant", "gamma"); ok {
		t.Fatal("gamma after its deletion")
	}
	if v := scrape(t, ts.URL).must(t, rate, "tenant", "acme"); v != 10 {
		t.Fatalf("acme's R: %v", v)
	}
}
