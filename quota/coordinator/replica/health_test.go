package replica

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/afloat/afloat/quota"
	"github.com/afloat/afloat/quota/config"
	"github.com/afloat/afloat/quota/coordinator"
	"github.com/afloat/afloat/quota/etcdledger"
	"github.com/afloat/afloat/quota/internal/ops"
	"github.com/afloat/afloat/quota/internal/opstest"
)

// TestCoordinatorReadiness: /readyz of a replica in each state — no
// leader known, a follower of a known leader seen leading within the
// election bound, a follower of one not seen leading for longer (no
// leader), a candidate that has won but not loaded the ledger, the
// leader — and /healthz in all of them.
func TestCoordinatorReadiness(t *testing.T) {
	cfg, err := config.ParseConfig([]byte(opstest.ConfigFile("metrics.yaml")))
	if err != nil {
		t.Fatal(err)
	}
	var (
		srv    *coordinator.Server
		leader string
		fresh  bool
	)
	const self = "http://self:7070"
	current := func() *coordinator.Server { return srv }
	m := newCoordMetrics(current, nil)
	ts := httptest.NewServer(m.handler(http.NotFoundHandler(), coordReady(current, func() string { return leader }, self, func() bool { return fresh })))
	defer ts.Close()

	led, err := coordinator.NewServer(context.Background(), coordinator.Config{Tenants: cfg.QuotaTenants()}, coordinator.NewMemLedger())
	if err != nil {
		t.Fatal(err)
	}
	for i, tc := range []struct {
		leader string
		fresh  bool
		srv    *coordinator.Server
		code   int
		want   ops.Readiness
		gauge  float64
	}{
		{"", false, nil, 503, ops.Readiness{Role: "follower", Reason: "no leader"}, 0},
		{"", true, nil, 503, ops.Readiness{Role: "follower", Reason: "no leader"}, 0},
		{"http://other:7070", true, nil, 200, ops.Readiness{Ready: true, Role: "follower", Leader: "http://other:7070"}, 0},
		{"http://other:7070", false, nil, 503, ops.Readiness{Role: "follower", Leader: "http://other:7070", Reason: "no leader"}, 0},
		{self, false, nil, 503, ops.Readiness{Role: "candidate", Leader: self}, 0},
		{self, false, led, 200, ops.Readiness{Ready: true, Role: "leader", Leader: self, Epoch: 1}, 1},
	} {
		leader, fresh, srv = tc.leader, tc.fresh, tc.srv
		code, rd := opstest.Readyz(t, ts.URL)
		if code != tc.code || !opstest.SameReadiness(rd, tc.want) {
			t.Errorf("step %d: /readyz = %d %+v, want %d %+v", i, code, rd, tc.code, tc.want)
		}
		if g := opstest.Scrape(t, ts.URL).Must(t, "afloat_quota_coordinator_leader"); g != tc.gauge {
			t.Errorf("step %d: leader gauge %v, want %v", i, g, tc.gauge)
		}
		if code := opstest.Healthz(t, ts.URL); code != 200 {
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

// TestCoordinatorMetricsFollowTenants: a tenant created through the
// leader's API shows in the next scrape — its own series, as it is named
// (--metrics-tenants), and in the sums — and is gone from the one after
// its deletion: the collector reads the leader's own list.
func TestCoordinatorMetricsFollowTenants(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cfg, err := config.ParseConfig([]byte(opstest.ConfigFile("metrics.yaml")))
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
	ts := httptest.NewServer(newCoordMetrics(current, []string{"acme", "gamma"}).handler(http.NotFoundHandler(), coordReady(current, func() string { return "" }, "", func() bool { return false })))
	defer ts.Close()
	const rate = "afloat_quota_coordinator_tenant_rate_tokens_per_second"
	s := opstest.Scrape(t, ts.URL)
	if _, ok := s.Value(rate, "tenant", "gamma"); ok {
		t.Fatal("gamma before it exists")
	}
	if v := s.Must(t, "afloat_quota_coordinator_metrics_tenants_missing"); v != 1 {
		t.Fatalf("named tenants missing before gamma exists: %v, want 1", v)
	}
	if v := s.Must(t, "afloat_quota_coordinator_tenants"); v != 2 {
		t.Fatalf("tenants before gamma: %v, want 2", v)
	}
	gamma := quota.Tenant{Name: "gamma", Rate: 7 * quota.One, Burst: 70 * quota.One, Regions: []string{"eu"}}.WithDefaults()
	if _, err := srv.PutTenant(ctx, gamma, "test", true, 0); err != nil {
		t.Fatal(err)
	}
	s = opstest.Scrape(t, ts.URL)
	if v := s.Must(t, rate, "tenant", "gamma"); v != 7 {
		t.Fatalf("gamma's R: %v, want 7", v)
	}
	if v := s.Must(t, "afloat_quota_coordinator_tenant_share_rate_tokens_per_second", "tenant", "gamma", "region", "eu"); v != 0 {
		t.Fatalf("gamma's share before any renewal: %v", v)
	}
	for _, x := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"afloat_quota_coordinator_metrics_tenants_missing", nil, 0},
		{"afloat_quota_coordinator_tenants", nil, 3},
		{"afloat_quota_coordinator_rate_tokens_per_second", nil, 10 + 100 + 7},
		{"afloat_quota_coordinator_region_tenants", []string{"region", "eu", "state", "none"}, 3},
	} {
		if v := s.Must(t, x.name, x.labels...); v != x.want {
			t.Fatalf("with gamma: %s%v = %v, want %v", x.name, x.labels, v, x.want)
		}
	}
	if err := srv.DeleteTenant(ctx, "gamma", "test", 0); err != nil {
		t.Fatal(err)
	}
	s = opstest.Scrape(t, ts.URL)
	if _, ok := s.Value(rate, "tenant", "gamma"); ok {
		t.Fatal("gamma after its deletion")
	}
	if v := s.Must(t, "afloat_quota_coordinator_tenants"); v != 2 {
		t.Fatalf("tenants after gamma's deletion: %v, want 2", v)
	}
	if v := opstest.Scrape(t, ts.URL).Must(t, rate, "tenant", "acme"); v != 10 {
		t.Fatalf("acme's R: %v", v)
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
	m := newCoordMetrics(current, []string{"ok", "bad\xff"})
	ts := httptest.NewServer(m.handler(http.NotFoundHandler(), coordReady(current, func() string { return "" }, "", func() bool { return false })))
	defer ts.Close()
	s := opstest.Scrape(t, ts.URL)
	if v := s.Must(t, "afloat_quota_coordinator_tenant_rate_tokens_per_second", "tenant", "ok"); v != 1 {
		t.Fatalf("the good tenant's R: %v", v)
	}
	if v := s.Must(t, "afloat_quota_coordinator_leader"); v != 1 {
		t.Fatalf("leader: %v", v)
	}
}

// TestSightingWithinElectionBound: a follower's last sighting of a
// leading coordinator keeps it ready for the election bound (twice the
// session TTL) and no longer; never seen is never ready.
func TestSightingWithinElectionBound(t *testing.T) {
	t0 := time.Unix(1_800_000_000, 0)
	bound := electionBound(0)
	if bound != 2*etcdledger.DefaultSessionTTL*time.Second {
		t.Fatalf("electionBound(0) = %v, want twice the default TTL", bound)
	}
	if b := electionBound(30); b != time.Minute {
		t.Fatalf("electionBound(30) = %v, want 1m", b)
	}
	var s sighting
	if s.within(t0, bound) {
		t.Fatal("step 0: never seen, yet within the bound")
	}
	s.saw(t0)
	for i, tc := range []struct {
		after time.Duration
		want  bool
	}{{0, true}, {bound - time.Nanosecond, true}, {bound, true}, {bound + time.Nanosecond, false}, {time.Hour, false}} {
		if got := s.within(t0.Add(tc.after), bound); got != tc.want {
			t.Errorf("step %d: within(t0+%v, %v) = %v, want %v", i+1, tc.after, bound, got, tc.want)
		}
	}
	s.saw(t0.Add(time.Hour))
	if !s.within(t0.Add(time.Hour+bound), bound) {
		t.Error("a new sighting did not renew readiness")
	}
}
