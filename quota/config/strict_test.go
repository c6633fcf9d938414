package config

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/afloat/afloat/quota"
	"github.com/afloat/afloat/quota/coordinator"
)

// TestConfigNumbersMeanWhatTheySay: the config file refuses what its YAML
// decoder read leniently — a fraction or 1e-400 in an integer field (read
// as 2 and as 0), 1e-400 in a float field, null for a number — and a
// given zero means zero where zero is in range (skew_margin, floor) and
// is refused where it is not (lease_duration), never the default.
func TestConfigNumbersMeanWhatTheySay(t *testing.T) {
	with := func(fields string) string {
		return strings.Replace(good, "{name: acme,", "{name: acme, "+fields+",", 1)
	}
	for i, tc := range []struct{ file, want string }{
		{good + "etcd: {session_ttl: 2.5}\n", `etcd.session_ttl "2.5": want a whole number`},
		{good + "etcd: {session_ttl: 1e-400}\n", `etcd.session_ttl "1e-400": want a whole number`},
		{good + "etcd: {max_txn_ops: 100.0}\n", `etcd.max_txn_ops "100.0": want a whole number`},
		{with("costs: {/x: 1e-400}"), `tenants[0].costs./x "1e-400": want a whole number`},
		{with("costs: {/x: 2.5}"), `tenants[0].costs./x "2.5": want a whole number`},
		{with("costs: {/x: 2.0e0}"), `tenants[0].costs./x "2.0e0": want a whole number`},
		{with("floor: 1e-400"), `tenants[0].floor "1e-400": too small to hold`},
		{with("emergency: 1e-400, mode: best-effort"), `tenants[0].emergency "1e-400": too small`},
		{strings.Replace(good, "rate: 500", "rate: ~", 1), "tenants[0].rate null: want a number"},
		{with("floor: null"), "tenants[0].floor null: want a number"},
		{with("skew_margin: ~"), "tenants[0].skew_margin null: want a duration"},
		{good + "etcd: {session_ttl: null}\n", "etcd.session_ttl null: want a whole number"},
		{with("lease_duration: 0s"), "tenants[0].lease_duration 0s: want 100ms to 1h (leave it out for the default, 10s)"},
		{with("lease_duration: -1s"), "tenants[0].lease_duration -1s: want 100ms to 1h"},
		{with("skew_margin: -1ns"), "tenants[0].skew_margin -1ns: want 0"},
		{with("floor: -1"), "tenants[0].floor -1: want 0 to 0.5/regions"},
		{with("lease_duration: 1s, skew_margin: 500ms"), "skew margin 500ms: want 0 (NoSkewMargin) to less than half the lease duration"},
		{with("floor: 0.3"), "floor 0.3: want 0 (NoFloor) to 0.5/regions"},
	} {
		_, err := ParseConfig([]byte(tc.file))
		if !errors.Is(err, ErrConfigFile) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("step %d: %v, want ErrConfigFile naming %q", i, err, tc.want)
		}
	}
	// What the file says is what the coordinator grants and shares out: a
	// margin of zero, and no floor (an idle region keeps nothing).
	for i, tc := range []struct {
		fields        string
		lease, margin time.Duration
		floor         bool
	}{
		{"skew_margin: 0s, floor: 0", quota.DefaultLeaseDuration, 0, false},
		{"skew_margin: 0s", quota.DefaultLeaseDuration, 0, true},
		{"floor: 0.0", quota.DefaultLeaseDuration, quota.DefaultSkewMargin, false},
		{"lease_duration: 2s, skew_margin: 250ms, floor: 0.1", 2 * time.Second, 250 * time.Millisecond, true},
		{"costs: {/x: 2}", quota.DefaultLeaseDuration, quota.DefaultSkewMargin, true},
	} {
		cfg, err := ParseConfig([]byte(with(tc.fields)))
		if err != nil {
			t.Errorf("step %d: %s: %v", i, tc.fields, err)
			continue
		}
		g := grantOf(t, cfg.QuotaTenants())
		if g.ValidFor != tc.lease || g.Margin != tc.margin {
			t.Errorf("step %d: %s: granted for %v with margin %v; want %v and %v", i, tc.fields, g.ValidFor, g.Margin, tc.lease, tc.margin)
		}
		shares := quota.Allocate(cfg.QuotaTenants()[0], map[string]quota.Micro{"eu": 500 * quota.One}, nil)
		if us := shares["us"]; (us.Rate > 0) != tc.floor {
			t.Errorf("step %d: %s: the idle region us keeps %+v; want a floor: %v", i, tc.fields, us, tc.floor)
		}
	}
}

// grantOf is the grant a coordinator of tenants gives eu's first request
// for the first tenant.
func grantOf(t *testing.T, tenants []quota.Tenant) quota.Grant {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	srv, err := coordinator.NewServer(ctx, coordinator.Config{Tenants: tenants}, coordinator.NewMemLedger())
	must(t, err)
	go srv.Run(ctx) //nolint:errcheck
	g, err := srv.Renew(ctx, quota.Request{Tenant: tenants[0].Name, Region: "eu", Seq: 1})
	must(t, err)
	return g
}
