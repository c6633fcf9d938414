package agent

import (
	"io"
	"log/slog"
	"slices"
	"testing"

	"github.com/afloat/afloat/quota/config"
	"github.com/afloat/afloat/quota/remote"
)

// TestAgentAppliesTenants: an agent whose region no tenant of its file
// enters starts with none; each list applied becomes the limiter's set
// and the cost map at once, and a list the limiter refuses changes
// nothing.
func TestAgentAppliesTenants(t *testing.T) {
	cfg, err := config.ParseConfig([]byte(`
regions:
  eu: {token: "eu-token-0123456789"}
  us: {token: "us-token-0123456789"}
tenants:
  - {name: acme, rate: 10, burst: 20, regions: [eu]}
`))
	if err != nil {
		t.Fatal(err)
	}
	a, err := New(Options{Config: cfg, Name: "us", Coordinators: []string{"127.0.0.1:1"}, Listen: "127.0.0.1:0", Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatalf("an agent for a region no file tenant enters: %v", err)
	}
	if n := len(a.lim.Tenants()); n != 0 {
		t.Fatalf("us serves %d tenants from the file, want 0", n)
	}
	a.applyTenants([]remote.RegionTenant{{Name: "beta", Version: 1, Costs: map[string]int64{"/big": 5}}, {Name: "gamma", Version: 3}})
	if got := a.lim.Tenants(); !slices.Equal(got, []string{"beta", "gamma"}) {
		t.Fatalf("limiter serves %v, want [beta gamma]", got)
	}
	if tn, ok := a.tenant("beta"); !ok || tn.Cost("/big") != 5 || tn.Cost("/") != 1 {
		t.Fatalf("beta's costs: %+v %v", tn, ok)
	}
	a.applyTenants([]remote.RegionTenant{{Name: "gamma", Version: 4}, {Name: "gamma", Version: 4}}) // refused: twice
	if got := a.lim.Tenants(); !slices.Equal(got, []string{"beta", "gamma"}) {
		t.Fatalf("after a refused list the limiter serves %v, want [beta gamma]", got)
	}
	if _, ok := a.tenant("beta"); !ok {
		t.Fatal("a refused list dropped beta's costs")
	}
	a.applyTenants(nil)
	if _, ok := a.tenant("gamma"); ok || len(a.lim.Tenants()) != 0 {
		t.Fatalf("after an empty list: limiter %v", a.lim.Tenants())
	}
}
