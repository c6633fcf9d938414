package main

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/afloat/afloat/internal/cli"
	"github.com/afloat/afloat/quota/eventlog"
)

// TestQuotaRegionKilled kills a region agent (kill -9) under traffic and
// starts it again with the same event log, as docs/quota/operations.md says to, on
// TestQuotaEndToEnd's cluster (3 etcd members, 2 coordinators, 3 regions,
// each a process): the new agent stands by until the dead one's leases
// stop counting, then serves. Once eu admits the hard tenant again,
// everything stops and afloat quota check, on the merged event logs, must
// find 0 violations: the dead agent spent nothing after its last line
// (eventlog.Merge), where a check that took its lease to be spent until
// the new agent's first install reported "region eu installed lease 2094
// while still spending under 2064". The test also checks that it tried
// what it means to: eu's log holds two agents, the first without a stop
// and still spending a lease of the hard tenant at its last line.
func TestQuotaRegionKilled(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a cluster of processes for about 20 s: make test-long runs it")
	}
	dir := evidenceDir(t, "quota-killed", "*.jsonl", "*.stderr", "quota.yaml")
	c, traffic := startUnderTraffic(t, dir)
	defer c.stopAll()
	defer traffic.stop()
	c.step("steady traffic in every region", 3*time.Second)

	eu := c.regions["eu"]
	eu.kill()
	killed := time.Now()
	before := traffic.admitted()
	eu.start() // the same arguments: the same --event-log
	c.waitFor("region eu admitting acme again", func() bool { return traffic.admittedSince(before)["eu"]["acme"] > 0 })
	back := time.Since(killed)
	c.step(fmt.Sprintf("killed region eu's agent with SIGKILL, started it again with the same event log; it admits again after %v", back.Round(time.Millisecond)), 2*time.Second)
	traffic.pause()
	c.stopAll()

	agents, held := killedAgentLog(t, filepath.Join(dir, "region-eu.jsonl"))
	if agents != 2 || held == 0 {
		t.Fatalf("region eu's log holds %d agents, the first still spending lease %d of acme at its last line: want 2, and a lease", agents, held)
	}
	rep, status := c.check()
	if status != cli.ExitOK || rep.Violations != 0 {
		t.Fatalf("quota check: status %d, %d violations: %v", status, rep.Violations, rep.Messages)
	}
	if rep.Admitted == 0 || rep.Leases == 0 {
		t.Fatalf("quota check saw %d admitted tokens and %d leases: the run did nothing", rep.Admitted, rep.Leases)
	}
	fmt.Printf("quota killed region: eu admitted again %v after its kill -9; the dead agent held lease %d at its last line; %d leases, %d tokens admitted, worst window %.1f tokens from its bound, 0 violations\n",
		back.Round(time.Millisecond), held, rep.Leases, rep.Admitted, rep.WorstExcess)
}

// killedAgentLog reads a region's log: how many agents wrote it (blocks
// of start events), and the lease of acme the first was still spending
// under at its last line, if it wrote no stop (0 otherwise).
func killedAgentLog(t *testing.T, path string) (agents int, held uint64) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var using uint64
	stopped, started := false, false
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<16), 1<<20)
	for sc.Scan() {
		e, err := eventlog.ParseEvent(sc.Bytes())
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if e.Kind == eventlog.Start && !started {
			agents++
			if agents == 2 && !stopped {
				held = using
			}
		}
		started = e.Kind == eventlog.Start
		if agents > 1 || (e.Tenant != "acme" && e.Kind != eventlog.Stop) {
			continue
		}
		switch e.Kind {
		case eventlog.Stop:
			stopped = true
		case eventlog.Install:
			using = e.ID
		case eventlog.Supersede, eventlog.Expire, eventlog.Return:
			if using == e.ID {
				using = 0
			}
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return agents, held
}
