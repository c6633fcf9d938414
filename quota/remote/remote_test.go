package remote_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/afloat/afloat/quota"
	"github.com/afloat/afloat/quota/coordinator"
	"github.com/afloat/afloat/quota/remote"
)

var tokens = map[string]string{"eu": "eu-token-0123456789", "us": "us-token-0123456789"}

// served is a coordinator behind the API, on a ledger in memory.
func served(t *testing.T) (*httptest.Server, *coordinator.Server, *bytes.Buffer) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	tn := quota.Tenant{Name: "acme", Rate: 100 * quota.One, Burst: 100 * quota.One, Regions: []string{"eu", "us"}}
	srv, err := coordinator.NewServer(ctx, coordinator.Config{Tenants: []quota.Tenant{tn}}, coordinator.NewMemLedger())
	if err != nil {
		t.Fatal(err)
	}
	go srv.Run(ctx)
	var logs bytes.Buffer
	var mu sync.Mutex
	h, err := remote.Handler(remote.HandlerConfig{
		Tokens: tokens, Logger: slog.New(slog.NewTextHandler(&lockedWriter{w: &logs, mu: &mu}, nil)),
		Lead: func() (remote.Backend, string) { return srv, "" },
	})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(h)
	t.Cleanup(hs.Close)
	return hs, srv, &logs
}

type lockedWriter struct {
	w  *bytes.Buffer
	mu *sync.Mutex
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func post(t *testing.T, url, token, body string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest("POST", url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	b.ReadFrom(resp.Body)
	return resp, b.String()
}

// TestClientRenewsThroughTheAPI: a grant comes back over HTTP; a retry of
// the same request gets the same lease; calls made together share one
// HTTP request.
func TestClientRenewsThroughTheAPI(t *testing.T) {
	hs, srv, _ := served(t)
	c, err := remote.NewClient(remote.ClientConfig{Endpoints: []string{hs.URL}, Region: "eu", Token: tokens["eu"]})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	req := quota.Request{Tenant: "acme", Region: "eu", Seq: 7, Demand: -1}
	g, err := c.Renew(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	again, err := c.Renew(ctx, req)
	if err != nil || again.Lease.ID != g.Lease.ID {
		t.Fatalf("retry of seq 7: lease %d (%v), want the same lease %d", again.Lease.ID, err, g.Lease.ID)
	}
	if n := len(srv.Live("acme")); n != 1 {
		t.Fatalf("%d live leases after a request and its retry, want 1", n)
	}
	if _, err := c.Renew(ctx, quota.Request{Tenant: "nobody", Region: "eu", Seq: 8}); !errors.Is(err, quota.ErrUnknownTenant) {
		t.Fatalf("unknown tenant: %v, want quota.ErrUnknownTenant", err)
	}
	if n := len(srv.Live("acme")); n != 1 {
		t.Fatalf("%d live leases after an unknown tenant's request, want 1: nothing granted", n)
	}
	if err := c.Return(ctx, quota.Return{Tenant: "acme", Region: "eu", LeaseID: g.Lease.ID, Epoch: g.Lease.Epoch}); err != nil {
		t.Fatal(err)
	}
	if n := len(srv.Live("acme")); n != 0 {
		t.Fatalf("%d live leases after the return, want 0", n)
	}
}

// TestRefusals: no token, a wrong one, another region's requests, a body
// too large, too many calls, a wrong media type — each refused, nothing
// granted, and a bad token logged.
func TestRefusals(t *testing.T) {
	hs, srv, logs := served(t)
	ok := `{"requests":[{"tenant":"acme","region":"eu","seq":1}]}`
	many := `{"requests":[` + strings.Repeat(`{"tenant":"acme","region":"eu","seq":1},`, remote.MaxBatch) + `{"tenant":"acme","region":"eu","seq":1}]}`
	for i, tc := range []struct {
		token, body string
		want        int
	}{
		{"", ok, 401},
		{"eu-token-wrong-000000", ok, 401},
		{tokens["us"], ok, 403}, // us's token, eu's request
		{tokens["eu"], `{"requests":[` + strings.Repeat(" ", remote.MaxBody) + `]}`, 413},
		{tokens["eu"], many, 413},
		{tokens["eu"], `{"requests":[{"tenant":"acme","region":"eu","seq":1,"extra":1}]}`, 400},
		{tokens["eu"], `{"requests":[]} {}`, 400},
	} {
		resp, body := post(t, hs.URL+"/v1/renew", tc.token, tc.body)
		if resp.StatusCode != tc.want {
			t.Errorf("step %d: status %d (%s), want %d", i, resp.StatusCode, body, tc.want)
		}
	}
	if n := len(srv.Live("acme")); n != 0 {
		t.Fatalf("%d leases granted to refused requests", n)
	}
	if got := logs.String(); strings.Count(got, "refused a request without a valid region token") != 2 ||
		!strings.Contains(got, "authorization=missing") || !strings.Contains(got, "authorization=wrong") {
		t.Fatalf("the refused tokens were not both logged:\n%s", got)
	}
	req, _ := http.NewRequest("POST", hs.URL+"/v1/renew", strings.NewReader(ok))
	req.Header.Set("Authorization", "Bearer "+tokens["eu"])
	req.Header.Set("Content-Type", "text/plain")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 415 {
		t.Fatalf("text/plain: %d, want 415", resp.StatusCode)
	}
	if _, err := remote.Handler(remote.HandlerConfig{Tokens: map[string]string{"eu": "short"}, Lead: func() (remote.Backend, string) { return nil, "" }}); !errors.Is(err, quota.ErrConfig) {
		t.Fatalf("a 5-byte token: %v, want quota.ErrConfig", err)
	}
	c, _ := remote.NewClient(remote.ClientConfig{Endpoints: []string{hs.URL}, Region: "eu", Token: "eu-token-wrong-000000"})
	if _, err := c.Renew(context.Background(), quota.Request{Tenant: "acme", Region: "eu", Seq: 1}); !errors.Is(err, remote.ErrUnauthorized) {
		t.Fatalf("client with a wrong token: %v, want remote.ErrUnauthorized", err)
	}
}

// TestFollowerSendsToLeader: a follower answers 503 naming the leader;
// the client turns to it.
func TestFollowerSendsToLeader(t *testing.T) {
	leader, _, _ := served(t)
	fh, err := remote.Handler(remote.HandlerConfig{Tokens: tokens, Lead: func() (remote.Backend, string) { return nil, leader.URL }})
	if err != nil {
		t.Fatal(err)
	}
	follower := httptest.NewServer(fh)
	defer follower.Close()
	resp, body := post(t, follower.URL+"/v1/renew", tokens["eu"], `{"requests":[]}`)
	if resp.StatusCode != 503 || !strings.Contains(body, leader.URL) || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("follower: %d %s", resp.StatusCode, body)
	}
	c, _ := remote.NewClient(remote.ClientConfig{Endpoints: []string{follower.URL, leader.URL}, Region: "eu", Token: tokens["eu"]})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := c.Renew(ctx, quota.Request{Tenant: "acme", Region: "eu", Seq: 1}); err != nil {
		t.Fatalf("through the follower: %v", err)
	}
}

// FuzzRenewBody: whatever a region sends, the coordinator answers with a
// status from the API's list, and never grants to another region.
func FuzzRenewBody(f *testing.F) {
	f.Add([]byte(`{"requests":[{"tenant":"acme","region":"eu","seq":1}]}`))
	f.Add([]byte(`{"requests":[{"tenant":"acme","region":"us","seq":1}]}`))
	f.Add([]byte(`{"requests":[{"tenant":"nobody","region":"eu","seq":1,"demand":-5,"balance":99}]}`))
	f.Add([]byte(`{"requests":null}`))
	f.Add([]byte(`[`))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	tn := quota.Tenant{Name: "acme", Rate: 100 * quota.One, Burst: 100 * quota.One, Regions: []string{"eu", "us"}}
	srv, err := coordinator.NewServer(ctx, coordinator.Config{Tenants: []quota.Tenant{tn}}, coordinator.NewMemLedger())
	if err != nil {
		f.Fatal(err)
	}
	go srv.Run(ctx)
	h, _ := remote.Handler(remote.HandlerConfig{Tokens: tokens, Lead: func() (remote.Backend, string) { return srv, "" }})
	f.Fuzz(func(t *testing.T, body []byte) {
		req := httptest.NewRequest("POST", "/v1/renew", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+tokens["eu"])
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		switch rec.Code {
		case 200, 400, 403, 413:
		default:
			t.Fatalf("status %d: %s", rec.Code, rec.Body)
		}
		for _, l := range srv.Live("acme") {
			if l.Region != "eu" {
				t.Fatalf("eu's token got a lease for %s", l.Region)
			}
		}
	})
}
