//go:build embedetcd

package agent_test

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	ratelimitv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"github.com/afloat/afloat/quota"
	"github.com/afloat/afloat/quota/agent"
	"github.com/afloat/afloat/quota/coordinator/replica"
	"github.com/afloat/afloat/quota/internal/opstest"
	"github.com/afloat/afloat/quota/internal/tlstest"
	"github.com/afloat/afloat/quota/remote"
	"github.com/afloat/afloat/quota/servicetest"
)

// TestTLSEveryListener: a coordinator and a region agent started with
// certificates serve every listener over TLS — the coordinator's API, the
// decision API, Envoy's gRPC service and the proxy — and nothing in
// plain HTTP. The region eu has no token: its client certificate, naming
// it, is what the coordinator takes it by, and it gets its lease so. The
// decision API requires a client certificate of the CA.
func TestTLSEveryListener(t *testing.T) {
	ca := tlstest.NewCA(t)
	cert, key := ca.Server(t)
	euCert, euKey := ca.Client(t, remote.RegionURI("eu"))
	appCert, appKey := ca.Client(t) // a client of the decision API: names no region
	var hits atomic.Int64
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	defer up.Close()

	cfg := strings.Replace(opstest.ConfigFile("fronted.yaml"), `eu: {token: "eu-token-0123456789"}`, `eu: {}`, 1)
	c := servicetest.New(t, cfg)
	c.ClientTLS = ca.ClientConfig(t, appCert, appKey)
	coord := c.Coordinator(replica.Options{TLSCert: cert, TLSKey: key, ClientCA: ca.File})
	if !strings.HasPrefix(coord.URL, "https://") {
		t.Fatalf("coordinator URL %s, want https", coord.URL)
	}
	eu := c.Agent(agent.Options{Name: "eu", TLSCert: cert, TLSKey: key, ClientCA: ca.File,
		CA: ca.File, ClientCert: euCert, ClientKey: euKey,
		GRPCListen: "127.0.0.1:0", Upstream: up.URL, ProxyListen: "127.0.0.1:0"}, nil)
	client := c.Client(5 * time.Second)
	opstest.WaitFor(t, "eu's lease through its certificate", func() bool {
		resp, err := client.Get(eu.URL + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == 200
	})

	// Every listener: a TLS handshake that verifies the server against the
	// CA succeeds, and a plain HTTP request is not answered as one.
	for _, l := range []struct{ name, addr string }{
		{"coordinator --listen", coord.Addr}, {"region --listen", eu.Addr},
		{"region --grpc-listen", eu.GRPCAddr()}, {"region --proxy-listen", eu.ProxyAddr()},
	} {
		conn, err := tls.Dial("tcp", l.addr, ca.ClientConfig(t, appCert, appKey))
		if err != nil {
			t.Errorf("%s: TLS handshake: %v", l.name, err)
			continue
		}
		conn.Close()
		plain := &http.Client{Timeout: 2 * time.Second}
		if resp, err := plain.Get("http://" + l.addr + "/healthz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				t.Errorf("%s: plain HTTP answered 200", l.name)
			}
		}
	}

	// The decision API requires a client certificate of the CA.
	noCert := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: ca.ClientConfig(t, "", "")}}
	if resp, err := noCert.Get(eu.URL + "/healthz"); err == nil {
		resp.Body.Close()
		t.Errorf("decision API without a client certificate: %s, want the handshake refused", resp.Status)
	}
	// Decisions over TLS, on each front: admitted once the lease's
	// tokens have come in.
	opstest.WaitFor(t, "an admission by the decision API over TLS", func() bool {
		resp, err := client.Post(eu.URL+"/v1/allow", "application/json", strings.NewReader(`{"tenant":"acme"}`))
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		var ans agent.AllowAnswer
		return json.NewDecoder(resp.Body).Decode(&ans) == nil && ans.Allowed
	})
	cc, err := grpc.NewClient(eu.GRPCAddr(), grpc.WithTransportCredentials(credentials.NewTLS(ca.ClientConfig(t, appCert, appKey))))
	opstest.Must(t, err)
	defer cc.Close()
	opstest.WaitFor(t, "an admission by Envoy's rate-limit service over TLS", func() bool {
		r, err := rlsv3.NewRateLimitServiceClient(cc).ShouldRateLimit(context.Background(), &rlsv3.RateLimitRequest{Domain: "edge",
			Descriptors: []*ratelimitv3.RateLimitDescriptor{{Entries: []*ratelimitv3.RateLimitDescriptor_Entry{{Key: "tenant", Value: "acme"}}}}})
		if err != nil {
			t.Fatalf("RLS over TLS: %v", err)
		}
		return r.OverallCode == rlsv3.RateLimitResponse_OK
	})
	// The proxy serves end users: TLS without a client certificate.
	opstest.WaitFor(t, "a request through the proxy over TLS", func() bool {
		req, _ := http.NewRequest("GET", "https://"+eu.ProxyAddr()+"/x", nil)
		req.Host = "api.acme.test"
		resp, err := noCert.Do(req)
		if err != nil {
			t.Fatalf("proxy over TLS: %v", err)
		}
		resp.Body.Close()
		return resp.StatusCode == 200 && hits.Load() == 1
	})
}

// TestTLSRegionRefused: the coordinator takes a region by a valid token
// or by a client certificate of its CA naming the region, and by nothing
// else: no credential, a certificate naming no region, one of another
// CA, a certificate of one region with the token of another. A client
// that does not trust the coordinator's CA fails, saying so.
func TestTLSRegionRefused(t *testing.T) {
	ca, other := tlstest.NewCA(t), tlstest.NewCA(t)
	cert, key := ca.Server(t)
	euCert, euKey := ca.Client(t, remote.RegionURI("eu"))
	nobodyCert, nobodyKey := ca.Client(t)
	marsCert, marsKey := ca.Client(t, remote.RegionURI("mars"))
	forgedCert, forgedKey := other.Client(t, remote.RegionURI("eu"))
	c := servicetest.New(t, opstest.ConfigFile("good.yaml"))
	coord := c.Coordinator(replica.Options{TLSCert: cert, TLSKey: key, ClientCA: ca.File})

	tenants := func(cfg *tls.Config, token string) (int, string, error) {
		hc := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: cfg}}
		req, _ := http.NewRequest("GET", coord.URL+"/v1/region/tenants", nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := hc.Do(req)
		if err != nil {
			return 0, "", err
		}
		defer resp.Body.Close()
		var ans remote.RegionTenants
		json.NewDecoder(resp.Body).Decode(&ans) //nolint:errcheck // the status says
		return resp.StatusCode, ans.Region, nil
	}
	opstest.WaitFor(t, "the coordinator leads", func() bool {
		code, _, err := tenants(ca.ClientConfig(t, "", ""), "us-token-0123456789")
		return err == nil && code == 200
	})
	for i, tc := range []struct {
		name      string
		cfg       *tls.Config
		token     string
		code      int
		region    string
		handshake bool // refused in the handshake
	}{
		{"eu's certificate", ca.ClientConfig(t, euCert, euKey), "", 200, "eu", false},
		{"us's token", ca.ClientConfig(t, "", ""), "us-token-0123456789", 200, "us", false},
		{"eu's certificate and eu's token", ca.ClientConfig(t, euCert, euKey), "eu-token-0123456789", 200, "eu", false},
		{"nothing", ca.ClientConfig(t, "", ""), "", 401, "", false},
		{"a certificate naming no region", ca.ClientConfig(t, nobodyCert, nobodyKey), "", 401, "", false},
		{"a certificate naming a region not in the config", ca.ClientConfig(t, marsCert, marsKey), "", 401, "", false},
		{"a wrong token", ca.ClientConfig(t, "", ""), "eu-token-0123456780", 401, "", false},
		{"eu's certificate and us's token", ca.ClientConfig(t, euCert, euKey), "us-token-0123456789", 401, "", false},
		{"a certificate of another CA naming eu", ca.ClientConfig(t, forgedCert, forgedKey), "", 0, "", true},
	} {
		code, region, err := tenants(tc.cfg, tc.token)
		switch {
		case tc.handshake && err == nil:
			t.Errorf("step %d: %s: answered %d (region %q), want the handshake refused", i, tc.name, code, region)
		case !tc.handshake && err != nil:
			t.Errorf("step %d: %s: %v", i, tc.name, err)
		case !tc.handshake && (code != tc.code || region != tc.region):
			t.Errorf("step %d: %s: %d region %q, want %d region %q", i, tc.name, code, region, tc.code, tc.region)
		}
	}

	// A region's client that does not trust the CA fails, and says why.
	cl, err := remote.NewClient(remote.ClientConfig{Endpoints: []string{coord.Addr}, Region: "us", Token: "us-token-0123456789",
		TLS: other.ClientConfig(t, "", "")})
	opstest.Must(t, err)
	_, err = cl.Renew(context.Background(), quota.Request{Tenant: "acme", Region: "us", Seq: 1})
	if err == nil || !strings.Contains(err.Error(), "certificate signed by unknown authority") || !strings.Contains(err.Error(), "--ca") {
		t.Errorf("a client that does not trust the CA: %v; want the unknown authority named, and --ca", err)
	}
	// With TLS configured, an http:// coordinator is refused before any
	// request: the token would cross in clear.
	if _, err := remote.NewClient(remote.ClientConfig{Endpoints: []string{"http://" + coord.Addr}, Region: "us", Token: "us-token-0123456789",
		TLS: ca.ClientConfig(t, "", "")}); !errors.Is(err, remote.ErrEndpoint) {
		t.Errorf("an http:// coordinator with TLS configured: %v, want remote.ErrEndpoint", err)
	}
	// An agent of a region without a token needs its certificate.
	certOnly := opstest.MustConfig(t, strings.Replace(opstest.ConfigFile("good.yaml"), `eu: {token: "eu-token-0123456789"}`, `eu: {}`, 1))
	if _, err := agent.New(agent.Options{Config: certOnly, Name: "eu", Coordinators: []string{coord.Addr}, Listen: "127.0.0.1:0",
		Logger: opstest.QuietLog()}); !errors.Is(err, agent.ErrOptions) || !strings.Contains(err.Error(), "regions.eu has no token: give the region's client certificate") {
		t.Errorf("an agent of a region without a token, without --client-cert: %v", err)
	}
}
