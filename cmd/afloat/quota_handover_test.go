package main

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/afloat/afloat/internal/cli"
	"github.com/afloat/afloat/quota/eventlog"
)

// TestQuotaRegionHandover stops region eu's agent with SIGTERM under
// traffic and starts it again, both with --handover-file, on
// TestQuotaEndToEnd's cluster (3 etcd members, 2 coordinators, 3 regions,
// each a process): the stopping agent leaves its leases and its hold in
// the file (mode 0600) instead of detaching, the new one takes the file
// (gone once read) and renews as the same incarnation, and its first
// lease of each tenant is a covered one — no ledger write — standing on
// a lease the first agent held (an agent that detached and attached
// again writes a first lease for every tenant). afloat quota check, on
// the merged event logs, must find 0 violations: the two agents never
// spent at once.
func TestQuotaRegionHandover(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a cluster of processes for about 15 s: make test-long runs it")
	}
	dir := evidenceDir(t, "quota-handover", "*.jsonl", "*.stderr", "quota.yaml")
	c := newCluster(t, testBinary(t, "embedetcd"), dir)
	handover := filepath.Join(dir, "eu.handover")
	eu := c.regions["eu"]
	eu.args = append(eu.args, "--handover-file", handover)
	c.startEtcd()
	c.startCoordinators()
	c.startRegions()
	traffic := c.drive()
	traffic.set(map[string]float64{"eu": 1, "us": 1, "ap": 1})
	defer c.stopAll()
	defer traffic.stop()
	c.step("steady traffic in every region", 3*time.Second)

	eu.stop() // SIGTERM
	stopped := time.Now()
	st, err := os.Stat(handover)
	if err != nil {
		t.Fatalf("region eu stopped with --handover-file and left no file: %v", err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("the handover file has mode %04o, want 0600: it holds the region's hold", st.Mode().Perm())
	}
	before := traffic.admitted()
	eu.start()
	c.waitFor("region eu admitting acme again", func() bool { return traffic.admittedSince(before)["eu"]["acme"] > 0 })
	back := time.Since(stopped)
	if _, err := os.Stat(handover); err == nil {
		t.Error("the handover file is still there once the next agent serves: a third agent could resume it too")
	}
	c.step(fmt.Sprintf("stopped region eu's agent with SIGTERM, started it again with the same --handover-file; it admits again after %v", back.Round(time.Millisecond)), 2*time.Second)
	traffic.pause()
	c.stopAll()

	stderr, err := os.ReadFile(filepath.Join(dir, "region-eu.stderr"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(stderr), "handed the region's leases over") || !strings.Contains(string(stderr), "resuming the leases") {
		t.Errorf("region eu's log does not say the handover and the resume:\n%s", stderr)
	}
	first := resumedInstall(t, filepath.Join(dir, "region-eu.jsonl"))
	if first == 0 {
		t.Fatal("the second agent of eu installed no lease of acme")
	}
	cover := coverOf(t, c, first)
	if cover == 0 {
		t.Errorf("the second agent's first lease of acme, %d, was written: want a covered one, resumed from the lease handed over", first)
	}
	rep, status := c.check()
	if status != cli.ExitOK || rep.Violations != 0 {
		t.Fatalf("quota check: status %d, %d violations: %v", status, rep.Violations, rep.Messages)
	}
	if rep.Admitted == 0 || rep.Leases == 0 {
		t.Fatalf("quota check saw %d admitted tokens and %d leases: the run did nothing", rep.Admitted, rep.Leases)
	}
	fmt.Printf("quota region handover: eu admitted again %v after its SIGTERM; the next agent's first lease of acme %d covered by %d; %d leases, %d tokens admitted, 0 violations\n",
		back.Round(time.Millisecond), first, cover, rep.Leases, rep.Admitted)
}

// resumedInstall reads a region's log for the first lease of acme the
// second agent (the second block of start events) installed.
func resumedInstall(t *testing.T, path string) uint64 {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	agents, started := 0, false
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<16), 1<<20)
	for sc.Scan() {
		e, err := eventlog.ParseEvent(sc.Bytes())
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if e.Kind == eventlog.Start && !started {
			agents++
		}
		started = e.Kind == eventlog.Start
		if agents == 2 && e.Kind == eventlog.Install && e.Tenant == "acme" {
			return e.ID
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return 0
}

// coverOf reads the coordinators' logs for lease id's grant: its cover,
// 0 if it was written.
func coverOf(t *testing.T, c *cluster, id uint64) uint64 {
	t.Helper()
	for k := range c.coords {
		path := filepath.Join(c.dir, fmt.Sprintf("coordinator-%d.jsonl", k))
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 1<<16), 1<<20)
		for sc.Scan() {
			e, err := eventlog.ParseEvent(sc.Bytes())
			if err != nil {
				f.Close()
				t.Fatalf("%s: %v", path, err)
			}
			if e.Kind == eventlog.Lease && e.ID == id {
				f.Close()
				return e.Cover
			}
		}
		f.Close()
	}
	t.Fatalf("lease %d is in no coordinator's log", id)
	return 0
}
