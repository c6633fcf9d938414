package agent

import (
	"io"
	"log/slog"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/afloat/afloat/quota"
	"github.com/afloat/afloat/quota/config"
	"github.com/afloat/afloat/quota/internal/ops"
	"github.com/afloat/afloat/quota/internal/opstest"
)

// TestRegionReadiness: a region agent is ready once it holds a valid
// lease for every tenant it serves, not before, and says how far it is.
func TestRegionReadiness(t *testing.T) {
	cfg, err := config.ParseConfig([]byte(opstest.ConfigFile("metrics.yaml")))
	if err != nil {
		t.Fatal(err)
	}
	a, err := New(Options{Config: cfg, Name: "eu", Coordinators: []string{"http://127.0.0.1:1"},
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
		want  ops.Readiness
	}{
		{"", 503, ops.Readiness{Waiting: []string{"acme", "beta"}, Missing: 2, Progress: "0 of 2 tenants leased"}},
		{"acme", 503, ops.Readiness{Waiting: []string{"beta"}, Missing: 1, Progress: "1 of 2 tenants leased"}},
		{"beta", 200, ops.Readiness{Ready: true, Progress: "2 of 2 tenants leased"}},
	} {
		if step.grant != "" {
			grant(step.grant, uint64(i))
		}
		code, rd := opstest.Readyz(t, ts.URL)
		if code != step.code || !opstest.SameReadiness(rd, step.want) {
			t.Errorf("step %d: /readyz = %d %+v, want %d %+v", i, code, rd, step.code, step.want)
		}
		if code := opstest.Healthz(t, ts.URL); code != 200 {
			t.Errorf("step %d: /healthz = %d", i, code)
		}
	}
	s := opstest.Scrape(t, ts.URL)
	if v := s.Must(t, "afloat_quota_region_tenants", "state", "valid", "region", "eu"); v != 2 {
		t.Fatalf("tenants with a valid lease: %v, want 2", v)
	}
}

// TestThousands: the readiness's figures are written as the docs write
// them.
func TestThousands(t *testing.T) {
	for i, tc := range []struct {
		n    int
		want string
	}{{0, "0"}, {999, "999"}, {1000, "1,000"}, {7200, "7,200"}, {100000, "100,000"}, {1234567, "1,234,567"}, {-1000, "-1,000"}} {
		if got := thousands(tc.n); got != tc.want {
			t.Errorf("step %d: thousands(%d) = %q, want %q", i, tc.n, got, tc.want)
		}
	}
}
