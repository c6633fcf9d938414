package agent

import (
	"context"
	"crypto/subtle"
	"fmt"
	"math"
	"strconv"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/reflection"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/afloat/afloat/internal/hostcheck"
	"github.com/afloat/afloat/quota/config"
	"github.com/afloat/afloat/quota/eventlog"
)

// Limits of a ShouldRateLimit request, beyond which it is refused with
// InvalidArgument: descriptors per request and hits per descriptor (the
// decision API's bound on n); entries per descriptor and bytes per
// domain, key or value are the config file's (config.MaxEnvoyEntries,
// config.MaxEnvoyString).
const (
	maxEnvoyDescriptors = 64
	maxEnvoyHits        = 1_000_000
)

// envoyIndex finds the rule for a descriptor: exact rules by key, rules
// with a wildcard in order.
type envoyIndex struct {
	rules []config.EnvoyDescriptor
	exact map[string]int
	wild  []int // indices of rules with an empty value, in file order
}

func newEnvoyIndex(e *config.EnvoyConfig) *envoyIndex {
	ix := &envoyIndex{rules: e.Descriptors, exact: map[string]int{}}
	for i, d := range e.Descriptors {
		wild := false
		for _, en := range d.Entries {
			wild = wild || en.Value == ""
		}
		if wild {
			ix.wild = append(ix.wild, i)
		} else {
			ix.exact[config.EntriesKey(d.Entries)] = i
		}
	}
	return ix
}

type rlsEntry struct{ k, v string }

func (e rlsEntry) GetKeyValue() (string, string) { return e.k, e.v }

// match returns the first rule matching entries, or -1.
func (ix *envoyIndex) match(entries []rlsEntry) int {
	best := -1
	var kb [256]byte // most keys fit: the lookup then allocates nothing
	if i, ok := ix.exact[string(config.AppendEntriesKey(kb[:0], entries))]; ok {
		best = i
	}
	for _, i := range ix.wild {
		if best >= 0 && i > best {
			break
		}
		d := ix.rules[i]
		if len(d.Entries) != len(entries) {
			continue
		}
		ok := true
		for j, en := range d.Entries {
			if en.Key != entries[j].k || (en.Value != "" && en.Value != entries[j].v) {
				ok = false
				break
			}
		}
		if ok {
			return i
		}
	}
	return best
}

// rlsServer is the agent's envoy.service.ratelimit.v3.RateLimitService.
type rlsServer struct {
	rlsv3.UnimplementedRateLimitServiceServer
	a *Agent
}

// GRPCServer returns a gRPC server that serves Envoy's rate-limit service
// (envoy.service.ratelimit.v3.RateLimitService) from the agent's
// limiter; Run serves one on Options.GRPCListen. It needs the
// config's envoy section: without one it returns an error wrapping
// ErrOptions.
//
// ShouldRateLimit answers each descriptor the config maps to a tenant
// with OVER_LIMIT exactly when the region's limiter refuses hits times
// the endpoint's cost (the descriptor's hits_addend, else the request's,
// else 1), and OK otherwise, spending as it admits — one
// region.Limiter.DecideAt per descriptor, whose one read gives its
// status, limit, remaining tokens and reset; a descriptor the
// config does not map is OK and spends nothing. The overall code is
// OVER_LIMIT when any descriptor is. As with Envoy's ratelimit service,
// the descriptors admitted in a request that is over the limit as a
// whole have spent their tokens. Bad requests (an empty or other domain,
// no descriptor or more than 64, entries out of range, hits above
// 1000000, negative hits, a limit override) are refused whole, before
// anything is spent, with InvalidArgument naming the field; a deadline
// already past, with DeadlineExceeded.
//
// The server answers gRPC server reflection (grpc.reflection.v1), so
// that grpcurl lists and calls the service without its .proto files; with
// envoy.token, reflection needs the token as every call does.
func (a *Agent) GRPCServer() (*grpc.Server, error) {
	if a.envoy == nil {
		return nil, fmt.Errorf("%w: --grpc-listen: the config has no envoy section (docs/quota/config.md, \"envoy\")", ErrOptions)
	}
	opts := []grpc.ServerOption{
		grpc.MaxRecvMsgSize(256 << 10),
		grpc.MaxConcurrentStreams(1024),
		grpc.ConnectionTimeout(10 * time.Second),
	}
	if tok := a.o.Config.Envoy.Token; tok != "" {
		// Streams too: server reflection is one.
		check := bearer(tok)
		opts = append(opts, grpc.UnaryInterceptor(func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
			if err := check(ctx); err != nil {
				return nil, err
			}
			return h(ctx, req)
		}), grpc.StreamInterceptor(func(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, h grpc.StreamHandler) error {
			if err := check(ss.Context()); err != nil {
				return err
			}
			return h(srv, ss)
		}))
	}
	s := grpc.NewServer(opts...)
	rlsv3.RegisterRateLimitServiceServer(s, &rlsServer{a: a})
	// Server reflection, so that grpcurl and grpcui list and call the
	// service without its .proto files at hand.
	reflection.Register(s)
	return s, nil
}

// bearer checks a call's "authorization: Bearer TOKEN". The token is
// compared in constant time and never echoed.
func bearer(token string) func(context.Context) error {
	want := []byte("Bearer " + token)
	return func(ctx context.Context) error {
		md, _ := metadata.FromIncomingContext(ctx)
		got := md.Get("authorization")
		if len(got) != 1 || subtle.ConstantTimeCompare([]byte(got[0]), want) != 1 {
			return status.Error(codes.Unauthenticated, "quota region: want metadata authorization: Bearer <envoy.token>")
		}
		return nil
	}
}

// envoyCall is a descriptor resolved: rule -1 for none.
type envoyCall struct {
	rule   int
	tenant string
	cost   int64 // per hit
	hits   int64
}

func invalid(format string, args ...any) error {
	return status.Errorf(codes.InvalidArgument, "quota region: "+format, args...)
}

// ShouldRateLimit implements rlsv3.RateLimitServiceServer.
func (s *rlsServer) ShouldRateLimit(ctx context.Context, req *rlsv3.RateLimitRequest) (*rlsv3.RateLimitResponse, error) {
	began := time.Now()
	a := s.a
	e := &a.o.Config.Envoy
	switch d := req.GetDomain(); {
	case d == "":
		return nil, invalid("domain: empty: want %q", e.Domain)
	case d != e.Domain:
		if len(d) > 64 {
			d = d[:64] + "…"
		}
		return nil, invalid("domain %q: this agent serves domain %q", d, e.Domain)
	}
	ds := req.GetDescriptors()
	if len(ds) == 0 || len(ds) > maxEnvoyDescriptors {
		return nil, invalid("descriptors: %d: want 1 to %d", len(ds), maxEnvoyDescriptors)
	}
	hits := int64(req.GetHitsAddend())
	if hits == 0 {
		hits = 1 // Envoy: unset means 1
	}
	if hits > maxEnvoyHits {
		return nil, invalid("hits_addend %d: want 0 (for 1) to %d", hits, maxEnvoyHits)
	}
	// Requests of a few descriptors and entries, as Envoy's usually are,
	// are resolved on the stack.
	var callsBuf [4]envoyCall
	var entriesBuf [8]rlsEntry
	calls := callsBuf[:0]
	if len(ds) > len(callsBuf) {
		calls = make([]envoyCall, 0, len(ds))
	}
	calls = calls[:len(ds)]
	entries := entriesBuf[:0]
	for i, d := range ds {
		es := d.GetEntries()
		if len(es) == 0 || len(es) > config.MaxEnvoyEntries {
			return nil, invalid("descriptors[%d].entries: %d: want 1 to %d", i, len(es), config.MaxEnvoyEntries)
		}
		entries = entries[:0]
		for j, en := range es {
			k, v := en.GetKey(), en.GetValue()
			if k == "" || len(k) > config.MaxEnvoyString || len(v) > config.MaxEnvoyString {
				return nil, invalid("descriptors[%d].entries[%d]: key of %d bytes, value of %d: want a key of 1 to %d bytes, a value of at most %d",
					i, j, len(k), len(v), config.MaxEnvoyString, config.MaxEnvoyString)
			}
			entries = append(entries, rlsEntry{k, v})
		}
		if d.GetLimit() != nil {
			return nil, invalid("descriptors[%d].limit: overrides are not supported: the region's lease sets the limit", i)
		}
		if d.GetIsNegativeHits() {
			return nil, invalid("descriptors[%d].is_negative_hits: not supported: spent tokens are not given back", i)
		}
		c := envoyCall{rule: a.envoy.match(entries), hits: hits}
		if h := d.GetHitsAddend(); h != nil {
			v := h.GetValue()
			if v < 1 || v > maxEnvoyHits {
				return nil, invalid("descriptors[%d].hits_addend %d: want 1 to %d", i, v, maxEnvoyHits)
			}
			c.hits = int64(v)
		}
		if c.rule >= 0 {
			r := e.Descriptors[c.rule]
			t, ok := a.tenant(r.Tenant)
			if !ok {
				return nil, status.Errorf(codes.FailedPrecondition, "quota region: descriptors[%d]: tenant %q (envoy.descriptors[%d]): not served in region %q",
					i, r.Tenant, c.rule, a.o.Name)
			}
			c.tenant, c.cost = r.Tenant, t.Cost(r.Endpoint)
		}
		calls[i] = c
	}
	if err := ctx.Err(); err != nil {
		return nil, status.FromContextError(err).Err()
	}

	now := a.now()
	ans := newRLSAnswer(len(calls))
	resp := &ans.resp
	resp.OverallCode = rlsv3.RateLimitResponse_OK
	var head *rlsv3.RateLimitResponse_DescriptorStatus // the one the headers describe
	var retry time.Duration
	var never string // a descriptor's tenant can never admit its cost: the body that says so
	for i, c := range calls {
		st := &ans.st[i]
		ds := &st.ds
		resp.Statuses[i] = ds
		ds.Code = rlsv3.RateLimitResponse_OK
		if c.rule < 0 {
			continue
		}
		cost := c.hits * c.cost
		// One decision, the whole status: the limit, the remaining tokens
		// and the reset all come from the lease that decided.
		dec := a.lim.DecideAt(now, c.tenant, cost)
		rate := dec.Rate.Float() // the region's share now: none without a valid lease
		st.limit.Name = c.tenant
		st.limit.RequestsPerUnit = clampU32(rate / float64(c.cost))
		st.limit.Unit = rlsv3.RateLimitResponse_RateLimit_SECOND
		ds.CurrentLimit = &st.limit
		ds.LimitRemaining = clampU32(dec.Remaining.Float() / float64(c.cost))
		switch {
		case dec.Allowed:
			a.event(now, eventlog.Admit, c.tenant, cost)
			// A token bucket's window "resets" when it is full again.
			var full time.Duration
			if rate > 0 {
				full = time.Duration(math.Ceil(max(0, dec.Burst.Float()-dec.Remaining.Float()) / rate * 1e9))
			}
			ds.DurationUntilReset = st.reset(full)
		case dec.Never:
			// Never admittable: over the limit with no time to reset, and
			// the request's answer says so (below).
			a.event(now, eventlog.Reject, c.tenant, cost)
			ds.Code = rlsv3.RateLimitResponse_OVER_LIMIT
			resp.OverallCode = rlsv3.RateLimitResponse_OVER_LIMIT
			if never == "" {
				never = fmt.Sprintf("quota: this request can never be admitted: it costs %d tokens of tenant %q's quota, which holds at most %d in region %q; do not retry it\n",
					cost, c.tenant, dec.MaxCost, a.o.Name)
			}
		default:
			a.event(now, eventlog.Reject, c.tenant, cost)
			ds.Code = rlsv3.RateLimitResponse_OVER_LIMIT
			ds.DurationUntilReset = st.reset(dec.RetryAfter)
			resp.OverallCode = rlsv3.RateLimitResponse_OVER_LIMIT
			retry = max(retry, dec.RetryAfter)
		}
		// The headers describe the tightest descriptor: over the limit
		// first, then the fewest remaining (Envoy's ratelimit service
		// reports the one with the least remaining, too).
		if head == nil || tighter(ds, head) {
			head = ds
		}
	}
	if head != nil && e.Headers != "none" {
		keys := &xRateLimitHeaders
		if e.Headers == "ratelimit" {
			keys = &rateLimitHeaders
		}
		// The values share one string: one allocation for them all.
		var vb [80]byte
		b := strconv.AppendUint(vb[:0], uint64(head.CurrentLimit.RequestsPerUnit), 10)
		n0 := len(b)
		b = strconv.AppendUint(b, uint64(head.LimitRemaining), 10)
		n1 := len(b)
		b = strconv.AppendInt(b, int64(ceilSeconds(head.DurationUntilReset.AsDuration(), 0)), 10)
		n2 := len(b)
		over := resp.OverallCode == rlsv3.RateLimitResponse_OVER_LIMIT && never == ""
		if over {
			b = strconv.AppendInt(b, int64(ceilSeconds(retry, 1)), 10)
		}
		vs := string(b)
		ans.hv[0].Key, ans.hv[0].Value = keys[0], vs[:n0]
		ans.hv[1].Key, ans.hv[1].Value = keys[1], vs[n0:n1]
		ans.hv[2].Key, ans.hv[2].Value = keys[2], vs[n1:n2]
		ans.hp[0], ans.hp[1], ans.hp[2] = &ans.hv[0], &ans.hv[1], &ans.hv[2]
		resp.ResponseHeadersToAdd = ans.hp[:3]
		if over {
			ans.hv[3].Key, ans.hv[3].Value = "retry-after", vs[n2:]
			ans.hp[3] = &ans.hv[3]
			resp.ResponseHeadersToAdd = ans.hp[:4]
		}
	}
	if never != "" {
		// Envoy answers with its rate_limited_status (429 by default) and
		// this body, without Retry-After: waiting will not help.
		resp.RawBody = []byte(never)
		resp.ResponseHeadersToAdd = append(resp.ResponseHeadersToAdd, &corev3.HeaderValue{Key: "content-type", Value: "text/plain; charset=utf-8"})
	}
	decided(a.metrics.decideEnvoy, began)
	return resp, nil
}

// The rate-limit headers' names, by the envoy section's headers.
var (
	xRateLimitHeaders = [3]string{"x-ratelimit-limit", "x-ratelimit-remaining", "x-ratelimit-reset"}
	rateLimitHeaders  = [3]string{"ratelimit-limit", "ratelimit-remaining", "ratelimit-reset"}
)

// rlsAnswer is an answer to ShouldRateLimit and everything it points to,
// allocated together: one allocation for a request of one descriptor
// where a message apiece took nine. Its messages are used in place, never
// copied.
type rlsAnswer struct {
	resp rlsv3.RateLimitResponse
	one  [1]rlsStatus
	onep [1]*rlsv3.RateLimitResponse_DescriptorStatus
	st   []rlsStatus
	hv   [4]corev3.HeaderValue
	hp   [4]*corev3.HeaderValue
}

// rlsStatus is a descriptor's status with its limit and its reset.
type rlsStatus struct {
	ds    rlsv3.RateLimitResponse_DescriptorStatus
	limit rlsv3.RateLimitResponse_RateLimit
	dur   durationpb.Duration
}

func newRLSAnswer(n int) *rlsAnswer {
	ans := &rlsAnswer{}
	if n == 1 {
		ans.st, ans.resp.Statuses = ans.one[:], ans.onep[:]
	} else {
		ans.st, ans.resp.Statuses = make([]rlsStatus, n), make([]*rlsv3.RateLimitResponse_DescriptorStatus, n)
	}
	return ans
}

// reset sets the status's duration to d (as durationpb.New) and returns it.
func (s *rlsStatus) reset(d time.Duration) *durationpb.Duration {
	s.dur.Seconds, s.dur.Nanos = int64(d/time.Second), int32(d%time.Second)
	return &s.dur
}

// tighter says whether x is the tighter status: over the limit first,
// then the fewest remaining.
func tighter(x, y *rlsv3.RateLimitResponse_DescriptorStatus) bool {
	xo, yo := x.Code == rlsv3.RateLimitResponse_OVER_LIMIT, y.Code == rlsv3.RateLimitResponse_OVER_LIMIT
	if xo != yo {
		return xo
	}
	return x.LimitRemaining < y.LimitRemaining
}

// ceilSeconds rounds d up to whole seconds, at least least.
func ceilSeconds(d time.Duration, least int) int {
	return max(least, int(math.Ceil(d.Seconds())))
}

func clampU32(x float64) uint32 {
	switch {
	case !(x > 0):
		return 0
	case x >= math.MaxUint32:
		return math.MaxUint32
	}
	return uint32(x)
}

// isLoopback says whether a listen address binds loopback only.
func isLoopback(addr string) bool { return hostcheck.ListenLoopback(addr) }
