package agent

import (
	"context"
	"testing"

	ratelimitv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
)

// benchRLS is an agent of region eu serving fronted's domain, acme's lease
// installed with a bucket so large that every call in a benchmark is
// admitted, and the request Envoy sends for acme.
func benchRLS(b *testing.B) (*Agent, *rlsv3.RateLimitRequest) {
	clock := &fakeClock{}
	a := fixedAgent(b, fronted, clock)
	lease(b, a.lim, clock.now(), "acme", 1, 1e9, 1e12)
	req := &rlsv3.RateLimitRequest{Domain: "edge", Descriptors: []*ratelimitv3.RateLimitDescriptor{{
		Entries: []*ratelimitv3.RateLimitDescriptor_Entry{{Key: "tenant", Value: "acme"}},
	}}}
	return a, req
}

// BenchmarkShouldRateLimit is the RLS handler alone: what a decision costs
// the agent beyond gRPC's own work.
func BenchmarkShouldRateLimit(b *testing.B) {
	a, req := benchRLS(b)
	s := &rlsServer{a: a}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		resp, err := s.ShouldRateLimit(ctx, req)
		if err != nil || resp.OverallCode != rlsv3.RateLimitResponse_OK {
			b.Fatal(resp, err)
		}
	}
}

// BenchmarkShouldRateLimitGRPC is a decision over loopback gRPC, client
// and server in this process, 16 calls in flight per CPU.
func BenchmarkShouldRateLimitGRPC(b *testing.B) {
	a, req := benchRLS(b)
	c := serveGRPC(b, a)
	ctx := context.Background()
	b.ReportAllocs()
	b.SetParallelism(16)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			resp, err := c.ShouldRateLimit(ctx, req)
			if err != nil || resp.OverallCode != rlsv3.RateLimitResponse_OK {
				b.Error(resp, err)
				return
			}
		}
	})
}
