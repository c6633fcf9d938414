package main

import (
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/afloat/afloat/internal/cli"
)

// TestQuotaRestoreUnderTraffic restores an etcd snapshot of the ledger
// taken a few seconds earlier, under traffic, as docs/quota/operations.md's
// "Backup and restore" says, on TestQuotaEndToEnd's cluster (3 etcd members, 2
// coordinators, 3 regions, each a process): afloat quota backup while
// traffic runs in every region; then all traffic moves into us, so that
// the leases granted since the snapshot — us's large one above all — are
// not in it; the coordinators stop (SIGTERM) while the regions run on and
// spend those leases; afloat quota restore writes the snapshot's ledger
// back; the coordinators start again, and the traffic returns to every
// region. The restored leader must grant nothing for a lease and its
// margin (3.2 s here) — the longest gap in grants says so — and afloat
// quota check, on the merged event logs, must find 0 violations.
// TestMutationNoRestoreFence (quota/coordinator) shows that without the
// fence such a restore grants a share that adds up above R.
func TestQuotaRestoreUnderTraffic(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a cluster of processes for about 30 s: make test-long runs it")
	}
	dir := evidenceDir(t, "quota-restore", "*.jsonl", "*.stderr", "quota.yaml")
	c, traffic := startUnderTraffic(t, dir)
	defer c.stopAll()
	defer traffic.stop()
	step := c.step
	step("steady traffic in every region", 4*time.Second)

	var endpoints []string
	for _, p := range c.etcdClient {
		endpoints = append(endpoints, p.URL())
	}
	snapshot := filepath.Join(dir, "ledger.db")
	c.afloat("quota", "backup", "--config", c.config, "--etcd", strings.Join(endpoints, ","), "--out", snapshot)
	traffic.set(map[string]float64{"us": 3})
	step("took a snapshot; all traffic into us", 4*time.Second)

	began := time.Now()
	for _, p := range c.coords {
		c.stopSaying(p, "quota coordinator: stopped")
	}
	out := c.afloat("quota", "restore", "--config", c.config, "--etcd", strings.Join(endpoints, ","), "--snapshot", snapshot)
	t.Logf("afloat quota restore: %s", out)
	restored := time.Now()
	// The restored leader waits out the longest lease record the restore
	// knew of: a lease and its margin.
	var restore struct {
		Wait time.Duration `json:"wait_ns"`
	}
	if err := json.Unmarshal([]byte(out), &restore); err != nil || restore.Wait < 3200*time.Millisecond {
		t.Fatalf("afloat quota restore printed %q (%v): want its wait, at least a lease and its margin", out, err)
	}
	traffic.set(map[string]float64{"eu": 1, "us": 1, "ap": 1})
	c.startCoordinators()
	step(fmt.Sprintf("stopped the coordinators, restored the snapshot in %v, started them; traffic everywhere", restored.Sub(began).Round(time.Millisecond)), restore.Wait+2*time.Second)
	gap := c.grantGap(began, time.Now())
	first := c.firstGrantAt(restored)
	fmt.Printf("quota restore: longest grant gap %v across the stop, the restore and the fence; first grant %v after the restore\n",
		gap.Round(time.Millisecond), first.Round(time.Millisecond))
	if first < restore.Wait {
		t.Errorf("the first grant came %v after the restore: the restored leader should wait out the longest lease record, %v", first, restore.Wait)
	}
	if !strings.Contains(tailOf(c.coords[c.leader()].log, 1<<30), "the ledger was restored from a backup") {
		t.Errorf("the restored leader did not say that it waits out the restore")
	}
	step("traffic everywhere after the fence", 2*time.Second)
	traffic.pause()
	c.stopAll()

	rep, status := c.check()
	if status != cli.ExitOK || rep.Violations != 0 {
		t.Fatalf("quota check: status %d, %d violations: %v", status, rep.Violations, rep.Messages)
	}
	if rep.Admitted == 0 || rep.Leases == 0 {
		t.Fatalf("quota check saw %d admitted tokens and %d leases: the run did nothing", rep.Admitted, rep.Leases)
	}
	fmt.Printf("quota restore: %d leases, %d tokens admitted, %d refused, worst window %.1f tokens from its bound, 0 violations\n",
		rep.Leases, rep.Admitted, rep.Rejected, rep.WorstExcess)
}

// afloat runs the cluster's binary with args to its end and returns its
// standard output; it fails the test if the command fails.
func (c *cluster) afloat(args ...string) string {
	c.t.Helper()
	cmd := exec.Command(c.bin, args...)
	var errOut strings.Builder
	cmd.Stderr = &errOut
	out, err := cmd.Output()
	if err != nil {
		c.t.Fatalf("afloat %s: %v\n%s%s", strings.Join(args, " "), err, out, errOut.String())
	}
	return string(out)
}
