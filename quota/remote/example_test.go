package remote_test

import (
	"context"
	"fmt"
	"net/http/httptest"

	"github.com/afloat/afloat/quota"
	"github.com/afloat/afloat/quota/coordinator"
	"github.com/afloat/afloat/quota/remote"
)

// A coordinator behind the API, and a region renewing through a client.
func Example() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	tenant := quota.Tenant{Name: "acme", Rate: 500 * quota.One, Burst: 6000 * quota.One, Regions: []string{"eu", "us"}}
	srv, err := coordinator.NewServer(ctx, coordinator.Config{Tenants: []quota.Tenant{tenant}}, coordinator.NewMemLedger())
	if err != nil {
		panic(err)
	}
	go srv.Run(ctx)
	h, err := remote.Handler(remote.HandlerConfig{
		Tokens: map[string]string{"eu": "eu-secret-0123456789", "us": "us-secret-0123456789"},
		Lead:   func() (remote.Backend, string) { return srv, "" },
	})
	if err != nil {
		panic(err)
	}
	hs := httptest.NewServer(h)
	defer hs.Close()

	c, err := remote.NewClient(remote.ClientConfig{Endpoints: []string{hs.URL}, Region: "eu", Token: "eu-secret-0123456789"})
	if err != nil {
		panic(err)
	}
	g, err := c.Renew(ctx, quota.Request{Tenant: "acme", Region: "eu", Seq: 1, Demand: -1})
	if err != nil {
		panic(err)
	}
	fmt.Printf("lease %d: %v tokens/s, burst %v, for %v\n", g.Lease.ID, g.Lease.Rate, g.Lease.Burst, g.ValidFor)
	// Output: lease 1: 250 tokens/s, burst 3000, for 10s
}

// Endpoints as an operator types them, in one form.
func ExampleParseEndpoints() {
	urls, err := remote.ParseEndpoints("--coordinator", []string{"127.0.0.1:7070", "https://quota.internal:7443/"})
	fmt.Println(urls, err)
	_, err = remote.ParseEndpoints("--coordinator", []string{"127.0.0.1:70000"})
	fmt.Println(err)
	// Output:
	// [http://127.0.0.1:7070 https://quota.internal:7443] <nil>
	// remote: invalid endpoint: --coordinator: "http://127.0.0.1:70000": want a port from 1 to 65535
}
