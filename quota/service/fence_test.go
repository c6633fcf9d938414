//go:build embedetcd

package service

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/afloat/afloat/quota/eventlog"
)

// fenceConfig: one hard tenant in two regions, short leases so that the
// tests see several renewals a second; a renewal's first wait of 500 ms,
// so that a loaded machine's slow etcd write does not fail one.
const fenceConfig = `regions:
  eu: {token: "eu-token-0123456789abcdef"}
  us: {token: "us-token-0123456789abcdef"}
tenants:
  - {name: acme, rate: 200, burst: 100, lease_duration: 2s, skew_margin: 200ms}
agent: {retry: 500ms, max_retry: 2s}
`

// fenceCluster is a coordinator on an embedded etcd member and region
// agents, each with its event log, in one test's folder.
type fenceCluster struct {
	t     *testing.T
	cfg   *Config
	dir   string
	coord string // the coordinator's address
	logs  []string
	log   *slog.Logger
	wg    sync.WaitGroup
}

func startFenceCluster(t *testing.T, ctx context.Context) *fenceCluster {
	t.Helper()
	cfg, err := ParseConfig([]byte(fenceConfig))
	if err != nil {
		t.Fatal(err)
	}
	c := &fenceCluster{t: t, cfg: cfg, dir: t.TempDir(), log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	addr := make(chan string, 1)
	c.logs = append(c.logs, filepath.Join(c.dir, "coordinator.jsonl"))
	c.wg.Go(func() {
		err := RunCoordinator(ctx, CoordinatorOptions{Config: cfg, Listen: "127.0.0.1:0", DataDir: filepath.Join(c.dir, "etcd"),
			Logger: c.log, EventLog: c.logs[0], Ready: func(a string) { addr <- a }})
		if err != nil {
			t.Error(err)
		}
	})
	select {
	case c.coord = <-addr:
	case <-time.After(60 * time.Second):
		t.Fatal("the coordinator did not start")
	}
	return c
}

// agent starts a region agent until ctx ends; logger nil discards its log.
func (c *fenceCluster) agent(ctx context.Context, region, name string, logger *slog.Logger) (*Agent, string, *sync.WaitGroup) {
	c.t.Helper()
	if logger == nil {
		logger = c.log
	}
	path := filepath.Join(c.dir, "region-"+name+".jsonl")
	c.logs = append(c.logs, path)
	a, err := NewAgent(RegionOptions{Config: c.cfg, Name: region, Coordinators: []string{"http://" + c.coord}, Listen: "127.0.0.1:0",
		Logger: logger, EventLog: path})
	if err != nil {
		c.t.Fatal(err)
	}
	ready := make(chan string, 1)
	a.o.Ready = func(s string) { ready <- s }
	var done sync.WaitGroup
	done.Go(func() {
		if err := a.Run(ctx); err != nil {
			c.t.Error(err)
		}
	})
	return a, "http://" + <-ready, &done
}

// check merges the logs and checks them as afloat quota check does.
func (c *fenceCluster) check() (eventlog.Report, []eventlog.Event) {
	c.t.Helper()
	var all collect
	for _, path := range c.logs {
		f, err := os.Open(path)
		if err != nil {
			c.t.Fatal(err)
		}
		if err := eventlog.ReadLog(f, &all); err != nil {
			c.t.Fatalf("%s: %v", path, err)
		}
		f.Close()
	}
	events := eventlog.Merge(all.events)
	chk := eventlog.NewChecker()
	var end int64
	for i := range events {
		chk.Write(&events[i])
		end = max(end, events[i].T)
	}
	return chk.Finish(end), events
}

// load sends requests of 5 tokens to an agent's decision API every 2 ms
// or so (about 2,500 tokens a second, against R = 200 for the tenant)
// until ctx ends, counting what it admitted.
func load(ctx context.Context, wg *sync.WaitGroup, base string, admitted *atomic.Int64) {
	client := &http.Client{Timeout: 2 * time.Second}
	wg.Go(func() {
		for ctx.Err() == nil {
			resp, err := client.Post(base+"/v1/allow", "application/json", strings.NewReader(`{"tenant":"acme","n":5}`))
			if err == nil {
				var ans AllowAnswer
				json.NewDecoder(resp.Body).Decode(&ans) //nolint:errcheck
				resp.Body.Close()
				if ans.Allowed {
					admitted.Add(5)
				}
			}
			time.Sleep(2 * time.Millisecond)
		}
	})
}

// TestTwoAgentsOneRegion: two agents run with --name eu beside an agent
// of us, against a coordinator on an embedded etcd, every agent loaded
// far above R. The second eu agent is refused at attach and stands by —
// not ready, saying why, admitting nothing — while the first holds eu;
// the first stops cleanly (its leases go back, it detaches) and the
// second takes over (how soon is logged, not asserted). The merged event
// logs pass the checker (afloat quota check's), and the admissions of all
// three agents together stay within R·Δ + B in every window. (Before
// agents were fenced, both eu agents held leases at once and the bound
// broke within seconds: docs/quota.md, "Failure modes, measured".)
func TestTwoAgentsOneRegion(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a cluster with traffic for about 7 s")
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c := startFenceCluster(t, ctx)
	defer c.wg.Wait()
	defer cancel()

	firstCtx, stopFirst := context.WithCancel(ctx)
	defer stopFirst()
	_, first, firstDone := c.agent(firstCtx, "eu", "eu-1", nil)
	_, us, usDone := c.agent(ctx, "us", "us", nil)
	waitFor(t, "the first eu agent ready", func() bool { code, _ := readyz(t, first); return code == 200 })
	var secondLog syncBuffer
	secondAgent, second, secondDone := c.agent(ctx, "eu", "eu-2", slog.New(slog.NewTextHandler(&secondLog, nil)))

	trafficCtx, stopTraffic := context.WithCancel(ctx)
	var traffic sync.WaitGroup
	var firstAdmitted, secondAdmitted, usAdmitted atomic.Int64
	load(trafficCtx, &traffic, first, &firstAdmitted)
	load(trafficCtx, &traffic, second, &secondAdmitted)
	load(trafficCtx, &traffic, us, &usAdmitted)

	time.Sleep(3 * time.Second)
	code, rd := readyz(t, second)
	if code != 503 || !strings.Contains(rd.Standby, "region eu is held by another agent") {
		t.Errorf("the second eu agent's /readyz while the first holds eu: %d %+v", code, rd)
	}
	if n := secondAdmitted.Load(); n != 0 {
		t.Errorf("the second eu agent admitted %d tokens while the first held eu", n)
	}
	if secondAgent.Limiter().RunStats().Installed != 0 {
		t.Errorf("the second eu agent installed a lease while the first held eu")
	}
	if got := secondLog.String(); strings.Count(got, "waiting until its leases end") != 1 {
		t.Errorf("the second agent's log: want the wait said once:\n%s", got)
	}
	during := firstAdmitted.Load()

	stopFirst() // a clean stop: leases back, then detach
	firstDone.Wait()
	stoppedAt := time.Now()
	waitFor(t, "the second eu agent taking over", func() bool { return secondAdmitted.Load() > 0 })
	took := time.Since(stoppedAt)
	time.Sleep(3 * time.Second)
	stopTraffic()
	traffic.Wait()
	if code, rd := readyz(t, second); code != 200 {
		t.Errorf("the second eu agent's /readyz once it holds eu: %d %+v", code, rd)
	}
	cancel()
	secondDone.Wait()
	usDone.Wait()
	c.wg.Wait()

	t.Logf("admitted: first eu agent %d (%d while both ran), second %d, us %d; the second took over %v after the first stopped",
		firstAdmitted.Load(), during, secondAdmitted.Load(), usAdmitted.Load(), took.Round(time.Millisecond))
	if !strings.Contains(secondLog.String(), "attached the region") {
		t.Errorf("the second agent's log does not say it attached:\n%s", secondLog.String())
	}
	rep, _ := c.check()
	t.Logf("check: %d violations, worst window %.1f tokens from R·Δ + B, admitted %d, leases %d, peak rate %.1f",
		rep.Violations, rep.WorstExcess, rep.Admitted, rep.Leases, rep.PeakRate)
	if rep.Violations != 0 || rep.WorstExcess > 0 {
		t.Fatalf("%d violations (worst excess %.1f): %v", rep.Violations, rep.WorstExcess, rep.Messages)
	}
	if total := firstAdmitted.Load() + secondAdmitted.Load() + usAdmitted.Load(); total != rep.Admitted {
		t.Errorf("the logs admitted %d tokens, the clients saw %d", rep.Admitted, total)
	}
}

// TestForgedEpochUnderTraffic: while agents of eu and us admit under
// load, eu's token sends ten renewals and returns a second claiming epoch
// 2⁶⁴−1 (as the old protocol's body, and with a made-up incarnation), and
// an attach. The coordinator refuses them all and stays leader at its
// epoch — no step down, no restart — not one renewal of either agent
// fails, us admits on, and the merged logs pass the checker.
// (The coordinator used to step down on such a claim and lead again at
// the same epoch: every tenant in another region refused traffic, and
// the logs failed with "restart at epoch 3, not above 3".)
func TestForgedEpochUnderTraffic(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a cluster with traffic for about 5 s")
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c := startFenceCluster(t, ctx)
	defer c.wg.Wait()
	defer cancel()
	var agentLog syncBuffer
	euAgent, eu, euDone := c.agent(ctx, "eu", "eu", slog.New(slog.NewTextHandler(&agentLog, nil)))
	usAgent, us, usDone := c.agent(ctx, "us", "us", slog.New(slog.NewTextHandler(&agentLog, nil)))
	waitFor(t, "both agents ready", func() bool {
		a, _ := readyz(t, eu)
		b, _ := readyz(t, us)
		return a == 200 && b == 200
	})
	_, coordBefore := readyz(t, "http://"+c.coord)

	trafficCtx, stopTraffic := context.WithCancel(ctx)
	var traffic sync.WaitGroup
	var euAdmitted, usAdmitted atomic.Int64
	load(trafficCtx, &traffic, eu, &euAdmitted)
	load(trafficCtx, &traffic, us, &usAdmitted)
	time.Sleep(time.Second)
	euFailed, usFailed := euAgent.Limiter().RunStats().RenewFailures, usAgent.Limiter().RunStats().RenewFailures

	forge := func(path, body string) (int, string) {
		req, _ := http.NewRequest("POST", "http://"+c.coord+path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer eu-token-0123456789abcdef")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(raw)
	}
	forged := []struct{ path, body string }{
		{"/v1/renew", `{"requests":[{"tenant":"acme","region":"eu","seq":1,"epoch":18446744073709551615}]}`},
		{"/v1/renew", `{"incarnation":4711,"requests":[{"tenant":"acme","region":"eu","seq":2,"epoch":18446744073709551615}]}`},
		{"/v1/return", `{"returns":[{"tenant":"acme","region":"eu","lease_id":1,"epoch":18446744073709551615}]}`},
		{"/v1/return", `{"incarnation":4711,"returns":[{"tenant":"acme","region":"eu","lease_id":1,"epoch":18446744073709551615}]}`},
		{"/v1/region/attach", `{"agent":"mallory"}`},
	}
	// Ten forged calls a second for 3 s; us's admissions counted each 0.5 s.
	var perHalf []int64
	last := usAdmitted.Load()
	tick := time.NewTicker(100 * time.Millisecond)
	for i := range 30 {
		<-tick.C
		f := forged[i%len(forged)]
		code, body := forge(f.path, f.body)
		if code == 200 && !strings.Contains(body, `"code":"unverified_epoch"`) && !strings.Contains(body, `"code":"superseded"`) {
			t.Errorf("step %d: forged %s %s: 200 %s, want it refused", i, f.path, f.body, body)
		}
		if i%5 == 4 {
			now := usAdmitted.Load()
			perHalf = append(perHalf, now-last)
			last = now
		}
	}
	tick.Stop()
	time.Sleep(time.Second)
	stopTraffic()
	traffic.Wait()
	_, coordAfter := readyz(t, "http://"+c.coord)
	euFailed = euAgent.Limiter().RunStats().RenewFailures - euFailed
	usFailed = usAgent.Limiter().RunStats().RenewFailures - usFailed
	cancel()
	euDone.Wait()
	usDone.Wait()
	c.wg.Wait()

	t.Logf("us admitted %v tokens in each half second of the forgery; renewal failures: eu %d, us %d; epoch %d then %d",
		perHalf, euFailed, usFailed, coordBefore.Epoch, coordAfter.Epoch)
	if usFailed != 0 || euFailed != 0 {
		t.Errorf("renewals failed while eu's token forged epochs: us %d, eu %d; the agents' log:\n%s", usFailed, euFailed, agentLog.String())
	}
	var during int64
	for _, n := range perHalf {
		during += n
	}
	if during == 0 {
		t.Errorf("us admitted nothing during the forgery")
	}
	if coordAfter.Role != "leader" || coordAfter.Epoch != coordBefore.Epoch {
		t.Errorf("coordinator before %+v, after %+v: want the same leader at the same epoch", coordBefore, coordAfter)
	}
	rep, events := c.check()
	restarts := 0
	for _, e := range events {
		if e.Kind == eventlog.Restart || e.Kind == eventlog.Fenced {
			restarts++
		}
	}
	t.Logf("check: %d violations, worst window %.1f tokens from R·Δ + B, admitted %d; %d restart or fenced events",
		rep.Violations, rep.WorstExcess, rep.Admitted, restarts)
	if rep.Violations != 0 {
		t.Fatalf("%d violations: %v", rep.Violations, rep.Messages)
	}
	if restarts != 1 {
		t.Fatalf("%d restart or fenced events, want the one restart at the start: %s", restarts, fmt.Sprint(rep.Messages))
	}
}
