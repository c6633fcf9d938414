package agent

import (
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/afloat/afloat/quota/config"
	"github.com/afloat/afloat/quota/internal/opstest"
)

// upstream is a real HTTP server on loopback that counts what reaches it.
type upstream struct {
	*httptest.Server
	hits atomic.Int64
	mu   sync.Mutex
	last *http.Request
}

func newUpstream(t *testing.T) *upstream {
	u := &upstream{}
	u.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u.hits.Add(1)
		u.mu.Lock()
		u.last = r
		u.mu.Unlock()
		io.WriteString(w, "upstream "+r.URL.Path) //nolint:errcheck
	}))
	t.Cleanup(u.Close)
	return u
}

// TestProxyAnswers429: the reverse proxy in front of a real upstream on
// loopback admits exactly what the region's limiter admits — the
// upstream's count equals the admissions — and answers the rest 429 with
// Retry-After in whole seconds, rounded up; requests with no tenant of
// the region, 403.
func TestProxyAnswers429(t *testing.T) {
	clock := &fakeClock{}
	a := fixedAgent(t, fronted, clock)
	lease(t, a.Limiter(), a.now(), "acme", 1, 10, 40)
	up := newUpstream(t)
	h, err := a.ProxyHandler(up.URL + "/base")
	opstest.Must(t, err)
	front := httptest.NewServer(h)
	defer front.Close()

	get := func(host, path string, header ...string) (*http.Response, string) {
		t.Helper()
		req, err := http.NewRequest("GET", front.URL+path, nil)
		opstest.Must(t, err)
		req.Host = host
		for i := 0; i < len(header); i += 2 {
			req.Header.Add(header[i], header[i+1])
		}
		resp, err := front.Client().Do(req)
		opstest.Must(t, err)
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp, string(body)
	}
	admitted, refused := 0, 0
	tally := func(step int, resp *http.Response, body string, wantRetry string) {
		t.Helper()
		switch resp.StatusCode {
		case 200:
			admitted++
		case 429:
			refused++
			if ra := resp.Header.Get("Retry-After"); ra != wantRetry || !strings.HasPrefix(body, "quota: ") || len(body) > 200 {
				t.Fatalf("step %d: 429 with Retry-After %q, body %q; want %q and a short body", step, ra, body, wantRetry)
			}
		default:
			t.Fatalf("step %d: %d %s", step, resp.StatusCode, body)
		}
	}
	// 60 requests at one instant: the burst of 40 passes, 20 are refused;
	// a token comes back in 0.1 s: Retry-After 1.
	for i := range 60 {
		resp, body := get("api.acme.test:8443", "/items")
		tally(i, resp, body, "1")
		if i < 40 && (resp.StatusCode != 200 || body != "upstream /base/items") {
			t.Fatalf("step %d: %d %q, want the upstream's answer for /base/items", i, resp.StatusCode, body)
		}
	}
	if admitted != 40 || refused != 20 {
		t.Fatalf("admitted %d, refused %d; want 40 and 20", admitted, refused)
	}
	up.mu.Lock()
	if xff := up.last.Header.Get("X-Forwarded-For"); xff != "127.0.0.1" || up.last.Header.Get("X-Forwarded-Host") != "api.acme.test:8443" {
		t.Fatalf("forwarded headers: %v", up.last.Header)
	}
	up.mu.Unlock()
	// A second later: 10 tokens; /search costs 3: three pass, then 1 token
	// is short 2, 0.2 s: Retry-After 1.
	clock.advance(time.Second)
	for i := range 4 {
		resp, body := get("api.acme.test", "/search?q=x")
		tally(100+i, resp, body, "1")
	}
	if admitted != 43 || refused != 21 {
		t.Fatalf("admitted %d, refused %d; want 43 and 21", admitted, refused)
	}
	// 9 s later the bucket is full again: 40 of 100 pass (the host
	// matched without regard to case).
	clock.advance(9 * time.Second)
	for i := range 100 {
		resp, body := get("API.ACME.TEST", "/x")
		tally(200+i, resp, body, "1")
	}
	if admitted != 83 || refused != 81 {
		t.Fatalf("admitted %d, refused %d; want 83 and 81", admitted, refused)
	}
	// The header, for a tenant without a lease (globex): refused with the
	// retry policy; for tenants this region does not serve, or none, 403.
	resp, body := get("other.test", "/", "X-Tenant", "globex")
	if resp.StatusCode != 429 || resp.Header.Get("Retry-After") == "" || !strings.Contains(body, "holds no valid lease") {
		t.Fatalf("globex without a lease: %d %q %v", resp.StatusCode, body, resp.Header)
	}
	refused++
	for i, hdr := range [][]string{{"X-Tenant", "initech"}, {"X-Tenant", "mallory"}, nil, {"X-Tenant", "acme", "X-Tenant", "acme"}} {
		if resp, body := get("other.test", "/", hdr...); resp.StatusCode != 403 {
			t.Fatalf("step %d: %v: %d %q, want 403", i, hdr, resp.StatusCode, body)
		}
	}
	if got := up.hits.Load(); got != int64(admitted) {
		t.Fatalf("the upstream served %d, the proxy admitted %d", got, admitted)
	}
	t.Logf("admitted %d, refused %d", admitted, refused)
}

// TestProxyUpstreamDown: an upstream that does not answer gives 502, and
// says nothing of its address.
func TestProxyUpstreamDown(t *testing.T) {
	clock := &fakeClock{}
	a := fixedAgent(t, fronted, clock)
	lease(t, a.Limiter(), a.now(), "acme", 1, 10, 40)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	opstest.Must(t, err)
	dead := "http://" + ln.Addr().String()
	ln.Close()
	h, err := a.ProxyHandler(dead)
	opstest.Must(t, err)
	req := httptest.NewRequest("GET", "http://api.acme.test/x", nil)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != 502 || strings.Contains(rec.Body.String(), ln.Addr().String()) {
		t.Fatalf("%d %q", rec.Code, rec.Body.String())
	}
}

// TestCheckUpstream: --upstream's refusals name the flag and the rule,
// and never print a password.
func TestCheckUpstream(t *testing.T) {
	for i, tc := range []struct{ url, want string }{
		{"", "--upstream: empty"},
		{"ftp://host", `scheme "ftp": want http or https`},
		{"host:80", `scheme "host": want http or https`},
		{"http://", "no host"},
		{"http://:80", "no host"},
		{"http://user:hunter2@host", "user info"},
		{"http://host/?q=1", "a query or fragment"},
		{"http://host/#f", "a query or fragment"},
		{"http://host:0", "port 0: want 1 to 65535"},
		{"http://host:70000", "port 70000: want 1 to 65535"},
		{"http://hunter2@host:%zz", "not a URL"},
	} {
		_, err := CheckUpstream(tc.url)
		if !errors.Is(err, ErrOptions) || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "hunter2") {
			t.Errorf("step %d: CheckUpstream(%q) = %v, want one naming %q", i, tc.url, err, tc.want)
		}
	}
	for _, ok := range []string{"http://127.0.0.1:8080", "https://api.example/base/", "http://[::1]:9"} {
		if _, err := CheckUpstream(ok); err != nil {
			t.Errorf("CheckUpstream(%q): %v", ok, err)
		}
	}
}

// TestFrontsOptions: NewAgent refuses fronts it cannot run, naming the
// flag or the section.
func TestFrontsOptions(t *testing.T) {
	bare := opstest.MustConfig(t, good)
	full := opstest.MustConfig(t, fronted)
	for i, tc := range []struct {
		cfg  *config.Config
		o    Options
		want string
	}{
		{bare, Options{GRPCListen: "127.0.0.1:0"}, "--grpc-listen: the config has no envoy section"},
		{full, Options{GRPCListen: "0.0.0.0:9000"}, "--grpc-listen 0.0.0.0:9000: not a loopback address: set envoy.token"},
		{full, Options{GRPCListen: ":9000"}, "not a loopback address"},
		{bare, Options{Upstream: "http://127.0.0.1:1", ProxyListen: "127.0.0.1:0"}, "--upstream: the config has no proxy section"},
		{full, Options{ProxyListen: "127.0.0.1:0"}, "--proxy-listen: the proxy needs --upstream URL"},
		{full, Options{Upstream: "gopher://x", ProxyListen: "127.0.0.1:0"}, `scheme "gopher"`},
	} {
		o := tc.o
		o.Config, o.Name, o.Coordinators, o.Listen, o.Logger = tc.cfg, "eu", []string{"http://127.0.0.1:1"}, "127.0.0.1:0", opstest.QuietLog()
		if _, err := New(o); !errors.Is(err, ErrOptions) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("step %d: %v, want one naming %q", i, err, tc.want)
		}
	}
	withToken := opstest.MustConfig(t, strings.Replace(fronted, "domain: edge", "domain: edge\n  token: envoy-token-0123456789", 1))
	if _, err := New(Options{Config: withToken, Name: "eu", Coordinators: []string{"127.0.0.1:1"}, Listen: "127.0.0.1:0",
		Logger: opstest.QuietLog(), GRPCListen: "0.0.0.0:0"}); err != nil {
		t.Fatalf("a token allows any address: %v", err)
	}
	a, err := New(Options{Config: full, Name: "eu", Coordinators: []string{"127.0.0.1:1"}, Listen: "127.0.0.1:0",
		Logger: opstest.QuietLog(), Upstream: "http://127.0.0.1:1"})
	if err != nil || a.o.ProxyListen != DefaultProxyListen {
		t.Fatalf("an upstream without --proxy-listen: %v; want the proxy on %s", err, DefaultProxyListen)
	}
}
