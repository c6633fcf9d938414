package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/afloat/afloat/internal/cli"
	"github.com/afloat/afloat/quota/scale"
)

// TestQuotaAtScale runs the global quota with 10,000 hard tenants in
// three regions on a stock etcd — Debian's etcd-server, three members at
// its default transaction limit (no --max-txn-ops: 128) — with two
// coordinator replicas and three region agents, each an OS process with
// an event log (quota/scale), and a little traffic through every agent's
// decision API. Every tenant must hold a valid lease in every region
// within scaleLeasedBound of the agents' start. Then, one after the
// other: the leading coordinator is killed (kill -9; restarted after),
// the leading coordinator is stopped for 3 s (SIGSTOP, then SIGCONT), and
// every region agent is restarted at once (SIGTERM, then started again)
// while two busy loops hold both cores; after each, every tenant must be
// valid again in every region within the fault's bound (scaleFaultBounds
// says why each is what it is), and stay so for a lease. It prints each
// time. Last, everything stops with SIGTERM — every process must end
// within 30 s — and afloat quota check, on every event log, against every
// tenant's limits, must find 0 violations.
//
// AFLOAT_QUOTA_SCALE_TENANTS=N runs N tenants instead (1 to 100000). The
// etcd binary is AFLOAT_ETCD_BINARY, else etcd on PATH (make test-long
// installs Debian's etcd-server when it is missing); without one the test
// skips, unless AFLOAT_REQUIRE_ETCD is set. When it fails, the event logs
// and the processes' output are kept in a folder the failure names;
// AFLOAT_QUOTA_SCALE_LOGS=DIR keeps them in DIR in any case.
func TestQuotaAtScale(t *testing.T) {
	if testing.Short() {
		t.Skip("runs 10,000 tenants on a cluster of processes for minutes: make test-long runs it")
	}
	etcdBin := os.Getenv("AFLOAT_ETCD_BINARY")
	if etcdBin == "" {
		etcdBin, _ = exec.LookPath("etcd")
	}
	if etcdBin == "" {
		if os.Getenv("AFLOAT_REQUIRE_ETCD") != "" {
			t.Fatal("no etcd binary (AFLOAT_ETCD_BINARY, or etcd on PATH) and AFLOAT_REQUIRE_ETCD is set: apt-get install etcd-server")
		}
		t.Skip("no etcd binary: apt-get install etcd-server, or set AFLOAT_ETCD_BINARY")
	}
	tenants := 10_000
	if s := os.Getenv("AFLOAT_QUOTA_SCALE_TENANTS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil {
			t.Fatalf("AFLOAT_QUOTA_SCALE_TENANTS=%s: %v", s, err)
		}
		tenants = n
	}
	dir := evidenceDir(t, "quota-scale", "*.jsonl", "*.stderr", "quota.json")
	if keep := os.Getenv("AFLOAT_QUOTA_SCALE_LOGS"); keep != "" {
		if err := os.MkdirAll(keep, 0o755); err != nil {
			t.Fatal(err)
		}
		dir = keep
	}
	cfg := scale.DefaultConfig(testBinary(t, ""), etcdBin, dir)
	cfg.Tenants, cfg.EventLogs = tenants, true // MaxTxnOps 0: etcd's default
	c, err := scale.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Kill() // a failed test leaves no process behind
	ctx := context.Background()
	if deadline, ok := t.Deadline(); ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, deadline.Add(-30*time.Second))
		defer cancel()
	}
	fmt.Printf("quota at scale: %d tenants × 3 regions, stock etcd (%s) ×3, 2 coordinators; load %s\n", tenants, etcdBin, loadAverage())
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	tr := c.StartTraffic([]string{scale.TenantName(0), scale.TenantName(tenants / 2), scale.TenantName(tenants - 1)}, 20)
	defer tr.Stop()
	leasing := c.WaitLeased(ctx, c.AgentsStarted(), scaleLeasedBound, nil)
	fmt.Printf("quota at scale: %v (bound %v)\n", leasing, scaleLeasedBound)
	if !leasing.Leased {
		t.Fatalf("not every tenant leased in every region within %v of the agents' start: at best %v (the processes' output: %s)",
			scaleLeasedBound, leasing.Best, dir)
	}

	fault := func(r scale.Recovery, bound time.Duration) {
		t.Helper()
		fmt.Printf("quota at scale: %v (bound %v); load %s\n", r, bound, loadAverage())
		switch {
		case r.Err != "":
			t.Errorf("%s: %s", r.Fault, r.Err)
		case !r.Recovered:
			t.Errorf("%s: not every tenant valid again within %v: at worst %v", r.Fault, r.Bound, r.Worst)
		case r.Took > bound:
			t.Errorf("%s: every tenant valid again after %v: want ≤ %v", r.Fault, r.Took.Round(10*time.Millisecond), bound)
		}
	}
	fault(c.KillLeader(ctx, scaleWatchBound), scaleFaultBounds.kill)
	fault(c.PauseLeader(ctx, 3*time.Second, scaleWatchBound), scaleFaultBounds.pause)
	loops, err := scale.StartBusyLoops(2, dir)
	if err != nil {
		t.Fatal(err)
	}
	fault(c.RestartAgents(ctx, scaleWatchBound), scaleFaultBounds.regions)
	loops.Stop()

	decisions := tr.Stop()
	fmt.Printf("quota at scale: decisions allowed/refused/failed: %+v\n", decisions)
	if err := c.Stop(30 * time.Second); err != nil {
		t.Errorf("stopping the cluster with SIGTERM: %v", err)
	}
	args := []string{"quota", "check"}
	for i := range tenants {
		args = append(args, "--tenant", fmt.Sprintf("%s:%g:%g", scale.TenantName(i), cfg.Rate, cfg.Burst))
	}
	var out, errOut bytes.Buffer
	began := time.Now()
	status := run(append(args, c.EventLogs()...), nil, &out, &errOut)
	var rep checkReport
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("quota check (status %d) printed %q: %v\n%s", status, out.String(), err, errOut.String())
	}
	fmt.Printf("quota at scale: afloat quota check of %d event logs took %v: %d leases, %d tokens admitted, %d refused, worst window %.1f tokens from its bound, %d violations\n",
		len(c.EventLogs()), time.Since(began).Round(10*time.Millisecond), rep.Leases, rep.Admitted, rep.Rejected, rep.WorstExcess, rep.Violations)
	if status != cli.ExitOK || rep.Violations != 0 {
		t.Fatalf("quota check: status %d, %d violations: %v\n%s", status, rep.Violations, rep.Messages, errOut.String())
	}
	if rep.Admitted == 0 || rep.Leases < 3*tenants {
		t.Fatalf("quota check saw %d admitted tokens and %d leases: want some, and a lease for every tenant in every region", rep.Admitted, rep.Leases)
	}
}

// The bounds of TestQuotaAtScale. scaleLeasedBound: the goal is
// every tenant leased within 30 s at 100,000 tenants; 10,000 on a
// 2-core machine shared with other work get twice that. scaleWatchBound
// is how long a fault's recovery is watched before it is called "not
// recovered" (beyond every bound below, so that a slow recovery is
// measured, not cut).
const (
	scaleLeasedBound = 60 * time.Second
	scaleWatchBound  = 90 * time.Second
)

// scaleFaultBounds are the times within which every tenant must be valid
// again after each fault, from its start. The goal, 10 s after
// each fault, is bench-quota-scale's to measure (docs/benchmarks.md, "The
// quota at scale"); this test, on a 2-core machine that runs its eight
// processes and whatever else the machine runs, asks that the cluster
// recover, not how fast — and prints how long it took. On a quiet
// machine a kill -9 or a 3 s SIGSTOP of the leader recovers in 5 to 16 s
// by the harness's measure, which counts a tenant that lacks a valid
// lease at any poll, for however short a time (quota/scale, Fault): a
// successor writes every lease anew, and while it does, some renewals
// take seconds. Under load it took up to 30 s. So every bound is
// scaleLeasedBound, the bound of the start itself.
var scaleFaultBounds = struct{ kill, pause, regions time.Duration }{scaleLeasedBound, scaleLeasedBound, scaleLeasedBound}

// loadAverage is the machine's load average over 1, 5 and 15 minutes.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := bytes.Fields(b)
	if len(f) < 3 {
		return "unknown"
	}
	return string(bytes.Join(f[:3], []byte(" ")))
}
