//go:build embedetcd

package service

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
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
	cfg, err := ParseConfig([]byte(followConfig))
	if err != nil {
		t.Fatal(err)
	}
	cfg.Etcd.Prefix = "/follow-test/"
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	m, err := StartMember(ctx, MemberConfig{Name: "m", DataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	ready := make(chan string, 1)
	wg.Go(func() {
		err := RunCoordinator(ctx, CoordinatorOptions{Config: cfg, Listen: "127.0.0.1:0", Etcd: []string{m.ClientURL}, Logger: quiet,
			Ready: func(a string) { ready <- a }})
		if err != nil {
			t.Error(err)
		}
	})
	coord := "http://" + <-ready
	var logs bytes.Buffer
	var logMu sync.Mutex
	a, err := NewAgent(RegionOptions{Config: cfg, Name: "eu", Listen: "127.0.0.1:0", Coordinators: []string{coord},
		Logger: slog.New(slog.NewTextHandler(lockedWriter{w: &logs, mu: &logMu}, nil))})
	if err != nil {
		t.Fatal(err)
	}
	const every = 100 * time.Millisecond
	a.o.tenantsEvery = every
	regionAddr := make(chan string, 1)
	a.o.Ready = func(s string) { regionAddr <- s }
	wg.Go(func() {
		if err := a.Run(ctx); err != nil {
			t.Error(err)
		}
	})
	region := "http://" + <-regionAddr

	admitted := map[string]int64{} // tokens the decision API admitted, by tenant
	allow := func(tenant, endpoint string) (int, bool) {
		t.Helper()
		resp, err := http.Post(region+"/v1/allow", "application/json",
			strings.NewReader(`{"tenant":"`+tenant+`","endpoint":"`+endpoint+`"}`))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var ans AllowAnswer
		json.NewDecoder(resp.Body).Decode(&ans) //nolint:errcheck // a 404's body is an error
		return resp.StatusCode, ans.Allowed
	}
	operator := func(path, body string) {
		t.Helper()
		code, out := call(t, "POST", coord+"/v1/tenants"+path, "alice-token-0123456789", "application/json", body)
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
		var st struct{ Tenants []TenantStatus }
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
	s := scrape(t, region)
	if v := s.must(t, "afloat_quota_region_admitted_tokens_total", "tenant", "beta", "reason", "lease"); v != float64(admitted["beta"]) {
		t.Fatalf("beta's admitted tokens in /metrics: %v, want %d (5 per /big)", v, admitted["beta"])
	}
	if v := s.must(t, "afloat_quota_region_lease_valid", "tenant", "beta", "region", "eu"); v != 1 {
		t.Fatalf("beta's lease_valid: %v, want 1", v)
	}
	if _, ok := s.value("afloat_quota_region_lease_valid", "tenant", "gamma", "region", "eu"); ok {
		t.Fatal("gamma (us only) in eu's /metrics")
	}
	logMu.Lock()
	added := strings.Contains(logs.String(), `msg="quota region: tenant added" region=eu tenant=beta version=1`)
	logMu.Unlock()
	if !added {
		t.Fatal("no log line for beta's addition")
	}

	// Updated: the new cost is in use within a poll.
	operator("/update", `{"name":"beta","costs":{"/big":2}}`)
	bounded("beta's new cost", func() bool { tn, ok := a.tenant("beta"); return ok && tn.Cost("/big") == 2 })
	before := scrape(t, region).must(t, "afloat_quota_region_admitted_tokens_total", "tenant", "beta", "reason", "lease")
	bounded("beta admitted at its new cost", func() bool { _, ok := allow("beta", "/big"); return ok })
	if v := scrape(t, region).must(t, "afloat_quota_region_admitted_tokens_total", "tenant", "beta", "reason", "lease"); v != before+2 {
		t.Fatalf("beta's admitted tokens after one /big at cost 2: %v, want %v", v, before+2)
	}

	// Deleted: refused with 404, gone from /metrics and /v1/status, no
	// more renewals.
	operator("/delete", `{"name":"beta"}`)
	bounded("beta refused after its deletion", func() bool { code, _ := allow("beta", "/big"); return code == 404 })
	if got := strings.Join(status(), ","); got != "acme" {
		t.Fatalf("/v1/status lists %s after beta's deletion, want acme", got)
	}
	s = scrape(t, region)
	for _, name := range []string{"afloat_quota_region_lease_valid", "afloat_quota_region_balance_tokens"} {
		if _, ok := s.value(name, "tenant", "beta", "region", "eu"); ok {
			t.Fatalf("%s still has beta after its deletion", name)
		}
	}
	if _, ok := s.value("afloat_quota_region_admitted_tokens_total", "tenant", "beta", "reason", "lease"); ok {
		t.Fatal("admitted_tokens_total still has beta after its deletion")
	}
	logMu.Lock()
	removed := strings.Contains(logs.String(), `msg="quota region: tenant removed; its lease goes back" region=eu tenant=beta`)
	mark := logs.Len()
	logMu.Unlock()
	if !removed {
		t.Fatal("no log line for beta's removal")
	}
	// Ten polls later, nothing of beta in the log: no renewal was tried
	// (a failed one would be logged: the coordinator no longer knows
	// beta), and no poll added it back.
	time.Sleep(10 * every)
	logMu.Lock()
	after := logs.String()[mark:]
	logMu.Unlock()
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
