package remote_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"sync/atomic"
	"testing"
	"time"

	"github.com/afloat/afloat/quota"
	"github.com/afloat/afloat/quota/remote"
)

// TestRegionTenants: GET /v1/region/tenants lists the tenants whose
// regions include the token's region, as the coordinator has them now
// (created and deleted while it runs), through a follower too; a wrong
// token is refused.
func TestRegionTenants(t *testing.T) {
	hs, srv, _ := served(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	beta := quota.Tenant{Name: "beta", Rate: 10 * quota.One, Burst: 100 * quota.One, Regions: []string{"eu"}, Costs: map[string]int64{"/x": 3}}
	gamma := quota.Tenant{Name: "gamma", Rate: 10 * quota.One, Burst: 100 * quota.One, Regions: []string{"us"}}
	for _, tn := range []quota.Tenant{beta, gamma} {
		if _, err := srv.PutTenant(ctx, tn, "ops", true, 0); err != nil {
			t.Fatal(err)
		}
	}
	fh, err := remote.Handler(remote.HandlerConfig{Tokens: tokens, Lead: func() (remote.Backend, string) { return nil, hs.URL }})
	if err != nil {
		t.Fatal(err)
	}
	follower := httptest.NewServer(fh)
	defer follower.Close()
	client := func(region, token string) *remote.Client {
		c, err := remote.NewClient(remote.ClientConfig{Endpoints: []string{follower.URL, hs.URL}, Region: region, Token: token})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	names := func(c *remote.Client) []remote.RegionTenant {
		t.Helper()
		ans, changed, err := c.Tenants(ctx, "")
		if err != nil {
			t.Fatal(err)
		}
		if ans.Epoch != srv.Epoch() || !changed {
			t.Fatalf("epoch %d (changed %v), want %d", ans.Epoch, changed, srv.Epoch())
		}
		// Asked again with the version it got: not modified, no list.
		again, changed, err := c.Tenants(ctx, ans.Version)
		if err != nil || changed || again.Tenants != nil {
			t.Fatalf("asked again with version %q: %+v, changed %v, %v; want not modified", ans.Version, again, changed, err)
		}
		return ans.Tenants
	}
	eu, us := client("eu", tokens["eu"]), client("us", tokens["us"])
	want := []remote.RegionTenant{{Name: "acme", Version: 1}, {Name: "beta", Version: 1, Costs: map[string]int64{"/x": 3}}}
	if got := names(eu); !reflect.DeepEqual(got, want) {
		t.Fatalf("eu's tenants %+v, want %+v", got, want)
	}
	if got := names(us); !reflect.DeepEqual(got, []remote.RegionTenant{{Name: "acme", Version: 1}, {Name: "gamma", Version: 1}}) {
		t.Fatalf("us's tenants %+v, want acme and gamma", got)
	}
	if err := srv.DeleteTenant(ctx, "beta", "ops", 0); err != nil {
		t.Fatal(err)
	}
	if got := names(eu); !reflect.DeepEqual(got, want[:1]) {
		t.Fatalf("eu's tenants after deleting beta %+v, want %+v", got, want[:1])
	}
	// A version from before the delete: the list again.
	if ans, changed, err := eu.Tenants(ctx, fmt.Sprintf("%d.0", srv.Epoch())); err != nil || !changed || len(ans.Tenants) != 1 {
		t.Fatalf("asked with a stale version: %+v, changed %v, %v; want the list", ans, changed, err)
	}
	if _, _, err := client("eu", "eu-token-wrong-000000").Tenants(ctx, ""); !errors.Is(err, remote.ErrUnauthorized) {
		t.Fatalf("a wrong token: %v, want ErrUnauthorized", err)
	}
	// The region is the token's: us's token asking as eu gets us's list,
	// which the client refuses.
	if _, _, err := client("eu", tokens["us"]).Tenants(ctx, ""); err == nil {
		t.Fatal("an answer for us taken as eu's")
	}
	resp, _ := post(t, hs.URL+"/v1/region/tenants", tokens["eu"], `{}`)
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Fatalf("POST /v1/region/tenants: %d, want 405", resp.StatusCode)
	}
}

// FuzzRegionTenantsAnswer: whatever a coordinator answers, the client's
// Tenants returns an error or a list of this region's with distinct,
// named tenants.
func FuzzRegionTenantsAnswer(f *testing.F) {
	f.Add([]byte(`{"epoch":1,"region":"eu","tenants":[{"name":"acme","version":2,"costs":{"/x":3}}]}`))
	f.Add([]byte(`{"epoch":1,"region":"eu","tenants":[{"name":"acme"},{"name":"acme"}]}`))
	f.Add([]byte(`{"epoch":1,"region":"us","tenants":[]}`))
	f.Add([]byte(`{"region":"eu","tenants":[{"name":""}]}`))
	f.Add([]byte(`[`))
	var body atomic.Pointer[[]byte]
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write(*body.Load()) //nolint:errcheck
	}))
	defer hs.Close()
	c, err := remote.NewClient(remote.ClientConfig{Endpoints: []string{hs.URL}, Region: "eu", Token: tokens["eu"]})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		body.Store(&b)
		ans, _, err := c.Tenants(context.Background(), "")
		if err != nil {
			return
		}
		if ans.Region != "eu" {
			t.Fatalf("answer for %q taken", ans.Region)
		}
		seen := map[string]bool{}
		for _, tn := range ans.Tenants {
			if tn.Name == "" || seen[tn.Name] {
				t.Fatalf("tenant %q empty or twice taken", tn.Name)
			}
			seen[tn.Name] = true
		}
	})
}
