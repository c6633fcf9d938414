package assign_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/afloat/afloat/assign"
)

// A pool on a Redis server: add members at an agreed count, pick the least
// used, and handle an empty pool by making no request.
func Example() {
	c, err := assign.Dial("redis://127.0.0.1:6379")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()
	ctx := context.Background()
	p, _ := assign.New(c, "proxies")
	p.Add(ctx, 0, "http://10.0.0.1:3128", "http://10.0.0.2:3128")
	m, err := p.PickID(ctx, "order-1234") // a retry with this id returns the same member
	switch {
	case errors.Is(err, assign.ErrPoolEmpty):
		return // no eligible proxy: make no request
	case errors.Is(err, assign.ErrAmbiguous):
		m, err = p.PickID(ctx, "order-1234") // safe: counted once
	}
	fmt.Println(m, err)
}

// ParseProxyList reads a candidate list; bad lines are reported with their
// numbers, and the rest is kept.
func ExampleParseProxyList() {
	list := `# candidates
127.0.0.1:3128
socks5://user:secret@127.0.0.1:1080
127.0.0.1:99999
ftp://127.0.0.1:21
`
	proxies, bad, _ := assign.ParseProxyList(strings.NewReader(list))
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

func ExampleParseRestorePolicy() {
	for _, s := range []string{"current-minimum", "keep-history", "zero", "newest"} {
		p, err := assign.ParseRestorePolicy(s)
		fmt.Println(p, err)
	}
	// Output:
	// current-minimum <nil>
	// keep-history <nil>
	// zero <nil>
	// current-minimum assign: invalid argument: restore policy "newest": want current-minimum, keep-history, zero
}

// An http.Client that sends each request through the least-used healthy
// proxy of the pool.
func ExampleProxyPool_Transport() {
	c, err := assign.Dial("redis://127.0.0.1:6379")
	if err != nil {
		return
	}
	defer c.Close()
	ctx := context.Background()
	p, _ := assign.New(c, "proxies")
	pp, _ := assign.NewProxyPool(p, assign.DefaultProbeConfig("https://example.com/health"), assign.RestoreCurrentMinimum)
	proxies, _, _ := assign.ParseProxyList(strings.NewReader("127.0.0.1:3128\n127.0.0.1:3129\n"))
	pp.Import(proxies...)
	go pp.Run(ctx, 30*time.Second) // probes now, then every 30 s
	client := &http.Client{Transport: pp.Transport(nil)}
	resp, err := client.Get("https://example.com/")
	if errors.Is(err, assign.ErrPoolEmpty) {
		return // no healthy proxy: nothing was dialled
	}
	if err == nil {
		resp.Body.Close()
	}
}

// Least in flight: lease a member for the work, release it after.
func ExampleLeases() {
	c, err := assign.Dial("redis://127.0.0.1:6379")
	if err != nil {
		return
	}
	defer c.Close()
	ctx := context.Background()
	l, _ := assign.NewLeases(c, "workers")
	l.Add(ctx, "w1", "w2")
	lease, err := l.Acquire(ctx, 30*time.Second) // reclaimed by the server if not released by then
	if err != nil {
		return
	}
	defer l.Release(ctx, lease) // releasing twice is harmless
	fmt.Println("working on", lease.Member)
}
