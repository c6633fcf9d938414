package proxypool_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"strings"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/afloat/afloat/assign"
	"github.com/afloat/afloat/assign/proxypool"
)

// ParseList reads a candidate list; bad lines are reported with their
// numbers, and the rest is kept.
func ExampleParseList() {
	list := `# candidates
127.0.0.1:3128
socks5://user:secret@127.0.0.1:1080
127.0.0.1:99999
ftp://127.0.0.1:21
`
	proxies, bad, _ := proxypool.ParseList(strings.NewReader(list))
	for _, u := range proxies {
		fmt.Println(u.Redacted())
	}
	for _, b := range bad {
		fmt.Println(b)
	}
	// Output:
	// http://127.0.0.1:3128
	// socks5://user:xxxxx@127.0.0.1:1080
	// line 4: "127.0.0.1:99999": assign: invalid argument: proxy: port "99999": want 1 to 65535
	// line 5: "ftp://127.0.0.1:21": assign: invalid argument: proxy: scheme "ftp": want http, https or socks5
}

// An http.Client that sends each request through the least-used healthy
// proxy of the pool. Of the two candidates, one is a forward proxy on
// loopback and the other is down: a check lets only the first in. The
// pool is on an in-process Redis-compatible server (miniredis), so that
// the example runs anywhere; a service gives package assign its own
// client in the same way.
func ExamplePool_Transport() {
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "%s %s through a proxy", r.Method, r.URL.Path)
	}))
	defer backend.Close()
	proxy := httptest.NewServer(&httputil.ReverseProxy{Rewrite: func(*httputil.ProxyRequest) {}})
	defer proxy.Close()
	down := httptest.NewServer(http.NotFoundHandler())
	down.Close() // nothing listens there any more

	srv, err := miniredis.Run()
	if err != nil {
		panic(err)
	}
	defer srv.Close()
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr(), MaxRetries: -1})
	defer rdb.Close()
	c, _ := assign.FromGoRedis(rdb)
	ctx := context.Background()
	p, _ := assign.New(c, "proxies")
	probe := proxypool.DefaultProbeConfig(backend.URL + "/health")
	probe.Fall, probe.Rise = 1, 1 // one probe decides; the default damps flapping
	pp, _ := proxypool.New(p, probe, assign.RestoreCurrentMinimum)
	proxies, _, _ := proxypool.ParseList(strings.NewReader(proxy.URL + "\n" + down.URL + "\n"))
	pp.Import(proxies...)
	// A service runs go pp.Run(ctx, 30*time.Second): a check now, then
	// every 30 s. Here one check.
	rep, err := pp.Check(ctx)
	fmt.Println(len(rep.Joined), "of", len(rep.Health), "candidates joined", err)

	client := &http.Client{Transport: pp.Transport(nil)}
	resp, err := client.Get(backend.URL + "/orders")
	if errors.Is(err, assign.ErrPoolEmpty) {
		return // no healthy proxy: nothing was dialled
	}
	if err != nil {
		fmt.Println(err)
		return
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	fmt.Println(string(body))
	// Output:
	// 1 of 2 candidates joined <nil>
	// GET /orders through a proxy
}
