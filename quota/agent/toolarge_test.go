package agent

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	ratelimitv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"

	"github.com/afloat/afloat/quota"
	"github.com/afloat/afloat/quota/internal/opstest"
)

// TestTooLargeOnEveryFront: a request that costs more than its tenant's
// quota can ever hold in the region (the grant's Ceiling,
// quota.MaxBurstShare: 39.6 of acme's burst of 40 with two regions) is
// answered "never" by each front, with no time to retry — the decision
// API's never and max_cost, Envoy's OVER_LIMIT with a body and no
// retry-after, the proxy's 413 — while one within it that lacks tokens
// is refused as before.
func TestTooLargeOnEveryFront(t *testing.T) {
	clock := &fakeClock{}
	cfg := strings.Replace(fronted, "costs: {/search: 3}", "costs: {/search: 3, /export: 100}", 1)
	cfg = strings.Replace(cfg, "    - {host: API.acme.test, tenant: acme}",
		"    - {host: api.acme.test, path_prefix: /export, tenant: acme, endpoint: /export}\n    - {host: API.acme.test, tenant: acme}", 1)
	a := fixedAgent(t, cfg, clock)
	tn, ok := TenantOf(a, "acme")
	if !ok {
		t.Fatal("acme not served")
	}
	lim := a.Limiter()
	req, err := lim.Request(a.now(), "acme")
	opstest.Must(t, err)
	if in := lim.Install(a.now(), quota.Grant{
		Lease: quota.Lease{ID: 1, Tenant: "acme", Region: "eu", Epoch: 1, Rate: quota.Tokens(10), Burst: quota.Tokens(30), Transfer: quota.Tokens(30)},
		Seq:   req.Seq, ValidFor: time.Hour, Margin: time.Second, Ceiling: quota.MaxBurstShare(tn),
	}); !in.OK() {
		t.Fatal(in.Outcome)
	}

	// The decision API.
	h := a.Handler()
	allow := func(body string) AllowAnswer {
		t.Helper()
		r := httptest.NewRequest("POST", "http://127.0.0.1/v1/allow", strings.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		var ans AllowAnswer
		if rec.Code != 200 || json.Unmarshal(rec.Body.Bytes(), &ans) != nil {
			t.Fatalf("%s: %d %s", body, rec.Code, rec.Body)
		}
		return ans
	}
	for i, step := range []struct {
		body  string
		never bool
	}{
		{`{"tenant":"acme","n":40}`, true},
		{`{"tenant":"acme","endpoint":"/search","n":14}`, true}, // 42 tokens
		{`{"tenant":"acme","n":35}`, false},                     // within the ceiling, over the lease's 30
	} {
		ans := allow(step.body)
		if ans.Allowed || ans.Never != step.never {
			t.Errorf("step %d: %s: %+v, want refused, never %v", i, step.body, ans, step.never)
		}
		if step.never && (ans.MaxCost != 39 || ans.RetryAfter != 0 || ans.RetryKnown) {
			t.Errorf("step %d: %+v, want max_cost 39 and no retry_after", i, ans)
		}
		if !step.never && (ans.MaxCost != 0 || ans.RetryAfter <= 0) {
			t.Errorf("step %d: %+v, want a retry_after and no max_cost", i, ans)
		}
	}

	// Envoy's rate limit service.
	client := serveGRPC(t, a)
	resp, err := client.ShouldRateLimit(context.Background(), &rlsv3.RateLimitRequest{Domain: "edge", HitsAddend: 40,
		Descriptors: []*ratelimitv3.RateLimitDescriptor{desc("tenant", "acme")}})
	opstest.Must(t, err)
	for _, hv := range resp.ResponseHeadersToAdd {
		if hv.Key == "retry-after" {
			t.Errorf("Envoy: retry-after %q for a request that can never be admitted", hv.Value)
		}
	}
	if resp.OverallCode != rlsv3.RateLimitResponse_OVER_LIMIT || !strings.Contains(string(resp.RawBody), "can never be admitted") ||
		!strings.Contains(string(resp.RawBody), "at most 39") {
		t.Errorf("Envoy: %v %q, want OVER_LIMIT and a body saying it can never be admitted", resp.OverallCode, resp.RawBody)
	}

	// The reverse proxy: /export costs 100.
	up := newUpstream(t)
	ph, err := a.ProxyHandler(up.URL)
	opstest.Must(t, err)
	front := httptest.NewServer(ph)
	defer front.Close()
	r, err := http.NewRequest("GET", front.URL+"/export", nil)
	opstest.Must(t, err)
	r.Host = "api.acme.test"
	presp, err := front.Client().Do(r)
	opstest.Must(t, err)
	body, _ := io.ReadAll(presp.Body)
	presp.Body.Close()
	if presp.StatusCode != http.StatusRequestEntityTooLarge || presp.Header.Get("Retry-After") != "" || !strings.Contains(string(body), "can never be admitted") {
		t.Errorf("proxy: %d, Retry-After %q, %q; want 413 without Retry-After", presp.StatusCode, presp.Header.Get("Retry-After"), body)
	}
	if up.hits.Load() != 0 {
		t.Errorf("the upstream served %d requests", up.hits.Load())
	}
	if c, _ := lim.Counts("acme"); c.TooLarge != 40+42+40+100 {
		t.Errorf("Counts.TooLarge = %d, want %d", c.TooLarge, 40+42+40+100)
	}
	api := httptest.NewServer(h)
	defer api.Close()
	if v := opstest.Scrape(t, api.URL).Must(t, "afloat_quota_region_refused_tokens_total", "reason", "too_large"); v != 40+42+40+100 {
		t.Errorf("refused too_large: %v, want %d", v, 40+42+40+100)
	}
}
