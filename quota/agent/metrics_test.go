//go:build embedetcd

package agent_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/afloat/afloat/quota/agent"
	"github.com/afloat/afloat/quota/coordinator/replica"
	"github.com/afloat/afloat/quota/internal/opstest"
	"github.com/afloat/afloat/quota/servicetest"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// TestMetricsAndHealth scrapes a region agent and two coordinator
// replicas on an embedded etcd member, all on loopback: /healthz and
// /readyz before the region has a lease, with a leader and a follower,
// after the lease, and after the leader steps down; each named metric
// with a value that can be checked — the admission counters equal what
// the decision API answered, exactly, in acme's own series (named by
// --metrics-tenants) and in the sums over the tenants; the leader's
// epoch is the election's revision in etcd.
func TestMetricsAndHealth(t *testing.T) {
	c := servicetest.New(t, opstest.ConfigFile("metrics.yaml"))
	cfg := c.Config
	cfg.Etcd.SessionTTL = 1
	cfg.Etcd.Prefix = "/metrics-test/"
	ctx := t.Context()

	// The region first, with no coordinator listening yet: alive, not ready.
	coordAddrs := []string{opstest.FreeAddr(t), opstest.FreeAddr(t)}
	region := c.Agent(agent.Options{Name: "eu", Coordinators: []string{"http://" + coordAddrs[0], "http://" + coordAddrs[1]},
		MetricsTenants: []string{"acme", "beta"}}, nil).URL
	if code := opstest.Healthz(t, region); code != 200 {
		t.Fatalf("region /healthz before a lease: %d", code)
	}
	if code, rd := opstest.Readyz(t, region); code != 503 || rd.Ready || rd.Missing != 2 || strings.Join(rd.Waiting, ",") != "acme,beta" {
		t.Fatalf("region /readyz before a lease: %d %+v, want 503 waiting for acme and beta", code, rd)
	}
	allowed, refused := 0, 0
	allow := func(tenant string) bool {
		t.Helper()
		resp, err := http.Post(region+"/v1/allow", "application/json", strings.NewReader(`{"tenant":"`+tenant+`"}`))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var ans agent.AllowAnswer
		if err := json.NewDecoder(resp.Body).Decode(&ans); err != nil || resp.StatusCode != 200 {
			t.Fatalf("allow: %d %v", resp.StatusCode, err)
		}
		if ans.Allowed {
			allowed++
		} else {
			refused++
		}
		return ans.Allowed
	}
	// Refused before any lease: no_lease.
	for range 7 {
		if allow("acme") {
			t.Fatal("admitted before any lease")
		}
	}
	s := opstest.Scrape(t, region)
	if v := s.Must(t, "afloat_quota_region_tenant_refused_tokens_total", "tenant", "acme", "reason", "no_lease"); v != 7 {
		t.Fatalf("refused no_lease before a lease: %v, want 7", v)
	}
	if v := s.Must(t, "afloat_quota_region_refused_tokens_total", "reason", "no_lease"); v != 7 {
		t.Fatalf("refused no_lease summed before a lease: %v, want 7", v)
	}
	if v := s.Must(t, "afloat_quota_region_tenant_lease_valid", "tenant", "acme", "region", "eu"); v != 0 {
		t.Fatalf("lease_valid before a lease: %v", v)
	}
	if v := s.Must(t, "afloat_quota_region_tenants", "state", "none", "region", "eu"); v != 2 {
		t.Fatalf("tenants without a lease before a lease: %v, want 2", v)
	}

	// The region's calls fail as a whole while no coordinator listens.
	opstest.WaitFor(t, "a renewal call failed unavailable", func() bool {
		v, _ := opstest.Scrape(t, region).Value("afloat_quota_region_batch_failures_total", "reason", "unavailable")
		return v >= 1
	})
	if v := opstest.Scrape(t, region).Must(t, "afloat_quota_region_renewals_total", "result", "failed"); v < 2 {
		t.Fatalf("renewals failed with no coordinator: %v, want both tenants' at least", v)
	}

	// Two coordinators on the member.
	coords := make([]string, 2)
	procs := make([]*servicetest.Process, 2)
	for i, addr := range coordAddrs {
		procs[i] = c.Coordinator(replica.Options{Listen: addr, MetricsTenants: []string{"acme", "beta"}})
		coords[i] = procs[i].URL
	}
	// One leads, the other follows and knows the leader: both ready.
	lead := -1
	opstest.WaitFor(t, "a leader and a follower that knows it", func() bool {
		c0, r0 := opstest.Readyz(t, coords[0])
		c1, r1 := opstest.Readyz(t, coords[1])
		switch {
		case c0 == 200 && r0.Role == "leader" && c1 == 200 && r1.Role == "follower" && r1.Leader == coords[0]:
			lead = 0
		case c1 == 200 && r1.Role == "leader" && c0 == 200 && r0.Role == "follower" && r0.Leader == coords[1]:
			lead = 1
		}
		return lead >= 0
	})
	follow := 1 - lead
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{c.Etcd()}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	election := func() int64 {
		t.Helper()
		resp, err := cli.Get(ctx, cfg.Etcd.Prefix+"election/", clientv3.WithFirstCreate()...)
		if err != nil || len(resp.Kvs) == 0 {
			t.Fatalf("the election in etcd: %v", err)
		}
		return resp.Kvs[0].CreateRevision
	}
	ls, fs := opstest.Scrape(t, coords[lead]), opstest.Scrape(t, coords[follow])
	if v := ls.Must(t, "afloat_quota_coordinator_leader"); v != 1 {
		t.Fatalf("leader gauge on the leader: %v", v)
	}
	if v := ls.Must(t, "afloat_quota_coordinator_epoch"); v != float64(election()) {
		t.Fatalf("the leader's epoch %v, want the election key's create revision %d", v, election())
	}
	if v := fs.Must(t, "afloat_quota_coordinator_leader"); v != 0 {
		t.Fatalf("leader gauge on the follower: %v", v)
	}
	if v := fs.Must(t, "afloat_quota_coordinator_epoch"); v != 0 {
		t.Fatalf("epoch on the follower: %v", v)
	}
	if _, ok := fs.Value("afloat_quota_coordinator_share_rate_tokens_per_second"); ok {
		t.Fatal("a follower reports shares")
	}
	if _, ok := fs.Value("afloat_quota_coordinator_tenants"); ok {
		t.Fatal("a follower reports tenants")
	}

	// The region gets its leases: ready.
	opstest.WaitFor(t, "region ready", func() bool { c, _ := opstest.Readyz(t, region); return c == 200 })
	// Requests until some are admitted and some refused (R = 10/s, B = 20:
	// the first lease starts empty, and 60 quick requests outrun the refill).
	for range 60 {
		allow("acme")
	}
	opstest.WaitFor(t, "an admission", func() bool { return allow("acme") })
	for range 20 {
		allow("acme")
	}
	s = opstest.Scrape(t, region)
	// acme alone had requests: its own series and the sums agree.
	for _, own := range []bool{true, false} {
		name, labels := "afloat_quota_region_", []string{"tenant", "acme"}
		if own {
			name += "tenant_"
		} else {
			labels = nil
		}
		value := func(metric, reason string) float64 {
			return s.Must(t, name+metric, append(labels, "reason", reason)...)
		}
		adm := value("admitted_tokens_total", "lease")
		ref := value("refused_tokens_total", "exhausted") + value("refused_tokens_total", "no_lease")
		if adm != float64(allowed) || ref != float64(refused) {
			t.Fatalf("%s…: admitted %v and refused %v, want %d and %d (what the decision API answered)", name, adm, ref, allowed, refused)
		}
		if allowed == 0 || value("refused_tokens_total", "exhausted") == 0 {
			t.Fatalf("%d admitted, want some, and some refused under the lease", allowed)
		}
		if v := value("admitted_tokens_total", "emergency"); v != 0 {
			t.Fatalf("%s…: emergency admissions in hard mode: %v", name, v)
		}
	}
	if v := s.Must(t, "afloat_quota_region_tenants", "state", "valid", "region", "eu"); v != 2 {
		t.Fatalf("tenants with a valid lease: %v, want 2", v)
	}
	for _, tc := range []struct {
		name, tenant string
		lo, hi       float64
	}{
		{"afloat_quota_region_tenant_lease_valid", "acme", 1, 1},
		{"afloat_quota_region_tenant_lease_rate_tokens_per_second", "acme", 10, 10}, // the only region: all of R
		{"afloat_quota_region_tenant_lease_burst_tokens", "acme", 20, 20},
		{"afloat_quota_region_tenant_lease_remaining_seconds", "acme", 0.1, 10},
		{"afloat_quota_region_tenant_balance_tokens", "acme", 0, 20},
		{"afloat_quota_region_tenant_emergency_allowance_tokens", "acme", 0, 0},
		{"afloat_quota_region_tenant_emergency_allowance_tokens", "beta", 5, 5},
		{"afloat_quota_region_tenant_emergency_in_use_tokens", "beta", 0, 0},
	} {
		if v := s.Must(t, tc.name, "tenant", tc.tenant, "region", "eu"); v < tc.lo || v > tc.hi {
			t.Errorf("%s{tenant=%s} = %v, want %v to %v", tc.name, tc.tenant, v, tc.lo, tc.hi)
		}
	}
	if v := s.Must(t, "afloat_quota_region_unknown_tenant_requests_total"); v != 0 {
		t.Errorf("unknown tenant requests: %v", v)
	}
	installed := s.Must(t, "afloat_quota_region_grants_total", "outcome", "accepted")
	renewals := s.Must(t, "afloat_quota_region_renewal_duration_seconds", "result", "granted")
	if installed < 2 || renewals < installed {
		t.Errorf("%v grants installed, %v renewals timed: want 2 or more, and at least as many renewals", installed, renewals)
	}
	if granted := s.Must(t, "afloat_quota_region_renewals_total", "result", "granted"); granted < installed {
		t.Errorf("%v renewals granted, %v grants installed: want at least as many granted", granted, installed)
	}
	if v := s.Must(t, "afloat_quota_region_batches_total", "call", "renew"); v < 1 {
		t.Errorf("renewal calls sent: %v, want 1 or more", v)
	}
	if calls := s.Must(t, "afloat_quota_region_batch_requests", "call", "renew"); calls < 1 || s.HistSum("afloat_quota_region_batch_requests", "call", "renew") < renewals {
		t.Errorf("%v renewal calls carrying %v requests, want 1 or more carrying the %v renewals timed", calls,
			s.HistSum("afloat_quota_region_batch_requests", "call", "renew"), renewals)
	}
	if sum := s.HistSum("afloat_quota_region_renewal_duration_seconds", "result", "granted"); sum <= 0 || sum > renewals*10 {
		t.Errorf("renewal latency sum %v s over %v renewals", sum, renewals)
	}

	// The leader's view of the same lease, and its writes: the tenants'
	// own series and the sums over them.
	ls = opstest.Scrape(t, coords[lead])
	for _, tc := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"afloat_quota_coordinator_tenants", nil, 2},
		{"afloat_quota_coordinator_rate_tokens_per_second", nil, 10 + 100},
		{"afloat_quota_coordinator_burst_tokens", nil, 20 + 100},
		{"afloat_quota_coordinator_region_tenants", []string{"region", "eu", "state", "leased"}, 2},
		{"afloat_quota_coordinator_tenant_rate_tokens_per_second", []string{"tenant", "acme"}, 10},
		{"afloat_quota_coordinator_tenant_burst_tokens", []string{"tenant", "acme"}, 20},
		{"afloat_quota_coordinator_tenant_emergency_allowance_tokens", []string{"tenant", "beta"}, 5},
		{"afloat_quota_coordinator_tenant_share_rate_tokens_per_second", []string{"tenant", "acme", "region", "eu"}, 10},
		{"afloat_quota_coordinator_tenant_share_burst_tokens", []string{"tenant", "acme", "region", "eu"}, 20},
	} {
		if v := ls.Must(t, tc.name, tc.labels...); v != tc.want {
			t.Errorf("%s%v = %v, want %v", tc.name, tc.labels, v, tc.want)
		}
	}
	if v := ls.Must(t, "afloat_quota_coordinator_tenant_live_leases", "tenant", "acme", "region", "eu"); v < 1 || v > 2 {
		t.Errorf("live leases of acme in eu: %v, want 1 or 2", v)
	}
	if v := ls.Must(t, "afloat_quota_coordinator_live_leases", "region", "eu"); v < 2 || v > 4 {
		t.Errorf("live leases in eu: %v, want 2 to 4 (acme's and beta's, and a replaced one of each not yet confirmed returned)", v)
	}
	txns := ls.Must(t, "afloat_quota_coordinator_ledger_txn_duration_seconds", "result", "ok")
	batches := ls.Must(t, "afloat_quota_coordinator_ledger_txn_ops")
	if txns < 1 || batches != txns { // no failed write on a quiet member
		t.Errorf("%v transactions timed, %v batch sizes: want 1 or more, and equal", txns, batches)
	}
	if ops := ls.HistSum("afloat_quota_coordinator_ledger_txn_ops"); ops < batches {
		t.Errorf("%v operations in %v transactions", ops, batches)
	}

	// The leader steps down (its context ends; it resigns): the follower
	// leads at a higher epoch, and the region stays ready.
	before := election()
	procs[lead].Stop() //nolint:errcheck // stopped as asked
	opstest.WaitFor(t, "the follower leads", func() bool { c, rd := opstest.Readyz(t, coords[follow]); return c == 200 && rd.Role == "leader" })
	fs = opstest.Scrape(t, coords[follow])
	if v := fs.Must(t, "afloat_quota_coordinator_leader"); v != 1 {
		t.Fatalf("leader gauge on the new leader: %v", v)
	}
	if v := fs.Must(t, "afloat_quota_coordinator_epoch"); v != float64(election()) || v <= float64(before) {
		t.Fatalf("the new leader's epoch %v, want the election's %d, above %d", v, election(), before)
	}
	if code, rd := opstest.Readyz(t, region); code != 200 || !rd.Ready {
		t.Fatalf("region /readyz after a failover: %d %+v", code, rd)
	}
	if code := opstest.Healthz(t, coords[follow]); code != 200 {
		t.Fatalf("coordinator /healthz: %d", code)
	}
}
