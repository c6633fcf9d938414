package agent_test

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/afloat/afloat/quota/agent"
	"github.com/afloat/afloat/quota/internal/opstest"
	"github.com/afloat/afloat/quota/servicetest"
	ratelimitv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// TestRunWarnsOfAllowRemoteOnLoopback: --allow-remote with a loopback
// --listen changes nothing, and Run says so in a warning.
func TestRunWarnsOfAllowRemoteOnLoopback(t *testing.T) {
	c := servicetest.New(t, opstest.ConfigFile("good.yaml"))
	c.DownCoordinator()
	logs := &opstest.Buffer{}
	eu := c.Agent(agent.Options{Name: "eu", AllowRemote: true, Logger: slog.New(slog.NewTextHandler(logs, nil))}, nil)
	opstest.Must(t, eu.Stop())
	if l := logs.String(); !strings.Contains(l, "level=WARN") || !strings.Contains(l, "--allow-remote with a loopback --listen changes nothing") {
		t.Errorf("--listen 127.0.0.1:0 --allow-remote: no warning in\n%s", l)
	}
}

// TestRunServesFronts: Run serves the decision API, Envoy's rate-limit
// service and the proxy; with no coordinator to answer, it holds no
// lease, so both fronts refuse (OVER_LIMIT; 429 with Retry-After) and the
// upstream sees nothing; the fronts stop with Run.
func TestRunServesFronts(t *testing.T) {
	var hits atomic.Int64
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	defer up.Close()
	c := servicetest.New(t, opstest.ConfigFile("fronted.yaml"))
	c.DownCoordinator()
	eu := c.Agent(agent.Options{Name: "eu", GRPCListen: "127.0.0.1:0", Upstream: up.URL, ProxyListen: "127.0.0.1:0"}, nil)
	cc, err := grpc.NewClient(eu.GRPCAddr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	opstest.Must(t, err)
	defer cc.Close()
	r, err := rlsv3.NewRateLimitServiceClient(cc).ShouldRateLimit(context.Background(), &rlsv3.RateLimitRequest{Domain: "edge",
		Descriptors: []*ratelimitv3.RateLimitDescriptor{{Entries: []*ratelimitv3.RateLimitDescriptor_Entry{{Key: "tenant", Value: "acme"}}}}})
	if err != nil || r.OverallCode != rlsv3.RateLimitResponse_OVER_LIMIT {
		t.Fatalf("RLS without a lease: %v %v", r, err)
	}
	req, _ := http.NewRequest("GET", "http://"+eu.ProxyAddr()+"/x", nil)
	req.Host = "api.acme.test"
	resp, err := http.DefaultClient.Do(req)
	opstest.Must(t, err)
	resp.Body.Close()
	if resp.StatusCode != 429 || resp.Header.Get("Retry-After") == "" || hits.Load() != 0 {
		t.Fatalf("proxy without a lease: %d %v, upstream hits %d", resp.StatusCode, resp.Header, hits.Load())
	}
	proxyAddr := eu.ProxyAddr()
	opstest.Must(t, eu.Stop())
	if _, err := net.DialTimeout("tcp", proxyAddr, time.Second); err == nil {
		t.Fatal("the proxy still listens after Run")
	}
	// Both refusals are in the event log, as the decision API's are.
	log, err := os.ReadFile(eu.EventLog)
	opstest.Must(t, err)
	if n := strings.Count(string(log), `"ev":"reject","tenant":"acme","region":"eu","n":1`); n != 2 {
		t.Fatalf("%d refusals of acme in the event log, want 2:\n%s", n, log)
	}
}
