//go:build embedetcd

package agent_test

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/afloat/afloat/quota/agent"
	"github.com/afloat/afloat/quota/coordinator/replica"
	"github.com/afloat/afloat/quota/internal/opstest"
	"github.com/afloat/afloat/quota/servicetest"
)

const followConfig = `
regions:
  eu: {token: "eu-token-0123456789"}
  us: {token: "us-token-0123456789"}
tenants:
  - {name: acme, rate: 10, burst: 20}
operators:
  alice: {token: "alice-token-0123456789"}
`

// TestRegionFollowsTenants: a coordinator on an embedded etcd member and
// a region agent on loopback. A tenant created through the tenants API
// is admitted on the agent's POST /v1/allow within a bounded time, at
// its endpoint costs (and at new ones after an update), and shows in the
// agent's /metrics and /v1/status;
// a tenant of another region is never served here; a deleted tenant is
// refused with 404 (as a tenant the region never served), leaves
// /metrics and /v1/status, and is renewed no more.
func TestRegionFollowsTenants(t *testing.T) {
	c := servicetest.New(t, followConfig)
	c.Config.Etcd.Prefix = "/follow-test/"
	coord := c.Coordinator(replica.Options{}).URL
	var logs opstest.Buffer
	const every = 100 * time.Millisecond
	a := c.Agent(agent.Options{Name: "eu", Logger: slog.New(slog.NewTextHandler(&logs, nil)), MetricsTenants: []string{"beta", "gamma"}},
		func(a *agent.Agent) { agent.SetTenantsEvery(a, every) })
	region := a.URL

	admitted := map[string]int64{} // tokens the decision API admitted, by tenant
	allow := func(tenant, endpoint string) (int, bool) {
		t.Helper()
		resp, err := http.Post(region+"/v1/allow", "application/json",
			strings.NewReader(`{"tenant":"`+tenant+`","endpoint":"`+endpoint+`"}`))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var ans agent.AllowAnswer
		json.NewDecoder(resp.Body).Decode(&ans) //nolint:errcheck // a 404's body is an error
		return resp.StatusCode, ans.Allowed
	}
	operator := func(path, body string) {
		t.Helper()
		code, out := opstest.Call(t, "POST", coord+"/v1/tenants"+path, "alice-token-0123456789", "application/json", body)
		if code != 200 {
			t.Fatalf("%s %s: %d %v", path, body, code, out)
		}
	}
	status := func() []string {
		t.Helper()
		resp, err := http.Get(region + "/v1/status")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var st struct{ Tenants []agent.TenantStatus }
		if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, ts := range st.Tenants {
			names = append(names, ts.Tenant)
		}
		return names
	}
	// bounded waits until cond holds: at most 10 s, with the poll at 100 ms
	// and the first renewal at once, a change takes well under a second.
	bounded := func(what string, cond func() bool) time.Duration {
		t.Helper()
		start := time.Now()
		for !cond() {
			if time.Since(start) > 10*time.Second {
				t.Fatalf("%s: not within 10 s", what)
			}
			time.Sleep(20 * time.Millisecond)
		}
		return time.Since(start)
	}

	bounded("acme admitted", func() bool { _, ok := allow("acme", ""); return ok })
	if code, _ := allow("beta", ""); code != 404 {
		t.Fatalf("beta before it exists: %d, want 404", code)
	}

	// Created: beta for eu (an endpoint of cost 5), gamma for us only.
	operator("/create", `{"name":"beta","rate":100,"burst":100,"regions":["eu"],"costs":{"/big":5}}`)
	operator("/create", `{"name":"gamma","rate":100,"burst":100,"regions":["us"]}`)
	took := bounded("beta admitted after its creation", func() bool {
		code, ok := allow("beta", "/big")
		if code != 200 && code != 404 {
			t.Fatalf("beta: %d", code)
		}
		if ok {
			admitted["beta"] += 5
		}
		return ok
	})
	t.Logf("beta admitted %v after its creation", took)
	for range 3 {
		if _, ok := allow("beta", "/big"); ok {
			admitted["beta"] += 5
		}
	}
	if code, _ := allow("gamma", ""); code != 404 {
		t.Fatalf("gamma (us only) in eu: %d, want 404", code)
	}
	if got := strings.Join(status(), ","); got != "acme,beta" {
		t.Fatalf("/v1/status lists %s, want acme,beta", got)
	}
	s := opstest.Scrape(t, region)
	if v := s.Must(t, "afloat_quota_region_tenant_admitted_tokens_total", "tenant", "beta", "reason", "lease"); v != float64(admitted["beta"]) {
		t.Fatalf("beta's admitted tokens in /metrics: %v, want %d (5 per /big)", v, admitted["beta"])
	}
	if v := s.Must(t, "afloat_quota_region_tenant_lease_valid", "tenant", "beta", "region", "eu"); v != 1 {
		t.Fatalf("beta's lease_valid: %v, want 1", v)
	}
	if _, ok := s.Value("afloat_quota_region_tenant_lease_valid", "tenant", "gamma", "region", "eu"); ok {
		t.Fatal("gamma (us only) in eu's /metrics")
	}
	if v := s.Must(t, "afloat_quota_region_metrics_tenants_missing"); v != 1 {
		t.Fatalf("named tenants eu does not serve: %v, want 1 (gamma)", v)
	}
	if v := s.Must(t, "afloat_quota_region_tenants", "state", "valid"); v != 2 {
		t.Fatalf("tenants with a valid lease: %v, want 2 (acme and beta)", v)
	}
	added := strings.Contains(logs.String(), `msg="quota region: tenant added" region=eu tenant=beta version=1`)
	if !added {
		t.Fatal("no log line for beta's addition")
	}

	// Updated: the new cost is in use within a poll.
	operator("/update", `{"name":"beta","costs":{"/big":2}}`)
	bounded("beta's new cost", func() bool { tn, ok := agent.TenantOf(a.Agent, "beta"); return ok && tn.Cost("/big") == 2 })
	before := opstest.Scrape(t, region).Must(t, "afloat_quota_region_tenant_admitted_tokens_total", "tenant", "beta", "reason", "lease")
	bounded("beta admitted at its new cost", func() bool { _, ok := allow("beta", "/big"); return ok })
	if v := opstest.Scrape(t, region).Must(t, "afloat_quota_region_tenant_admitted_tokens_total", "tenant", "beta", "reason", "lease"); v != before+2 {
		t.Fatalf("beta's admitted tokens after one /big at cost 2: %v, want %v", v, before+2)
	}

	// Deleted: refused with 404, gone from /metrics and /v1/status, no
	// more renewals.
	sum := opstest.Scrape(t, region).Must(t, "afloat_quota_region_admitted_tokens_total", "reason", "lease")
	operator("/delete", `{"name":"beta"}`)
	bounded("beta refused after its deletion", func() bool { code, _ := allow("beta", "/big"); return code == 404 })
	if got := strings.Join(status(), ","); got != "acme" {
		t.Fatalf("/v1/status lists %s after beta's deletion, want acme", got)
	}
	s = opstest.Scrape(t, region)
	for _, name := range []string{"afloat_quota_region_tenant_lease_valid", "afloat_quota_region_tenant_balance_tokens"} {
		if _, ok := s.Value(name, "tenant", "beta", "region", "eu"); ok {
			t.Fatalf("%s still has beta after its deletion", name)
		}
	}
	if _, ok := s.Value("afloat_quota_region_tenant_admitted_tokens_total", "tenant", "beta", "reason", "lease"); ok {
		t.Fatal("tenant_admitted_tokens_total still has beta after its deletion")
	}
	if v := s.Must(t, "afloat_quota_region_admitted_tokens_total", "reason", "lease"); v < sum {
		t.Fatalf("the region's admitted tokens after beta's deletion: %v, want at least the %v before (a tenant removed takes nothing from the sums)", v, sum)
	}
	if v := s.Must(t, "afloat_quota_region_metrics_tenants_missing"); v != 2 {
		t.Fatalf("named tenants eu does not serve after beta's deletion: %v, want 2", v)
	}
	removed := strings.Contains(logs.String(), `msg="quota region: tenant removed; its lease goes back" region=eu tenant=beta`)
	mark := logs.Len()
	if !removed {
		t.Fatal("no log line for beta's removal")
	}
	// Ten polls later, nothing of beta in the log: no renewal was tried
	// (a failed one would be logged: the coordinator no longer knows
	// beta), and no poll added it back.
	time.Sleep(10 * every)
	after := logs.String()[mark:]
	if strings.Contains(after, "tenant=beta") {
		t.Fatalf("beta in the agent's log after its removal:\n%s", after)
	}
	if _, ok := a.Limiter().Counts("beta"); ok {
		t.Fatal("the limiter still serves beta")
	}
	if got := strings.Join(a.Limiter().Tenants(), ","); got != "acme" {
		t.Fatalf("the limiter serves %s, want acme", got)
	}
}
