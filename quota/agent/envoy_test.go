package agent

import (
	"context"
	"io"
	"math"
	"math/rand/v2"
	"net"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	ratelimitv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	reflectionpb "google.golang.org/grpc/reflection/grpc_reflection_v1"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/afloat/afloat/quota"
	"github.com/afloat/afloat/quota/internal/opstest"
	"github.com/afloat/afloat/quota/region"
)

// fronted is a config with both front sections: acme (a /search costs 3)
// and globex enter eu; initech, us only.
// good and fronted are config files of quota/config's testdata.
var (
	good    = opstest.ConfigFile("good.yaml")
	fronted = opstest.ConfigFile("fronted.yaml")
)

// fakeClock is a limiter clock the test steps.
type fakeClock struct{ ns atomic.Int64 }

func (c *fakeClock) now() int64              { return c.ns.Load() }
func (c *fakeClock) advance(d time.Duration) { c.ns.Add(int64(d)) }

// fixedAgent is an agent of region eu on clock, with no coordinator: the
// test installs its leases.
func fixedAgent(t testing.TB, cfg string, clock *fakeClock) *Agent {
	t.Helper()
	a, err := New(Options{Config: opstest.MustConfig(t, cfg), Name: "eu", Coordinators: []string{"http://127.0.0.1:1"},
		Listen: "127.0.0.1:0", Logger: opstest.QuietLog(), clock: clock.now})
	opstest.Must(t, err)
	return a
}

// lease installs a lease of rate and burst for tenant at now, its bucket
// full (the burst transferred), valid for an hour.
func lease(t testing.TB, lim *region.Limiter, now int64, tenant string, id uint64, rate, burst float64) {
	t.Helper()
	req, err := lim.Request(now, tenant)
	opstest.Must(t, err)
	in := lim.Install(now, quota.Grant{
		Lease: quota.Lease{ID: id, Tenant: tenant, Region: "eu", Epoch: 1, Rate: quota.Tokens(rate), Burst: quota.Tokens(burst),
			Transfer: quota.Tokens(burst)},
		Seq: req.Seq, ValidFor: time.Hour, Margin: time.Second,
	})
	if !in.OK() {
		t.Fatalf("install %s: %v", tenant, in.Outcome)
	}
}

// serveGRPC serves the agent's RLS on a loopback port and returns
// go-control-plane's client for it.
func serveGRPC(t testing.TB, a *Agent) rlsv3.RateLimitServiceClient {
	t.Helper()
	return rlsv3.NewRateLimitServiceClient(serveGRPCConn(t, a))
}

// serveGRPCConn serves a's gRPC server on a free loopback port and
// returns a connection to it; both end with the test.
func serveGRPCConn(t testing.TB, a *Agent) *grpc.ClientConn {
	t.Helper()
	gs, err := a.GRPCServer()
	opstest.Must(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	opstest.Must(t, err)
	go gs.Serve(ln) //nolint:errcheck // Stop ends it
	t.Cleanup(gs.Stop)
	cc, err := grpc.NewClient(ln.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	opstest.Must(t, err)
	t.Cleanup(func() { cc.Close() })
	return cc
}

func desc(kv ...string) *ratelimitv3.RateLimitDescriptor {
	d := &ratelimitv3.RateLimitDescriptor{}
	for i := 0; i < len(kv); i += 2 {
		d.Entries = append(d.Entries, &ratelimitv3.RateLimitDescriptor_Entry{Key: kv[i], Value: kv[i+1]})
	}
	return d
}

// TestEnvoyRLSMatchesLimiter: go-control-plane's client calls
// ShouldRateLimit on a region agent over loopback, 600 times on a seeded
// script of descriptors, hits and clock steps; a twin limiter on the same
// clock, with the same lease, is asked the same questions through its own
// DecideAt. Every descriptor is OVER_LIMIT exactly when the twin refuses,
// with the twin's remaining tokens and retry time; unmatched descriptors
// are OK and spend nothing.
func TestEnvoyRLSMatchesLimiter(t *testing.T) {
	clock := &fakeClock{}
	a := fixedAgent(t, fronted, clock)
	tcfg := region.DefaultConfig("eu", "acme", "globex")
	tcfg.Retry, tcfg.MaxRetry = a.o.Config.Agent.Retry, a.o.Config.Agent.MaxRetry
	twin, err := region.New(tcfg) // asked on clock's readings, as the agent is
	opstest.Must(t, err)
	// acme holds a lease in both; globex holds none (refused, with the
	// retry policy as the reset).
	lease(t, a.Limiter(), a.now(), "acme", 1, 10, 40)
	lease(t, twin, clock.now(), "acme", 1, 10, 40)
	client := serveGRPC(t, a)

	type pick struct {
		d      *ratelimitv3.RateLimitDescriptor
		tenant string // "" for unmatched
		cost   int64  // per hit
	}
	rng := rand.New(rand.NewPCG(13, 4))
	picks := func() pick {
		switch rng.IntN(5) {
		case 0, 1:
			return pick{desc("tenant", "acme"), "acme", 1}
		case 2:
			return pick{desc("tenant", "acme", "path", "/search"), "acme", 3}
		case 3:
			return pick{desc("tenant", "globex", "remote_address", "10.0.0."+string(rune('1'+rng.IntN(9)))), "globex", 1}
		default:
			return pick{desc("tenant", "acme", "path", "/other"), "", 0} // no rule has these entries
		}
	}
	var ok, over, overAcme, unmatched int
	for step := range 600 {
		clock.advance(time.Duration(rng.IntN(150)) * time.Millisecond)
		req := &rlsv3.RateLimitRequest{Domain: "edge", HitsAddend: uint32(rng.IntN(4))}
		var ps []pick
		for range 1 + rng.IntN(3) {
			p := picks()
			if rng.IntN(6) == 0 {
				p.d.HitsAddend = wrapperspb.UInt64(uint64(1 + rng.IntN(5)))
			}
			ps = append(ps, p)
			req.Descriptors = append(req.Descriptors, p.d)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		resp, err := client.ShouldRateLimit(ctx, req)
		cancel()
		if err != nil {
			t.Fatalf("step %d: %v", step, err)
		}
		if len(resp.Statuses) != len(ps) {
			t.Fatalf("step %d: %d statuses for %d descriptors", step, len(resp.Statuses), len(ps))
		}
		now := clock.now()
		wantOverall := rlsv3.RateLimitResponse_OK
		for i, p := range ps {
			st := resp.Statuses[i]
			if p.tenant == "" {
				unmatched++
				if st.Code != rlsv3.RateLimitResponse_OK || st.CurrentLimit != nil {
					t.Fatalf("step %d: unmatched descriptor %d: %v, want OK without a limit", step, i, st)
				}
				continue
			}
			hits := int64(max(1, req.HitsAddend))
			if p.d.HitsAddend != nil {
				hits = int64(p.d.HitsAddend.Value)
			}
			cost := hits * p.cost
			td := twin.DecideAt(now, p.tenant, cost)
			admitted := td.Allowed
			want := rlsv3.RateLimitResponse_OK
			if !admitted {
				want, wantOverall = rlsv3.RateLimitResponse_OVER_LIMIT, rlsv3.RateLimitResponse_OVER_LIMIT
				over++
				if p.tenant == "acme" {
					overAcme++
				}
			} else {
				ok++
			}
			remaining := uint32(max(0, math.Floor(td.Remaining.Float()/float64(p.cost))))
			if st.Code != want || st.LimitRemaining != remaining {
				t.Fatalf("step %d: descriptor %d (%s, cost %d): %v remaining %d; the twin: %v remaining %d",
					step, i, p.tenant, cost, st.Code, st.LimitRemaining, want, remaining)
			}
			if !admitted {
				if got, d := st.DurationUntilReset.AsDuration(), td.RetryAfter; got != d {
					t.Fatalf("step %d: descriptor %d: reset %v, the twin's retry %v", step, i, got, d)
				}
			}
			if want := uint32(td.Rate.Float() / float64(p.cost)); st.CurrentLimit.RequestsPerUnit != want ||
				st.CurrentLimit.Unit != rlsv3.RateLimitResponse_RateLimit_SECOND {
				t.Fatalf("step %d: limit %v, want %d a second", step, st.CurrentLimit, want)
			}
		}
		if resp.OverallCode != wantOverall {
			t.Fatalf("step %d: overall %v, want %v", step, resp.OverallCode, wantOverall)
		}
	}
	// Past the lease's end: refused by both, with no rate to show.
	clock.advance(2 * time.Hour)
	resp, err := client.ShouldRateLimit(context.Background(), &rlsv3.RateLimitRequest{Domain: "edge",
		Descriptors: []*ratelimitv3.RateLimitDescriptor{desc("tenant", "acme")}})
	opstest.Must(t, err)
	if twin.AllowAt(clock.now(), "acme", 1) || resp.OverallCode != rlsv3.RateLimitResponse_OVER_LIMIT ||
		resp.Statuses[0].CurrentLimit.RequestsPerUnit != 0 || resp.Statuses[0].LimitRemaining != 0 {
		t.Fatalf("after the lease: %v", resp)
	}
	// Both answers were common, or the test proves little.
	if ok < 100 || overAcme < 100 || unmatched < 50 {
		t.Fatalf("OK %d, OVER_LIMIT of acme %d, unmatched %d: want at least 100, 100, 50", ok, overAcme, unmatched)
	}
	t.Logf("OK %d, OVER_LIMIT %d (acme, with its lease: %d), unmatched %d", ok, over, overAcme, unmatched)
}

// TestEnvoyRLSHeaders: the response headers describe the tightest
// descriptor; retry-after only when over the limit; the header style of
// the config.
func TestEnvoyRLSHeaders(t *testing.T) {
	for _, style := range []string{"", "ratelimit", "none"} {
		clock := &fakeClock{}
		cfg := strings.Replace(fronted, "domain: edge", "domain: edge\n  headers: "+style, 1)
		if style == "" {
			cfg = fronted
		}
		a := fixedAgent(t, cfg, clock)
		lease(t, a.Limiter(), a.now(), "acme", 1, 10, 40)
		client := serveGRPC(t, a)
		call := func(hits uint32, ds ...*ratelimitv3.RateLimitDescriptor) *rlsv3.RateLimitResponse {
			resp, err := client.ShouldRateLimit(context.Background(), &rlsv3.RateLimitRequest{Domain: "edge", HitsAddend: hits, Descriptors: ds})
			opstest.Must(t, err)
			return resp
		}
		headers := func(r *rlsv3.RateLimitResponse) map[string]string {
			m := map[string]string{}
			for _, h := range r.ResponseHeadersToAdd {
				m[h.Key] = h.Value
			}
			return m
		}
		p := "x-ratelimit-"
		if style == "ratelimit" {
			p = "ratelimit-"
		}
		// 31 of 40 tokens spent: 9 left; the bucket is full again in 3.1 s.
		r := call(31, desc("tenant", "acme"))
		want := map[string]string{p + "limit": "10", p + "remaining": "9", p + "reset": "4"}
		if style == "none" {
			want = map[string]string{}
		}
		if got := headers(r); !equalMaps(got, want) || r.OverallCode != rlsv3.RateLimitResponse_OK {
			t.Fatalf("style %q: OK: %v %v, want %v", style, r.OverallCode, got, want)
		}
		// /search costs 3: 3 of 9 tokens... a /search of 4 hits (12) is
		// refused; 3 tokens are short, 0.3 s of refill: retry-after 1.
		r = call(4, desc("tenant", "acme"), desc("tenant", "acme", "path", "/search"))
		if r.OverallCode != rlsv3.RateLimitResponse_OVER_LIMIT || r.Statuses[0].Code != rlsv3.RateLimitResponse_OK ||
			r.Statuses[1].Code != rlsv3.RateLimitResponse_OVER_LIMIT {
			t.Fatalf("style %q: %v", style, r)
		}
		// The first descriptor spent 4 (5 left): the /search one describes
		// the headers: 5/3 = 1 request left, 3.33 a second, 0.7 s to fit 12.
		want = map[string]string{p + "limit": "3", p + "remaining": "1", p + "reset": "1", "retry-after": "1"}
		if style == "none" {
			want = map[string]string{}
		}
		if got := headers(r); !equalMaps(got, want) {
			t.Fatalf("style %q: OVER_LIMIT: %v, want %v", style, got, want)
		}
		if d := r.Statuses[1].DurationUntilReset.AsDuration(); d < 690*time.Millisecond || d > 710*time.Millisecond {
			t.Fatalf("style %q: reset %v, want 0.7 s", style, d)
		}
	}
}

func equalMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// TestEnvoyRLSBadRequests: each bad request is refused whole, with
// InvalidArgument naming the field, and spends nothing — not even the
// valid descriptor before the bad one.
func TestEnvoyRLSBadRequests(t *testing.T) {
	clock := &fakeClock{}
	a := fixedAgent(t, fronted, clock)
	lease(t, a.Limiter(), a.now(), "acme", 1, 10, 40)
	client := serveGRPC(t, a)
	ok := desc("tenant", "acme")
	many := make([]*ratelimitv3.RateLimitDescriptor, 65)
	for i := range many {
		many[i] = desc("tenant", "acme")
	}
	var long []string
	for range 17 {
		long = append(long, "k", "v")
	}
	withHits := func(n uint64) *ratelimitv3.RateLimitDescriptor {
		d := desc("tenant", "acme")
		d.HitsAddend = wrapperspb.UInt64(n)
		return d
	}
	negative := desc("tenant", "acme")
	negative.IsNegativeHits = true
	override := desc("tenant", "acme")
	override.Limit = &ratelimitv3.RateLimitDescriptor_RateLimitOverride{RequestsPerUnit: 5}
	for i, tc := range []struct {
		req  *rlsv3.RateLimitRequest
		code codes.Code
		want string
	}{
		{&rlsv3.RateLimitRequest{Descriptors: []*ratelimitv3.RateLimitDescriptor{ok}}, codes.InvalidArgument, `domain: empty: want "edge"`},
		{&rlsv3.RateLimitRequest{Domain: "other", Descriptors: []*ratelimitv3.RateLimitDescriptor{ok}}, codes.InvalidArgument, `domain "other": this agent serves domain "edge"`},
		{&rlsv3.RateLimitRequest{Domain: "edge"}, codes.InvalidArgument, "descriptors: 0: want 1 to 64"},
		{&rlsv3.RateLimitRequest{Domain: "edge", Descriptors: many}, codes.InvalidArgument, "descriptors: 65: want 1 to 64"},
		{&rlsv3.RateLimitRequest{Domain: "edge", HitsAddend: 1_000_001, Descriptors: []*ratelimitv3.RateLimitDescriptor{ok}}, codes.InvalidArgument, "hits_addend 1000001: want 0 (for 1) to 1000000"},
		{&rlsv3.RateLimitRequest{Domain: "edge", Descriptors: []*ratelimitv3.RateLimitDescriptor{ok, {}}}, codes.InvalidArgument, "descriptors[1].entries: 0: want 1 to 16"},
		{&rlsv3.RateLimitRequest{Domain: "edge", Descriptors: []*ratelimitv3.RateLimitDescriptor{ok, desc(long...)}}, codes.InvalidArgument, "descriptors[1].entries: 17: want 1 to 16"},
		{&rlsv3.RateLimitRequest{Domain: "edge", Descriptors: []*ratelimitv3.RateLimitDescriptor{ok, desc("", "x")}}, codes.InvalidArgument, "descriptors[1].entries[0]: key of 0 bytes"},
		{&rlsv3.RateLimitRequest{Domain: "edge", Descriptors: []*ratelimitv3.RateLimitDescriptor{ok, desc("k", strings.Repeat("v", 1025))}}, codes.InvalidArgument, "value of 1025"},
		{&rlsv3.RateLimitRequest{Domain: "edge", Descriptors: []*ratelimitv3.RateLimitDescriptor{ok, withHits(0)}}, codes.InvalidArgument, "descriptors[1].hits_addend 0: want 1 to 1000000"},
		{&rlsv3.RateLimitRequest{Domain: "edge", Descriptors: []*ratelimitv3.RateLimitDescriptor{ok, withHits(1 << 40)}}, codes.InvalidArgument, "descriptors[1].hits_addend 1099511627776"},
		{&rlsv3.RateLimitRequest{Domain: "edge", Descriptors: []*ratelimitv3.RateLimitDescriptor{ok, negative}}, codes.InvalidArgument, "descriptors[1].is_negative_hits"},
		{&rlsv3.RateLimitRequest{Domain: "edge", Descriptors: []*ratelimitv3.RateLimitDescriptor{ok, override}}, codes.InvalidArgument, "descriptors[1].limit: overrides are not supported"},
		{&rlsv3.RateLimitRequest{Domain: "edge", Descriptors: []*ratelimitv3.RateLimitDescriptor{ok, desc("tenant", "initech")}}, codes.FailedPrecondition, `tenant "initech" (envoy.descriptors[3]): not served in region "eu"`},
	} {
		_, err := client.ShouldRateLimit(context.Background(), tc.req)
		if s, _ := status.FromError(err); s.Code() != tc.code || !strings.Contains(s.Message(), tc.want) {
			t.Errorf("step %d: %v, want %v naming %q", i, err, tc.code, tc.want)
		}
		if bal := a.Limiter().Status(a.now(), "acme").Balance; bal != quota.Tokens(40) {
			t.Fatalf("step %d: a refused request spent: balance %v, want 40", i, bal.Float())
		}
	}

	// A deadline already past: nothing spent, DeadlineExceeded. The
	// client would not send it, so the call is made on the server's
	// method directly; then through the client, an ample one passes.
	ctx, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel()
	_, err := (&rlsServer{a: a}).ShouldRateLimit(ctx, &rlsv3.RateLimitRequest{Domain: "edge", Descriptors: []*ratelimitv3.RateLimitDescriptor{ok}})
	if status.Code(err) != codes.DeadlineExceeded {
		t.Fatalf("a past deadline: %v", err)
	}
	if bal := a.Limiter().Status(a.now(), "acme").Balance; bal != quota.Tokens(40) {
		t.Fatalf("a call past its deadline spent: balance %v", bal.Float())
	}
	ctx, cancel = context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if r, err := client.ShouldRateLimit(ctx, &rlsv3.RateLimitRequest{Domain: "edge", Descriptors: []*ratelimitv3.RateLimitDescriptor{ok}}); err != nil || r.OverallCode != rlsv3.RateLimitResponse_OK {
		t.Fatalf("with a deadline: %v %v", r, err)
	}
}

// TestEnvoyRLSToken: with envoy.token, a call needs it as a bearer token;
// the error never echoes it.
func TestEnvoyRLSToken(t *testing.T) {
	const token = "envoy-token-0123456789"
	clock := &fakeClock{}
	a := fixedAgent(t, strings.Replace(fronted, "domain: edge", "domain: edge\n  token: "+token, 1), clock)
	lease(t, a.Limiter(), a.now(), "acme", 1, 10, 40)
	client := serveGRPC(t, a)
	req := &rlsv3.RateLimitRequest{Domain: "edge", Descriptors: []*ratelimitv3.RateLimitDescriptor{desc("tenant", "acme")}}
	for i, md := range []metadata.MD{nil, metadata.Pairs("authorization", "Bearer wrong-token-0123456789"),
		metadata.Pairs("authorization", token), metadata.Pairs("authorization", "Bearer "+token, "authorization", "Bearer "+token)} {
		ctx := metadata.NewOutgoingContext(context.Background(), md)
		_, err := client.ShouldRateLimit(ctx, req)
		if status.Code(err) != codes.Unauthenticated || strings.Contains(err.Error(), token) {
			t.Fatalf("step %d: %v, want Unauthenticated without the token", i, err)
		}
	}
	ctx := metadata.AppendToOutgoingContext(context.Background(), "authorization", "Bearer "+token)
	if r, err := client.ShouldRateLimit(ctx, req); err != nil || r.OverallCode != rlsv3.RateLimitResponse_OK {
		t.Fatalf("with the token: %v %v", r, err)
	}
}

// TestEnvoyRLSReflection: the agent's gRPC server answers server
// reflection — grpcurl lists the rate-limit service — and, with
// envoy.token, only to a caller that has the token: reflection is a
// stream, and streams are checked as unary calls are.
func TestEnvoyRLSReflection(t *testing.T) {
	list := func(ctx context.Context, cc *grpc.ClientConn) ([]string, error) {
		st, err := reflectionpb.NewServerReflectionClient(cc).ServerReflectionInfo(ctx)
		if err != nil {
			return nil, err
		}
		// A stream the server has ended (refused) fails Send with io.EOF;
		// its status comes with Recv.
		if err := st.Send(&reflectionpb.ServerReflectionRequest{MessageRequest: &reflectionpb.ServerReflectionRequest_ListServices{}}); err != nil && err != io.EOF {
			return nil, err
		}
		r, err := st.Recv()
		if err != nil {
			return nil, err
		}
		var names []string
		for _, s := range r.GetListServicesResponse().GetService() {
			names = append(names, s.GetName())
		}
		return names, nil
	}
	const rls = "envoy.service.ratelimit.v3.RateLimitService"
	open := fixedAgent(t, fronted, &fakeClock{})
	if names, err := list(context.Background(), serveGRPCConn(t, open)); err != nil || !slices.Contains(names, rls) {
		t.Fatalf("reflection lists %v, %v; want %s among them", names, err, rls)
	}

	const token = "envoy-token-0123456789"
	closed := fixedAgent(t, strings.Replace(fronted, "domain: edge", "domain: edge\n  token: "+token, 1), &fakeClock{})
	cc := serveGRPCConn(t, closed)
	if names, err := list(context.Background(), cc); status.Code(err) != codes.Unauthenticated || strings.Contains(err.Error(), token) {
		t.Fatalf("reflection without the token: %v, %v; want Unauthenticated, the token not echoed", names, err)
	}
	ctx := metadata.AppendToOutgoingContext(context.Background(), "authorization", "Bearer "+token)
	if names, err := list(ctx, cc); err != nil || !slices.Contains(names, rls) {
		t.Fatalf("reflection with the token lists %v, %v; want %s among them", names, err, rls)
	}
}
