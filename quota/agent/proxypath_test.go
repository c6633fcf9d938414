package agent

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/afloat/afloat/quota"
	"github.com/afloat/afloat/quota/internal/opstest"
)

const pricedConfig = `
regions:
  eu: {token: "eu-token-0123456789"}
tenants:
  - {name: acme, rate: 1, burst: 100000, costs: {/export: 100, /Admin/: 50, "": 2}}
proxy:
  routes:
    - {host: api.acme.test, path_prefix: /SEARCH, tenant: acme, endpoint: /export}
    - {host: api.acme.test, tenant: acme}
`

// rawGet sends target as the request line's target, byte for byte (a
// client would clean or escape it), and returns the answer's status.
func rawGet(t *testing.T, addr, host, target string) int {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	opstest.Must(t, err)
	defer c.Close()
	fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", target, host)
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	opstest.Must(t, err)
	resp.Body.Close()
	return resp.StatusCode
}

// TestProxyPricesCanonicalPath: the proxy prices the path the upstream
// serves. //export, /./export, /x/../export, /EXPORT and the rest cost
// what /export costs (they cost 1 token, the default, where /export costs
// 100) and reach the upstream as the path priced; /%2Fexport and other
// paths that cannot be read one way only are refused with 400, spending
// nothing and reaching nothing.
func TestProxyPricesCanonicalPath(t *testing.T) {
	clock := &fakeClock{}
	a := fixedAgent(t, pricedConfig, clock)
	lease(t, a.Limiter(), a.now(), "acme", 1, 1, 100000)
	up := newUpstream(t)
	h, err := a.ProxyHandler(up.URL + "/base")
	opstest.Must(t, err)
	front := &http.Server{Handler: h}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	opstest.Must(t, err)
	go front.Serve(ln) //nolint:errcheck
	defer front.Close()

	balance := func() quota.Micro { return a.Limiter().Status(a.now(), "acme").Balance }
	for i, c := range []struct {
		target string
		code   int
		cost   int64
		path   string // what the upstream reads, decoded once
	}{
		{"/export", 200, 100, "/base/export"},
		{"//export", 200, 100, "/base/export"},
		{"/./export", 200, 100, "/base/export"},
		{"/x/../export", 200, 100, "/base/export"},
		{"/EXPORT", 200, 100, "/base/EXPORT"},
		{"/export/", 200, 100, "/base/export/"},
		{"/%65xport", 200, 100, "/base/export"},
		{"/%2e%2e/export", 200, 100, "/base/export"},
		{"/a/%2E/../../export", 200, 100, "/base/export"},
		{"/export?x=1", 200, 100, "/base/export"},
		{"http://api.acme.test//export", 200, 100, "/base/export"},
		{"/admin", 200, 50, "/base/admin"},
		{"/search/x", 200, 100, "/base/search/x"}, // the route's endpoint, the prefix matched without case
		{"/%2565xport", 200, 2, "/base/%65xport"}, // decoded once: not /export, and not so upstream
		{"/other", 200, 2, "/base/other"},
		{"/%2Fexport", 400, 0, ""},
		{"/%2fexport", 400, 0, ""},
		{"/x%2F..%2Fexport", 400, 0, ""},
		{"/export;jsessionid=1", 400, 0, ""},
		{"/export%3B", 400, 0, ""},
		{`/\export`, 400, 0, ""},
		{"/%5Cexport", 400, 0, ""},
		{"/export%00", 400, 0, ""},
		{"/export%0A", 400, 0, ""},
	} {
		before, hits := balance(), up.hits.Load()
		code := rawGet(t, ln.Addr().String(), "api.acme.test", c.target)
		spent := before - balance()
		if code != c.code || spent != quota.Tokens(float64(c.cost)) {
			t.Errorf("step %d: GET %s: %d, spent %v; want %d and %d tokens", i, c.target, code, spent, c.code, c.cost)
			continue
		}
		if c.code != 200 {
			if up.hits.Load() != hits {
				t.Errorf("step %d: GET %s: refused, yet the upstream was called", i, c.target)
			}
			continue
		}
		up.mu.Lock()
		got, err := url.PathUnescape(up.last.URL.EscapedPath())
		raw := up.last.RequestURI
		up.mu.Unlock()
		if err != nil || got != c.path {
			t.Errorf("step %d: GET %s: the upstream read %q (request URI %q), want %q", i, c.target, got, raw, c.path)
		}
	}
}

// TestCanonicalPath: the canonical forms, and the refusals' words.
func TestCanonicalPath(t *testing.T) {
	for i, c := range []struct{ in, want, err string }{
		{"", "/", ""},
		{"/", "/", ""},
		{"//", "/", ""},
		{"/a//b/./c/../d/", "/a/b/d/", ""},
		{"/../..", "/", ""},
		{"/%41", "/A", ""},
		{"/%25", "/%", ""},
		{"/a%20b", "/a b", ""},
		{"*", "", "want a path starting with /"},
		{"a/b", "", "want a path starting with /"},
		{"/%2F", "", "an encoded slash"},
		{"/a%5cb", "", "a backslash"},
		{"/a;b", "", "a semicolon"},
		{"/%zz", "", "malformed percent-encoding"},
		{"/%7F", "", "a control character"},
	} {
		got, err := canonicalPath(c.in)
		if got != c.want || (err == nil) != (c.err == "") || (err != nil && !strings.Contains(err.Error(), c.err)) {
			t.Errorf("step %d: canonicalPath(%q) = %q, %v; want %q, %q", i, c.in, got, err, c.want, c.err)
		}
	}
}

// FuzzCanonicalPath: no escaped path panics; a canonical path is clean,
// starts with a slash and is its own canonical form once escaped as the
// proxy forwards it; the upstream, decoding what it is sent once, reads
// exactly the path that was priced; and the price of a path does not
// depend on how it was written (case, a trailing slash, dot segments,
// escapes of unreserved letters).
func FuzzCanonicalPath(f *testing.F) {
	for _, s := range []string{"/export", "//export", "/./export", "/x/../export", "/%2Fexport", "/EXPORT",
		"/%2565xport", "/a%20b/", "/%zz", "/export;x", `/\x`, "/%C3%A9", "/\xff", "", "*"} {
		f.Add(s)
	}
	tn := quota.Tenant{Name: "acme", Costs: map[string]int64{"/export": 100, "/a/B/": 7, "": 2}}
	var pc pathCosts
	f.Fuzz(func(t *testing.T, escaped string) {
		c, err := canonicalPath(escaped)
		if err != nil {
			if c != "" {
				t.Fatalf("canonicalPath(%q) = %q with error %v", escaped, c, err)
			}
			return
		}
		if c == "" || c[0] != '/' || strings.Contains(c, "//") || strings.Contains(c, "/./") || strings.Contains(c, "/../") ||
			strings.HasSuffix(c, "/.") || strings.HasSuffix(c, "/..") {
			t.Fatalf("canonicalPath(%q) = %q: not clean", escaped, c)
		}
		fwd := (&url.URL{Path: c}).EscapedPath()
		again, err := canonicalPath(fwd)
		if err != nil || again != c {
			t.Fatalf("canonicalPath(%q) = %q, sent as %q, whose canonical form is %q, %v", escaped, c, fwd, again, err)
		}
		read, err := forwardedPath(c)
		if err != nil || read != c {
			t.Fatalf("canonicalPath(%q) = %q, priced; the upstream reads %q, %v", escaped, c, read, err)
		}
		// The same endpoint written otherwise costs the same.
		price := pc.cost(tn, c)
		for _, variant := range []string{strings.ToUpper(c), strings.ToLower(c), c + "/", "/." + c, "/x/.." + c} {
			v, err := canonicalPath((&url.URL{Path: variant}).EscapedPath())
			if err != nil {
				continue // an upper-cased escape may spell a refused byte
			}
			if p := pc.cost(tn, v); p != price {
				t.Fatalf("%q costs %d, %q (as %q) costs %d", c, price, variant, v, p)
			}
		}
	})
}

// TestCheckUpstreamHidesQuerySecrets: an --upstream with a token in its
// query or fragment is refused without quoting it.
func TestCheckUpstreamHidesQuerySecrets(t *testing.T) {
	for i, u := range []string{"http://host/?token=hunter2", "http://host/#hunter2", "https://u:hunter2@host/?access_token=hunter2"} {
		_, err := CheckUpstream(u)
		if err == nil || strings.Contains(err.Error(), "hunter2") {
			t.Errorf("step %d: CheckUpstream(%q) = %v: want a refusal without the secret", i, u, err)
		}
	}
}
