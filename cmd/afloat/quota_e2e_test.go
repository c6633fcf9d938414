package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/afloat/afloat/internal/cli"
	"github.com/afloat/afloat/internal/faultproxy"
	"github.com/afloat/afloat/internal/freeport"
	"github.com/afloat/afloat/quota/eventlog"
)

// TestQuotaEndToEnd runs the global quota as a user deploys it, each part
// an OS process of its own on loopback: a 3-member etcd cluster (embedded
// members, afloat quota etcd), 2 coordinator replicas and 3 region agents,
// with a fault-injecting TCP proxy on every link — between etcd members,
// from each coordinator to each member, from each region to each
// coordinator. It drives traffic into each region through the decision
// API and, in one run: kills the leading coordinator (kill -9), kills an
// etcd member (kill -9), partitions a region for longer than a lease,
// moves all traffic to one region, stops everything (SIGTERM) under
// traffic and restarts it from its data directories, and then stops and
// restarts each process in turn (SIGTERM) in a rolling upgrade's order
// (the following coordinator, the leader, each region, each etcd
// member), still under traffic: each
// must finish or settle its writes, resign and say that it stopped; and
// last kills etcd's leader (kill -9), under traffic: no coordinator may
// step down, and a grant must follow etcd's new leader within 4 s (the
// time it takes is printed, not held to a bound). It prints the longest
// gap in grants across each restart and kill, and one line, "quota e2e
// row:", with every figure of the run, for a table of many runs. Then afloat quota
// check, on the merged event
// logs, must find 0 violations: R·Δ + B for the hard tenant, R·Δ + B + 3E
// for the best-effort one, nothing admitted without a lease in hard mode.
// It prints how long after the leader's death renewals resumed.
//
// When it fails, the event logs and the processes' stderr are kept in a
// folder the failure names; AFLOAT_QUOTA_E2E_LOGS=DIR keeps them in DIR
// in any case.
func TestQuotaEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a cluster of processes for about a minute: make test-long runs it")
	}
	dir := evidenceDir(t, "quota-e2e", "*.jsonl", "*.stderr", "quota.yaml")
	if keep := os.Getenv("AFLOAT_QUOTA_E2E_LOGS"); keep != "" {
		if err := os.MkdirAll(keep, 0o755); err != nil {
			t.Fatal(err)
		}
		dir = keep
	}
	c, traffic := startUnderTraffic(t, dir)
	defer c.stopAll()
	defer traffic.stop()
	step := c.step
	step("steady traffic in every region", 4*time.Second)

	// 1. The leading coordinator dies.
	lead := c.leader()
	before := traffic.admitted()
	term := c.etcdTerm()
	killedAt := time.Now()
	c.coords[lead].kill()
	step(fmt.Sprintf("killed coordinator %d (the leader) with SIGKILL", lead), 3*time.Second)
	// An etcd election meanwhile (a loaded machine missing heartbeats)
	// extends every lease, the dead leader's too, and so the failover:
	// the row says how many there were.
	failoverElections := c.etcdTerm() - term
	during := traffic.admittedSince(before)
	for _, r := range regions {
		if during[r]["acme"] == 0 {
			t.Errorf("region %s admitted nothing for the hard tenant in the 3 s after the leader's death: its lease should outlast it", r)
		}
	}

	// 2. An etcd member dies.
	c.etcd[0].kill()
	step("killed etcd member 0 with SIGKILL", 3*time.Second)

	// 3. A region is cut off from both coordinators for longer than a lease.
	for _, p := range c.regionLinks["ap"] {
		p.Cut()
	}
	step("partitioned region ap from the coordinators (lease 3 s)", 5*time.Second)
	for _, p := range c.regionLinks["ap"] {
		p.Heal()
	}
	step("healed ap", 2*time.Second)

	// 4. All traffic moves to one region.
	traffic.set(map[string]float64{"us": 3})
	step("all traffic into us", 5*time.Second)

	// 5. Everything stops under traffic (SIGTERM), and starts again from
	// its data directories.
	traffic.set(map[string]float64{"eu": 1, "us": 1, "ap": 1})
	// The gap in grants is mostly the time the cluster is down, so its
	// phases are timed: the stop, etcd's quorum, a coordinator leading.
	began := time.Now()
	c.stopEverything()
	stopped := time.Now()
	c.startEtcd()
	etcdUp := time.Now()
	c.startCoordinators()
	leading := time.Now()
	c.startRegions()
	step("restarted from the data directories; traffic everywhere", 5*time.Second)
	fullGap := c.grantGap(began, time.Now())
	fullFirst := c.firstGrantAt(leading)
	stopTook := stopped.Sub(began)
	fmt.Printf("quota e2e: stop and restart of everything under traffic: longest grant gap %v (stopped in %v, etcd healthy %v later, a coordinator leading %v later, its first grant %v later)\n",
		fullGap.Round(time.Millisecond), stopTook.Round(time.Millisecond), etcdUp.Sub(stopped).Round(time.Millisecond),
		leading.Sub(etcdUp).Round(time.Millisecond), fullFirst.Round(time.Millisecond))

	// 6. Each process in turn stops (SIGTERM) and starts again, under
	// traffic, in a rolling upgrade's order: the following coordinator,
	// the leader, the regions one at a time, the etcd members.
	began = time.Now()
	c.restartEachInTurn()
	step("every process restarted in turn; traffic everywhere", 3*time.Second)
	rollingGap := c.grantGap(began, time.Now())
	fmt.Printf("quota e2e: rolling restart of every process under traffic: longest grant gap %v\n", rollingGap.Round(time.Millisecond))

	// 7. etcd's leader dies (kill -9) under traffic. The coordinator's
	// session and writes must ride through etcd's election (session TTL
	// 5 s, against an election of 500 ms here): no step-down, and grants
	// again soon after etcd has a new leader. The member comes back, so
	// that the cluster is whole for the check.
	dead, deadID := c.etcdLeader()
	etcdKilled := time.Now()
	c.etcd[dead].kill()
	elected := c.waitEtcdLeader(deadID)
	step(fmt.Sprintf("killed etcd member %d (etcd's leader) with SIGKILL; a new leader %v later", dead, elected.Sub(etcdKilled).Round(time.Millisecond)), 4*time.Second)
	etcdGap := c.grantGap(etcdKilled, time.Now())
	etcdResumed := c.firstGrantAt(elected)
	stepDowns := c.restartsAfter(etcdKilled)
	fmt.Printf("quota e2e: etcd leader m%d killed under traffic: etcd elected a new leader %v later; first grant %v after the election; longest grant gap %v; %d coordinator step-downs\n",
		dead, elected.Sub(etcdKilled).Round(time.Millisecond), etcdResumed.Round(time.Millisecond), etcdGap.Round(time.Millisecond), stepDowns)
	if stepDowns > 0 {
		t.Errorf("etcd's leader died: %d coordinator restarts (a step-down and a new lead): the session should ride through etcd's election", stepDowns)
	}
	if etcdResumed < 0 {
		t.Errorf("etcd's leader died: no grant in the 4 s after etcd elected a new leader")
	}
	c.etcd[dead].start()
	c.waitEtcd()
	step(fmt.Sprintf("restarted etcd member %d", dead), 2*time.Second)
	traffic.pause()
	c.stopAll()

	// Renewals resumed: the first grant of a later epoch after the kill.
	resumed := c.firstGrantAfter(killedAt)
	fmt.Printf("quota e2e: renewals resumed %v after the leader coordinator's kill -9 (etcd --heartbeat-interval 50 --election-timeout 500, the shipped session TTL and deposing; goal ≤ 2 s)\n", resumed.Round(time.Millisecond))
	if resumed <= 0 {
		t.Errorf("no grant after the leader's death")
	}

	rep, status := c.check()
	// One line per run, for a table of many runs.
	ms := func(d time.Duration) string { return strconv.FormatFloat(d.Seconds(), 'f', 3, 64) }
	fmt.Printf("quota e2e row: full_restart_gap=%s (stop=%s etcd=%s lead=%s grant=%s) rolling_restart_gap=%s etcd_leader_kill_gap=%s etcd_election=%s etcd_resumed_after_election=%s etcd_step_downs=%d coordinator_failover=%s failover_etcd_elections=%d violations=%d worst_excess=%.1f\n",
		ms(fullGap), ms(stopTook), ms(etcdUp.Sub(stopped)), ms(leading.Sub(etcdUp)), ms(fullFirst), ms(rollingGap), ms(etcdGap), ms(elected.Sub(etcdKilled)), ms(etcdResumed), stepDowns, ms(resumed), failoverElections, rep.Violations, rep.WorstExcess)
	if status != cli.ExitOK || rep.Violations != 0 {
		t.Fatalf("quota check: status %d, %d violations: %v", status, rep.Violations, rep.Messages)
	}
	if rep.Admitted == 0 || rep.Leases == 0 {
		t.Fatalf("quota check saw %d admitted tokens and %d leases: the run did nothing", rep.Admitted, rep.Leases)
	}
	fmt.Printf("quota e2e: %d leases, %d tokens admitted, %d refused, %d admitted without a lease (best-effort only), worst window %.1f tokens from its bound, 0 violations\n",
		rep.Leases, rep.Admitted, rep.Rejected, rep.NoLeaseAdmitted, rep.WorstExcess)
}

// checkReport is what afloat quota check prints.
type checkReport struct {
	Violations      int      `json:"violations"`
	Messages        []string `json:"messages"`
	Admitted        int64    `json:"admitted"`
	Rejected        int64    `json:"rejected"`
	Leases          int      `json:"leases"`
	NoLeaseAdmitted int64    `json:"admitted_without_lease"`
	WorstExcess     float64  `json:"worst_excess"`
}

// check runs afloat quota check on the merged logs, as a user would,
// against the limits of the cluster's config file (beta: E 20 in each of
// 3 regions), and returns its report and exit status.
func (c *cluster) check() (checkReport, int) {
	t := c.t
	args := append([]string{"quota", "check", "--tenant", "acme:200:400", "--tenant", "beta:100:100:20:3"}, c.logs()...)
	var out, errOut bytes.Buffer
	status := run(args, nil, &out, &errOut)
	t.Logf("afloat quota check: status %d\n%s%s", status, out.String(), errOut.String())
	var rep checkReport
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("quota check printed %q: %v", out.String(), err)
	}
	return rep, status
}

// startUnderTraffic starts the whole cluster, its event logs and output
// in dir, and traffic in every region. The caller stops the traffic, then
// the cluster.
func startUnderTraffic(t *testing.T, dir string) (*cluster, *traffic) {
	c := newCluster(t, testBinary(t, "embedetcd"), dir)
	c.startEtcd()
	c.startCoordinators()
	c.startRegions()
	tr := c.drive()
	tr.set(map[string]float64{"eu": 1, "us": 1, "ap": 1})
	return c, tr
}

// step lets the cluster run for d, saying what runs.
func (c *cluster) step(name string, d time.Duration) {
	c.t.Helper()
	c.t.Logf("%s: %v", name, d)
	time.Sleep(d)
}

var regions = []string{"eu", "us", "ap"}

// proc is one OS process of the cluster.
type proc struct {
	t    *testing.T
	name string
	args []string
	bin  string
	log  string // stderr goes here
	cmd  *exec.Cmd
	done chan struct{}
}

func (p *proc) start() {
	p.t.Helper()
	f, err := os.OpenFile(p.log, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		p.t.Fatal(err)
	}
	p.cmd = exec.Command(p.bin, p.args...)
	p.cmd.Stdout, p.cmd.Stderr = f, f
	// Should the test itself die, its cluster dies with it.
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := p.cmd.Start(); err != nil {
		p.t.Fatalf("%s: %v", p.name, err)
	}
	p.done = make(chan struct{})
	go func() {
		p.cmd.Wait() //nolint:errcheck // killed on purpose, or stopped
		f.Close()
		close(p.done)
	}()
}

func (p *proc) running() bool {
	if p.cmd == nil {
		return false
	}
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

func (p *proc) kill() {
	if p.running() {
		p.cmd.Process.Kill() //nolint:errcheck
		<-p.done
	}
}

// stop sends SIGTERM and waits (then SIGKILL after 10 s).
func (p *proc) stop() {
	if !p.running() {
		return
	}
	p.cmd.Process.Signal(syscall.SIGTERM) //nolint:errcheck
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		p.t.Errorf("%s did not stop within 10 s of SIGTERM; killed", p.name)
		p.kill()
	}
}

type cluster struct {
	t   *testing.T
	bin string
	dir string

	etcd        []*proc
	coords      []*proc
	regions     map[string]*proc
	regionAddrs map[string]string
	regionLinks map[string][]*faultproxy.Proxy
	etcdClient  []*faultproxy.Proxy
	proxies     []*faultproxy.Proxy
	config      string
	etcdCli     *clientv3.Client // through the client proxies, for members' status
}

// freeAddr is a free loopback address below the kernel's ephemeral port
// range (internal/freeport): the processes bind it later, and again after
// a restart — one run found a coordinator's event log missing because it
// could not bind a port of that range, taken meanwhile as the local end
// of an outgoing connection, twice.
func freeAddr(t *testing.T) string {
	t.Helper()
	addr, err := freeport.Addr()
	if err != nil {
		t.Fatal(err)
	}
	return addr
}

func newCluster(t *testing.T, bin, dir string) *cluster {
	c := &cluster{t: t, bin: bin, dir: dir, regions: map[string]*proc{}, regionAddrs: map[string]string{},
		regionLinks: map[string][]*faultproxy.Proxy{}}
	proxy := func(target string) *faultproxy.Proxy {
		p, err := faultproxy.New(target)
		if err != nil {
			t.Fatal(err)
		}
		c.proxies = append(c.proxies, p)
		return p
	}
	// etcd: every member's peer and client ports behind a proxy.
	var initial []string
	type member struct{ client, peer string }
	members := make([]member, 3)
	peerProxies := make([]*faultproxy.Proxy, 3)
	for i := range members {
		members[i] = member{freeAddr(t), freeAddr(t)}
		peerProxies[i] = proxy(members[i].peer)
		c.etcdClient = append(c.etcdClient, proxy(members[i].client))
		initial = append(initial, fmt.Sprintf("m%d=%s", i, peerProxies[i].URL()))
	}
	for i, m := range members {
		c.etcd = append(c.etcd, &proc{t: t, name: fmt.Sprintf("etcd m%d", i), bin: bin, log: filepath.Join(dir, fmt.Sprintf("etcd-m%d.stderr", i)),
			args: []string{"quota", "etcd", "--name", fmt.Sprintf("m%d", i), "--data-dir", filepath.Join(dir, fmt.Sprintf("etcd-m%d", i)),
				"--client-url", "http://" + m.client, "--peer-url", "http://" + m.peer,
				"--advertise-peer-url", peerProxies[i].URL(), "--advertise-client-url", c.etcdClient[i].URL(),
				"--initial-cluster", strings.Join(initial, ",")}})
	}
	var etcdURLs []string
	for _, p := range c.etcdClient {
		etcdURLs = append(etcdURLs, p.URL())
	}
	// Two coordinators, each region reaching each through a proxy.
	coordAddrs := []string{freeAddr(t), freeAddr(t)}
	for k, addr := range coordAddrs {
		c.coords = append(c.coords, &proc{t: t, name: fmt.Sprintf("coordinator %d", k), bin: bin,
			log: filepath.Join(dir, fmt.Sprintf("coordinator-%d.stderr", k)),
			args: []string{"quota", "coordinator", "--listen", addr, "--config", filepath.Join(dir, "quota.yaml"),
				"--etcd", strings.Join(etcdURLs, ","), "--event-log", filepath.Join(dir, fmt.Sprintf("coordinator-%d.jsonl", k))}})
	}
	for _, r := range regions {
		var links []string
		for _, addr := range coordAddrs {
			p := proxy(addr)
			c.regionLinks[r] = append(c.regionLinks[r], p)
			links = append(links, p.Addr())
		}
		c.regionAddrs[r] = freeAddr(t)
		c.regions[r] = &proc{t: t, name: "region " + r, bin: bin, log: filepath.Join(dir, "region-"+r+".stderr"),
			args: []string{"quota", "region", "--name", r, "--coordinator", strings.Join(links, ","), "--listen", c.regionAddrs[r],
				"--config", filepath.Join(dir, "quota.yaml"), "--event-log", filepath.Join(dir, "region-"+r+".jsonl"),
				"--event-log-lines"}} // each decision: the check is exact, with no slack
	}
	c.config = filepath.Join(dir, "quota.yaml")
	cli, err := clientv3.New(clientv3.Config{Endpoints: etcdURLs, DialTimeout: 2 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	c.etcdCli = cli
	// Leases of 3 s, so that a partition longer than a lease fits in
	// seconds; the shipped etcd settings (session TTL 5 s: a dead leader
	// is deposed by the other replica after 1 s without keep-alives).
	cfg := `cluster: e2e
regions:
  eu: {token: "eu-token-0123456789abcdef"}
  us: {token: "us-token-0123456789abcdef"}
  ap: {token: "ap-token-0123456789abcdef"}
tenants:
  - {name: acme, rate: 200, burst: 400, mode: hard, lease_duration: 3s, skew_margin: 200ms}
  - {name: beta, rate: 100, burst: 100, mode: best-effort, emergency: 20, lease_duration: 3s, skew_margin: 200ms}
agent: {retry: 100ms, max_retry: 500ms}
`
	if err := os.WriteFile(c.config, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	return c
}

func (c *cluster) startEtcd() {
	for _, p := range c.etcd {
		p.start()
	}
	c.waitEtcd()
}

// waitEtcd waits until every member answers healthy on its client port.
func (c *cluster) waitEtcd() {
	c.waitFor("etcd", func() bool {
		for _, p := range c.etcdClient {
			resp, err := http.Get(p.URL() + "/health")
			if err != nil {
				return false
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if !strings.Contains(string(body), `"health":"true"`) {
				return false
			}
		}
		return true
	})
}

// startCoordinators starts every replica and waits until each serves and
// one leads: a replica that exits at start (its port taken meanwhile, etcd
// not answering) fails the test here, in its own words, and not later as
// a missing event log.
func (c *cluster) startCoordinators() {
	for _, p := range c.coords {
		p.start()
	}
	c.waitCoordinators()
}

func (c *cluster) waitCoordinators() {
	c.waitFor("every coordinator serving, one leading", func() bool {
		for _, p := range c.coords {
			if !p.running() {
				c.t.Fatalf("%s exited at start; its output ends:\n%s", p.name, tailOf(p.log, 2000))
			}
			resp, err := http.Get("http://" + p.args[slicesIndex(p.args, "--listen")+1] + "/healthz")
			if err != nil {
				return false
			}
			resp.Body.Close()
		}
		return c.leaderOrNone() >= 0
	})
}

// tailOf is the last n bytes of the file at path, for a failure's message
// (the test's folder is gone once it fails).
func tailOf(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	return string(b[max(0, len(b)-n):])
}

// stopEverything stops every process with SIGTERM — the regions, the
// coordinators, etcd — each of which must say that it stopped.
func (c *cluster) stopEverything() {
	for _, r := range regions {
		c.stopSaying(c.regions[r], "quota region: stopped")
	}
	for _, p := range c.coords {
		c.stopSaying(p, "quota coordinator: stopped")
	}
	c.stopEtcd()
	c.t.Log("stopped every process (SIGTERM)")
}

// restartEachInTurn stops each process with SIGTERM and starts it again,
// one at a time, waiting for the cluster to be whole before the next, in
// the order of a rolling upgrade (docs/quota/operations.md, "Rolling upgrade"): the
// coordinators that follow, then the leader; the regions; the etcd
// members.
func (c *cluster) restartEachInTurn() {
	lead := c.leader()
	var order []int
	for k := range c.coords {
		if k != lead {
			order = append(order, k)
		}
	}
	for _, k := range append(order, lead) {
		p := c.coords[k]
		c.stopSaying(p, "quota coordinator: stopped")
		p.start()
		c.waitCoordinators()
		c.t.Logf("restarted coordinator %d (SIGTERM; the leader: %v)", k, k == lead)
	}
	for _, r := range regions {
		c.stopSaying(c.regions[r], "quota region: stopped")
		c.regions[r].start()
		c.waitRegions()
		c.t.Logf("restarted region %s (SIGTERM)", r)
	}
	for i, p := range c.etcd {
		p.stop()
		p.start()
		c.waitEtcd()
		c.t.Logf("restarted etcd member %d (SIGTERM)", i)
	}
}

// stopSaying stops p with SIGTERM, and checks that its output said what
// (that it stopped) once more than before; a process killed earlier
// (kill -9) is left as it is.
func (c *cluster) stopSaying(p *proc, what string) {
	c.t.Helper()
	if !p.running() {
		return
	}
	before := strings.Count(tailOf(p.log, 1<<30), what)
	p.stop()
	if after := strings.Count(tailOf(p.log, 1<<30), what); after != before+1 {
		c.t.Errorf("%s: SIGTERM; its output says %q %d times, %d before: want once more; it ends:\n%s", p.name, what, after, before, tailOf(p.log, 2000))
	}
}

// grantGap is the longest time between grants (any coordinator's, in
// their logs) from t0 to t1, counting from t0 and to t1.
func (c *cluster) grantGap(t0, t1 time.Time) time.Duration {
	var at []int64
	for k := range c.coords {
		f, err := os.Open(filepath.Join(c.dir, fmt.Sprintf("coordinator-%d.jsonl", k)))
		if err != nil {
			c.t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if e, err := eventlog.ParseEvent(sc.Bytes()); err == nil && e.Kind == eventlog.Lease && e.T >= t0.UnixNano() && e.T <= t1.UnixNano() {
				at = append(at, e.T)
			}
		}
		f.Close()
	}
	slices.Sort(at)
	gap, last := int64(0), t0.UnixNano()
	for _, t := range append(at, t1.UnixNano()) {
		gap, last = max(gap, t-last), t
	}
	return time.Duration(gap)
}

func (c *cluster) startRegions() {
	for _, r := range regions {
		c.regions[r].start()
	}
	c.waitRegions()
}

func (c *cluster) waitRegions() {
	c.waitFor("the regions' decision APIs", func() bool {
		for _, r := range regions {
			if _, err := http.Get("http://" + c.regionAddrs[r] + "/v1/status"); err != nil {
				return false
			}
		}
		return true
	})
}

func (c *cluster) waitFor(what string, ok func() bool) {
	c.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			c.t.Fatalf("%s not ready within 60 s (logs in %s)", what, c.dir)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// leaderOrNone finds the coordinator that answers an empty renewal with
// 200: the leader; −1 if none does.
func (c *cluster) leaderOrNone() int {
	for k, p := range c.coords {
		if !p.running() {
			continue
		}
		addr := p.args[slicesIndex(p.args, "--listen")+1]
		req, _ := http.NewRequest("POST", "http://"+addr+"/v1/renew", strings.NewReader(`{"requests":[]}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer eu-token-0123456789abcdef")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			continue
		}
		resp.Body.Close()
		if resp.StatusCode == 200 {
			return k
		}
	}
	return -1
}

func slicesIndex(s []string, v string) int {
	for i, x := range s {
		if x == v {
			return i
		}
	}
	return -1
}

func (c *cluster) leader() int {
	c.t.Helper()
	k := c.leaderOrNone()
	if k < 0 {
		c.t.Fatal("no coordinator leads")
	}
	return k
}

func (c *cluster) stopRegions() {
	for _, r := range regions {
		c.regions[r].stop()
	}
}

func (c *cluster) stopCoordinators() {
	for _, p := range c.coords {
		p.stop()
	}
}

func (c *cluster) stopEtcd() {
	for _, p := range c.etcd {
		p.stop()
	}
}

func (c *cluster) stopAll() {
	c.stopRegions()
	c.stopCoordinators()
	c.stopEtcd()
	for _, p := range c.proxies {
		p.Close()
	}
	c.proxies = nil
	if c.etcdCli != nil {
		c.etcdCli.Close()
		c.etcdCli = nil
	}
}

// etcdLeader is the index of the member that leads etcd, and its member
// id, as the members' own status says.
func (c *cluster) etcdLeader() (int, uint64) {
	c.t.Helper()
	for i, p := range c.etcdClient {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		st, err := c.etcdCli.Status(ctx, p.URL())
		cancel()
		if err == nil && st.Leader == st.Header.MemberId {
			return i, st.Leader
		}
	}
	c.t.Fatal("etcd has no leader")
	return 0, 0
}

// waitEtcdLeader returns when a member names a leader other than dead.
func (c *cluster) waitEtcdLeader(dead uint64) time.Time {
	c.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		for _, p := range c.etcdClient {
			ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
			st, err := c.etcdCli.Status(ctx, p.URL())
			cancel()
			if err == nil && st.Leader != 0 && st.Leader != dead {
				return time.Now()
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	c.t.Fatal("etcd elected no new leader within 20 s")
	return time.Time{}
}

// etcdTerm is the highest raft term a member reports: it grows with every
// etcd election.
func (c *cluster) etcdTerm() uint64 {
	var term uint64
	for _, p := range c.etcdClient {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		st, err := c.etcdCli.Status(ctx, p.URL())
		cancel()
		if err == nil {
			term = max(term, st.RaftTerm)
		}
	}
	return term
}

// coordinatorEvents are the events of both coordinators' logs.
func (c *cluster) coordinatorEvents() []eventlog.Event {
	var out []eventlog.Event
	for k := range c.coords {
		f, err := os.Open(filepath.Join(c.dir, fmt.Sprintf("coordinator-%d.jsonl", k)))
		if err != nil {
			c.t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if e, err := eventlog.ParseEvent(sc.Bytes()); err == nil {
				out = append(out, e)
			}
		}
		f.Close()
	}
	return out
}

// firstGrantAt is how long after t0 the first lease was granted; −1 if
// none was.
func (c *cluster) firstGrantAt(t0 time.Time) time.Duration {
	first := int64(-1)
	for _, e := range c.coordinatorEvents() {
		if e.Kind == eventlog.Lease && e.T >= t0.UnixNano() && (first < 0 || e.T < first) {
			first = e.T
		}
	}
	if first < 0 {
		return -1
	}
	return time.Duration(first - t0.UnixNano())
}

// restartsAfter counts the coordinators' restart events after t0: each is
// a lead taken (after a step-down, or by the other replica).
func (c *cluster) restartsAfter(t0 time.Time) int {
	n := 0
	for _, e := range c.coordinatorEvents() {
		if e.Kind == eventlog.Restart && e.T > t0.UnixNano() {
			n++
		}
	}
	return n
}

func (c *cluster) logs() []string {
	var out []string
	for k := range c.coords {
		out = append(out, filepath.Join(c.dir, fmt.Sprintf("coordinator-%d.jsonl", k)))
	}
	for _, r := range regions {
		out = append(out, filepath.Join(c.dir, "region-"+r+".jsonl"))
	}
	return out
}

// firstGrantAfter reads the coordinators' logs for the first lease
// granted after t by an epoch that started after t: how long after t
// renewals resumed.
func (c *cluster) firstGrantAfter(t0 time.Time) time.Duration {
	var restarts, leases []eventlog.Event
	for _, e := range c.coordinatorEvents() {
		switch e.Kind {
		case eventlog.Restart:
			restarts = append(restarts, e)
		case eventlog.Lease:
			leases = append(leases, e)
		}
	}
	var epoch uint64
	for _, e := range restarts {
		if e.T > t0.UnixNano() && (epoch == 0 || e.Epoch < epoch) {
			epoch = e.Epoch
		}
	}
	first := int64(0)
	for _, e := range leases {
		if e.Epoch == epoch && (first == 0 || e.T < first) {
			first = e.T
		}
	}
	if first == 0 {
		return 0
	}
	return time.Duration(first - t0.UnixNano())
}

// traffic drives requests into the regions' decision APIs.
type traffic struct {
	c      *cluster
	share  atomic.Pointer[map[string]float64]
	cancel context.CancelFunc
	wg     sync.WaitGroup
	mu     sync.Mutex
	count  map[string]map[string]int64 // region → tenant → allowed
}

// perRegion is the requests a second into a region at share 1: acme's
// R is 200, so three regions at 150 a second each offer more than it.
const perRegion = 150

func (c *cluster) drive() *traffic {
	ctx, cancel := context.WithCancel(context.Background())
	tr := &traffic{c: c, cancel: cancel, count: map[string]map[string]int64{}}
	none := map[string]float64{}
	tr.share.Store(&none)
	client := &http.Client{Timeout: 2 * time.Second}
	for _, r := range regions {
		tr.count[r] = map[string]int64{}
		for _, tenant := range []string{"acme", "beta"} {
			tr.wg.Go(func() {
				tick := time.NewTicker(time.Second / perRegion)
				defer tick.Stop()
				debt := 0.0
				for {
					select {
					case <-ctx.Done():
						return
					case <-tick.C:
					}
					debt += (*tr.share.Load())[r]
					for ; debt >= 1; debt-- {
						ok := postAllow(client, c.regionAddrs[r], tenant)
						if ok {
							tr.mu.Lock()
							tr.count[r][tenant]++
							tr.mu.Unlock()
						}
					}
				}
			})
		}
	}
	return tr
}

func postAllow(client *http.Client, addr, tenant string) bool {
	resp, err := client.Post("http://"+addr+"/v1/allow", "application/json", strings.NewReader(`{"tenant":"`+tenant+`","n":1}`))
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	var ans struct {
		Allowed bool `json:"allowed"`
	}
	json.NewDecoder(resp.Body).Decode(&ans) //nolint:errcheck
	return ans.Allowed
}

func (tr *traffic) set(share map[string]float64) { tr.share.Store(&share) }
func (tr *traffic) pause()                       { tr.set(map[string]float64{}) }
func (tr *traffic) stop()                        { tr.cancel(); tr.wg.Wait() }

func (tr *traffic) admitted() map[string]map[string]int64 {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	out := map[string]map[string]int64{}
	for r, m := range tr.count {
		out[r] = map[string]int64{}
		for t, n := range m {
			out[r][t] = n
		}
	}
	return out
}

func (tr *traffic) admittedSince(before map[string]map[string]int64) map[string]map[string]int64 {
	now := tr.admitted()
	for r, m := range now {
		for t := range m {
			m[t] -= before[r][t]
		}
	}
	return now
}
