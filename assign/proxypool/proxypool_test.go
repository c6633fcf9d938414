package proxypool

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/afloat/afloat/assign"
	"github.com/afloat/afloat/assign/assigntest"
)

// newClient starts a redis-server of the test's own and gives package
// assign a go-redis client of it, as a user does.
func newClient(t *testing.T) *assign.Client {
	t.Helper()
	srv := assigntest.Start(t)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr, MaxRetries: -1})
	t.Cleanup(func() { rdb.Close() })
	c, err := assign.FromGoRedis(rdb)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func newPool(t *testing.T, c *assign.Client, name string) *assign.Pool {
	t.Helper()
	p, err := assign.New(c, name)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func ctxFor(t *testing.T) context.Context { return assigntest.Context(t, time.Minute) }

// counts is each member's count.
func counts(t *testing.T, p *assign.Pool) map[string]int64 {
	t.Helper()
	out := map[string]int64{}
	for _, m := range list(t, p) {
		out[m.Name] = m.Count
	}
	return out
}

// list is the pool's members.
func list(t *testing.T, p *assign.Pool) []assign.Member {
	t.Helper()
	st, err := p.Status(ctxFor(t))
	if err != nil && !errors.Is(err, assign.ErrUnknownPool) {
		t.Fatal(err)
	}
	return st.Members
}

// forwardProxy is a real HTTP forward proxy on loopback that can be made
// to fail: it answers 502 while broken, as a proxy that cannot reach the
// target does, and counts the requests it carried.
type forwardProxy struct {
	*httptest.Server
	broken  atomic.Bool
	carried atomic.Int64
}

func newForwardProxy(t *testing.T) *forwardProxy {
	fp := &forwardProxy{}
	direct := &http.Transport{Proxy: nil}
	t.Cleanup(direct.CloseIdleConnections)
	fp.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !r.URL.IsAbs() {
			http.Error(w, "not a proxy request", http.StatusBadRequest)
			return
		}
		if fp.broken.Load() {
			http.Error(w, "upstream unreachable", http.StatusBadGateway)
			return
		}
		out, _ := http.NewRequestWithContext(r.Context(), r.Method, r.URL.String(), r.Body)
		resp, err := direct.RoundTrip(out)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		fp.carried.Add(1)
		w.WriteHeader(resp.StatusCode)
		io.Copy(w, resp.Body)
	}))
	t.Cleanup(fp.Close)
	return fp
}

func (fp *forwardProxy) member() string { return "http://" + fp.Listener.Addr().String() }

// closedPort returns a loopback address nothing listens on.
func closedPort(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

func TestPool(t *testing.T) {
	c := newClient(t)
	ctx := ctxFor(t)
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }))
	defer target.Close()

	good1, good2, bad, flaky := newForwardProxy(t), newForwardProxy(t), newForwardProxy(t), newForwardProxy(t)
	bad.broken.Store(true)
	flaky.broken.Store(true)
	refused := closedPort(t)
	text := fmt.Sprintf("%s\n%s\n%s\n%s\n%s\nnot a proxy\n", good1.member(), strings.TrimPrefix(good2.member(), "http://"), bad.member(), refused, flaky.member())
	urls, badLines, err := ParseList(strings.NewReader(text))
	if err != nil || len(urls) != 5 || len(badLines) != 1 || badLines[0].(lineError).line != 6 {
		t.Fatalf("list: %d proxies, bad lines %v, %v", len(urls), badLines, err)
	}

	p := newPool(t, c, "proxies")
	probe := ProbeConfig{URL: target.URL + "/health", Timeout: 2 * time.Second, Concurrency: 4}
	pp, err := New(p, probe, assign.RestoreCurrentMinimum)
	if err != nil {
		t.Fatal(err)
	}
	pp.Import(urls...)
	var dials atomic.Int64
	base := &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		dials.Add(1)
		return (&net.Dialer{}).DialContext(ctx, network, addr)
	}}
	client := &http.Client{Transport: pp.Transport(base), Timeout: 10 * time.Second}
	defer base.CloseIdleConnections()

	get := func(n int) (okN int, errs []error) {
		for range n {
			resp, err := client.Get(target.URL + "/work")
			if err != nil {
				errs = append(errs, err)
				continue
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == 200 && string(b) == "ok" {
				okN++
			} else {
				errs = append(errs, fmt.Errorf("status %d", resp.StatusCode))
			}
		}
		return okN, errs
	}
	check := func(step string, joined, restored, left []string) {
		t.Helper()
		checkPool(t, ctx, pp, step, joined, restored, left)
	}

	// Before any check nothing is eligible: no pool at all yet.
	if _, err := client.Get(target.URL); !errors.Is(err, assign.ErrUnknownPool) || dials.Load() != 0 {
		t.Fatalf("request before the first check: %v, %d dials", err, dials.Load())
	}

	// 1. The healthy two join; the broken, the refusing and the flaky one do not.
	check("first check", []string{good1.member(), good2.member()}, nil, nil)
	if ok, errs := get(100); ok != 100 {
		t.Fatalf("through the pool: %d of 100 ok: %v", ok, errs)
	}
	cs := counts(t, p)
	// Each proxy carried its 50 requests and the probe, which is not an
	// assignment.
	if cs[good1.member()] != 50 || cs[good2.member()] != 50 || good1.carried.Load() != 51 || good2.carried.Load() != 51 {
		t.Fatalf("counts %v, carried %d %d; want 50 assignments and 51 requests (one the probe) each", cs, good1.carried.Load(), good2.carried.Load())
	}
	if bad.carried.Load()+flaky.carried.Load() != 0 {
		t.Fatal("a broken proxy carried a request")
	}

	// 2. The flaky one recovers and joins at the current minimum.
	flaky.broken.Store(false)
	check("flaky recovers", []string{flaky.member()}, nil, nil)
	if got := counts(t, p)[flaky.member()]; got != 50 {
		t.Fatalf("the recovered proxy joined at %d, want the current minimum 50", got)
	}

	// 3. good2 breaks between checks: its requests fail (counted as
	// failures apart from its assignments), then the check removes it.
	good2.Close()
	_, errs := get(30)
	if len(errs) != 10 {
		t.Fatalf("%d of 30 requests failed, want good2's 10: %v", len(errs), errs)
	}
	ms := list(t, p)
	for _, m := range ms {
		if m.Name == good2.member() && (m.Failures != 10 || m.Count != 60) {
			t.Fatalf("good2: %+v, want 60 assignments and 10 failures", m)
		}
	}
	check("good2 breaks", nil, nil, []string{good2.member()})
	if ok, errs := get(20); ok != 20 {
		t.Fatalf("after good2 left: %d of 20: %v", ok, errs)
	}

	// 4. Everything breaks: the pool empties, and a request fails with
	// assign.ErrPoolEmpty before any dial.
	good1.broken.Store(true)
	flaky.broken.Store(true)
	check("all break", nil, nil, []string{good1.member(), flaky.member()})
	before := dials.Load()
	_, err = client.Get(target.URL)
	if !errors.Is(err, assign.ErrPoolEmpty) {
		t.Fatalf("request on an empty pool: %v, want assign.ErrPoolEmpty", err)
	}
	if dials.Load() != before {
		t.Fatalf("an empty pool dialled %d times", dials.Load()-before)
	}

	// 5. The flaky one recovers again: restored by the policy (no active
	// member, so its own count).
	flaky.broken.Store(false)
	check("flaky back", nil, []string{flaky.member()}, nil)
	if ok, errs := get(5); ok != 5 || flaky.carried.Load() == 0 {
		t.Fatalf("after the restore: %d of 5: %v", ok, errs)
	}
	for _, h := range pp.lastHealth() {
		if h.Proxy == bad.member() && (h.Healthy || h.Status != 502) {
			t.Errorf("the broken proxy's health %+v", h)
		}
		if h.Proxy == "http://"+refused && (h.Healthy || h.Err == "") {
			t.Errorf("the refusing proxy's health %+v", h)
		}
	}
}

// A probe that gets no answer within the timeout marks the proxy
// unhealthy, and says so.
func TestProbeTimeout(t *testing.T) {
	hang := make(chan struct{})
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-hang }))
	defer slow.Close()
	defer close(hang)
	u, err := parseProxy(slow.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	hs, err := Probe(context.Background(), []*url.URL{u}, ProbeConfig{URL: "http://127.0.0.1:1/", Timeout: 50 * time.Millisecond, Concurrency: 1})
	if err != nil {
		t.Fatal(err)
	}
	if hs[0].Healthy || !strings.Contains(hs[0].Err, "timeout") && !strings.Contains(hs[0].Err, "deadline") {
		t.Fatalf("a proxy that never answers: %+v", hs[0])
	}
}

// TestPoolHysteresis: with Fall 2 and Rise 2, one failed probe does
// not take a serving proxy out and one healthy probe does not bring a
// failed one back; two in a row do. A new candidate joins on its first
// healthy probe, and one that failed first needs two.
func TestPoolHysteresis(t *testing.T) {
	c := newClient(t)
	ctx := ctxFor(t)
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }))
	defer target.Close()
	steady, wobbly, late := newForwardProxy(t), newForwardProxy(t), newForwardProxy(t)
	late.broken.Store(true)
	var urls []*url.URL
	for _, fp := range []*forwardProxy{steady, wobbly, late} {
		u, err := parseProxy(fp.member())
		if err != nil {
			t.Fatal(err)
		}
		urls = append(urls, u)
	}
	probe := DefaultProbeConfig(target.URL + "/health")
	probe.Timeout = 2 * time.Second
	if probe.Fall != 2 || probe.Rise != 2 {
		t.Fatalf("default fall %d rise %d, want 2 and 2", probe.Fall, probe.Rise)
	}
	pp, err := New(newPool(t, c, "hysteresis"), probe, assign.RestoreKeepHistory)
	if err != nil {
		t.Fatal(err)
	}
	pp.Import(urls...)
	check := func(step string, joined, restored, left []string) {
		t.Helper()
		checkPool(t, ctx, pp, step, joined, restored, left)
	}
	check("first check", []string{steady.member(), wobbly.member()}, nil, nil)

	wobbly.broken.Store(true)
	late.broken.Store(false)
	check("one failed probe", nil, nil, nil) // late: one healthy probe after a failure
	check("two failed probes", []string{late.member()}, nil, []string{wobbly.member()})

	wobbly.broken.Store(false)
	check("one healthy probe", nil, nil, nil)
	wobbly.broken.Store(true)
	check("failed again", nil, nil, nil) // the healthy streak starts over
	wobbly.broken.Store(false)
	check("healthy", nil, nil, nil)
	check("healthy twice in a row", nil, []string{wobbly.member()}, nil)

	// A serving proxy's single failure between two healthy probes is
	// forgiven.
	steady.broken.Store(true)
	check("steady fails once", nil, nil, nil)
	steady.broken.Store(false)
	check("steady recovers", nil, nil, nil)
	steady.broken.Store(true)
	check("steady fails once more", nil, nil, nil)

	bad := DefaultProbeConfig(target.URL)
	bad.Fall = 101
	if _, err := New(newPool(t, c, "x"), bad, assign.RestoreKeepHistory); err == nil || !strings.Contains(err.Error(), "probe fall 101: want 1 to 100") {
		t.Fatalf("fall 101: %v", err)
	}
	bad = DefaultProbeConfig(target.URL)
	bad.Rise = -1
	if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), "probe rise -1: want 1 to 100") {
		t.Fatalf("rise -1: %v", err)
	}
}

// checkPool runs one health check of pp and fails the test unless it
// joined, restored and removed exactly the members given.
func checkPool(t *testing.T, ctx context.Context, pp *Pool, step string, joined, restored, left []string) {
	t.Helper()
	rep, err := pp.Check(ctx)
	if err != nil {
		t.Fatalf("%s: check: %v", step, err)
	}
	if fmt.Sprint(rep.Joined) != fmt.Sprint(joined) || fmt.Sprint(rep.Restored) != fmt.Sprint(restored) || fmt.Sprint(rep.Left) != fmt.Sprint(left) {
		t.Fatalf("%s: joined %v restored %v left %v; want %v %v %v (health %+v)", step, rep.Joined, rep.Restored, rep.Left, joined, restored, left, rep.Health)
	}
}

// TestTransportRetryIsOneAssignment: http.Transport asks its Proxy func
// again when it retries a request on a fresh connection (the kept-alive
// one was closed under it). The retry goes through the proxy already
// picked and counts nothing more: TestPool once saw 61 assignments
// where 60 requests were sent, when good2's idle connection died.
func TestTransportRetryIsOneAssignment(t *testing.T) {
	c := newClient(t)
	ctx := ctxFor(t)
	p := newPool(t, c, "retry")
	pp, err := New(p, ProbeConfig{URL: "http://127.0.0.1:1/", Timeout: time.Second, Concurrency: 1}, assign.RestoreCurrentMinimum)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Add(ctx, 0, "http://10.0.0.1:3128", "http://10.0.0.2:3128"); err != nil {
		t.Fatal(err)
	}
	proxy := pp.proxyFunc()
	slot := &pickSlot{}
	req := httptest.NewRequest("GET", "http://example.test/", nil).WithContext(context.WithValue(ctx, slotKey{}, slot))
	first, err := proxy(req)
	if err != nil {
		t.Fatal(err)
	}
	again, err := proxy(req) // the transport's retry of the same request
	if err != nil || again.String() != first.String() {
		t.Fatalf("the retry went to %v (%v), want %v", again, err, first)
	}
	if cs := counts(t, p); cs["http://10.0.0.1:3128"]+cs["http://10.0.0.2:3128"] != 1 {
		t.Fatalf("counts %v after one request and its retry, want one assignment", cs)
	}
	// Without a slot (ProxyFunc used on its own) each call is a request.
	if _, err := proxy(httptest.NewRequest("GET", "http://example.test/", nil).WithContext(ctx)); err != nil {
		t.Fatal(err)
	}
	if cs := counts(t, p); cs["http://10.0.0.1:3128"]+cs["http://10.0.0.2:3128"] != 2 {
		t.Fatalf("counts %v, want two assignments", cs)
	}
}

// TestProbeConfigRefusals: a probe configuration out of range is refused
// with assign.ErrInvalid naming the field, and no URL's password shows.
func TestProbeConfigRefusals(t *testing.T) {
	for i, tc := range []struct {
		err  error
		want string
	}{
		{DefaultProbeConfig("ftp://x").Validate(), "probe URL \"ftp://x\": want an absolute http:// or https:// URL"},
		{DefaultProbeConfig("http://u:hunter2@127.0.0.1:99999/health").Validate(), `probe URL "http://xxxxx@127.0.0.1:99999/health": port 99999: want 1 to 65535`},
		{ProbeConfig{URL: "http://x/", Timeout: time.Hour, Concurrency: 1}.Validate(), "probe timeout 1h0m0s: want 10ms to 1m0s"},
		{ProbeConfig{URL: "http://x/", Timeout: time.Second, Concurrency: 0}.Validate(), "probe concurrency 0: want 1 to 1000"},
		{func() error { _, err := New(nil, DefaultProbeConfig("http://x/"), assign.RestoreZero); return err }(), "nil pool"},
		{func() error {
			_, err := New(&assign.Pool{}, DefaultProbeConfig("http://x/"), assign.RestorePolicy(7))
			return err
		}(), "restore policy 7"},
		{func() error {
			_, err := Probe(context.Background(), nil, ProbeConfig{URL: "http://x/"})
			return err
		}(), "probe timeout 0s"},
	} {
		if !errors.Is(tc.err, assign.ErrInvalid) || !strings.Contains(tc.err.Error(), tc.want) || !strings.HasPrefix(tc.err.Error(), "assign: invalid argument: ") {
			t.Errorf("step %d: %v, want assign.ErrInvalid saying %q", i, tc.err, tc.want)
		}
	}
}
