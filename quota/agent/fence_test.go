//go:build embedetcd

package agent_test

import (
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/afloat/afloat/quota/agent"
	"github.com/afloat/afloat/quota/coordinator/replica"
	"github.com/afloat/afloat/quota/eventlog"
	"github.com/afloat/afloat/quota/internal/opstest"
	"github.com/afloat/afloat/quota/servicetest"
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

// TestTwoAgentsOneRegion: two agents run with --name eu beside an agent
// of us, against a coordinator on an embedded etcd, every agent loaded
// far above R. The second eu agent is refused at attach and stands by —
// not ready, saying why, admitting nothing — while the first holds eu;
// the first stops cleanly (its leases go back, it detaches) and the
// second takes over (how soon is logged, not asserted). The merged event
// logs pass the checker (afloat quota check's), and the admissions of all
// three agents together stay within R·Δ + B in every window. (Before
// agents were fenced, both eu agents held leases at once and the bound
// broke within seconds: docs/quota/design.md, "Failure modes,
// measured".)
func TestTwoAgentsOneRegion(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a cluster with traffic for about 7 s")
	}
	c := servicetest.New(t, fenceConfig)
	coord := c.Coordinator(replica.Options{})
	firstAgent := c.Agent(agent.Options{Name: "eu"}, nil)
	usAgent := c.Agent(agent.Options{Name: "us"}, nil)
	first := firstAgent.URL
	opstest.WaitFor(t, "the first eu agent ready", func() bool { code, _ := opstest.Readyz(t, first); return code == 200 })
	var secondLog opstest.Buffer
	secondAgent := c.Agent(agent.Options{Name: "eu", Logger: slog.New(slog.NewTextHandler(&secondLog, nil))}, nil)
	second := secondAgent.URL

	// Requests of 5 tokens every 2 ms or so into each agent: about 2,500
	// tokens a second, against R = 200 for the tenant.
	firstLoad, secondLoad, usLoad := firstAgent.Load("acme", 5), secondAgent.Load("acme", 5), usAgent.Load("acme", 5)

	time.Sleep(3 * time.Second)
	code, rd := opstest.Readyz(t, second)
	if code != 503 || !strings.Contains(rd.Standby, "region eu is held by another agent") {
		t.Errorf("the second eu agent's /readyz while the first holds eu: %d %+v", code, rd)
	}
	if n := secondLoad.Admitted(); n != 0 {
		t.Errorf("the second eu agent admitted %d tokens while the first held eu", n)
	}
	if secondAgent.Limiter().RunStats().Installed != 0 {
		t.Errorf("the second eu agent installed a lease while the first held eu")
	}
	if got := secondLog.String(); strings.Count(got, "waiting until its leases end") != 1 {
		t.Errorf("the second agent's log: want the wait said once:\n%s", got)
	}
	during := firstLoad.Admitted()

	opstest.Must(t, firstAgent.Stop()) // a clean stop: leases back, then detach
	stoppedAt := time.Now()
	opstest.WaitFor(t, "the second eu agent taking over", func() bool { return secondLoad.Admitted() > 0 })
	took := time.Since(stoppedAt)
	time.Sleep(3 * time.Second)
	firstLoad.Stop()
	secondLoad.Stop()
	usLoad.Stop()
	if code, rd := opstest.Readyz(t, second); code != 200 {
		t.Errorf("the second eu agent's /readyz once it holds eu: %d %+v", code, rd)
	}
	opstest.Must(t, secondAgent.Stop())
	opstest.Must(t, usAgent.Stop())
	opstest.Must(t, coord.Stop())

	t.Logf("admitted: first eu agent %d (%d while both ran), second %d, us %d; the second took over %v after the first stopped",
		firstLoad.Admitted(), during, secondLoad.Admitted(), usLoad.Admitted(), took.Round(time.Millisecond))
	if !strings.Contains(secondLog.String(), "attached the region") {
		t.Errorf("the second agent's log does not say it attached:\n%s", secondLog.String())
	}
	rep, _ := c.Check()
	t.Logf("check: %d violations, worst window %.1f tokens from R·Δ + B, admitted %d, leases %d, peak rate %.1f",
		rep.Violations, rep.WorstExcess, rep.Admitted, rep.Leases, rep.PeakRate)
	if rep.Violations != 0 || rep.WorstExcess > 0 {
		t.Fatalf("%d violations (worst excess %.1f): %v", rep.Violations, rep.WorstExcess, rep.Messages)
	}
	if total := firstLoad.Admitted() + secondLoad.Admitted() + usLoad.Admitted(); total != rep.Admitted {
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
	c := servicetest.New(t, fenceConfig)
	coord := c.Coordinator(replica.Options{})
	var agentLog opstest.Buffer
	euAgent := c.Agent(agent.Options{Name: "eu", Logger: slog.New(slog.NewTextHandler(&agentLog, nil))}, nil)
	usAgent := c.Agent(agent.Options{Name: "us", Logger: slog.New(slog.NewTextHandler(&agentLog, nil))}, nil)
	eu, us := euAgent.URL, usAgent.URL
	opstest.WaitFor(t, "both agents ready", func() bool {
		a, _ := opstest.Readyz(t, eu)
		b, _ := opstest.Readyz(t, us)
		return a == 200 && b == 200
	})
	_, coordBefore := opstest.Readyz(t, coord.URL)

	euLoad, usLoad := euAgent.Load("acme", 5), usAgent.Load("acme", 5)
	time.Sleep(time.Second)
	euFailed, usFailed := euAgent.Limiter().RunStats().RenewFailures, usAgent.Limiter().RunStats().RenewFailures

	forge := func(path, body string) (int, string) {
		req, _ := http.NewRequest("POST", coord.URL+path, strings.NewReader(body))
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
	last := usLoad.Admitted()
	tick := time.NewTicker(100 * time.Millisecond)
	for i := range 30 {
		<-tick.C
		f := forged[i%len(forged)]
		code, body := forge(f.path, f.body)
		if code == 200 && !strings.Contains(body, `"code":"unverified_epoch"`) && !strings.Contains(body, `"code":"superseded"`) {
			t.Errorf("step %d: forged %s %s: 200 %s, want it refused", i, f.path, f.body, body)
		}
		if i%5 == 4 {
			now := usLoad.Admitted()
			perHalf = append(perHalf, now-last)
			last = now
		}
	}
	tick.Stop()
	time.Sleep(time.Second)
	euLoad.Stop()
	usLoad.Stop()
	_, coordAfter := opstest.Readyz(t, coord.URL)
	euFailed = euAgent.Limiter().RunStats().RenewFailures - euFailed
	usFailed = usAgent.Limiter().RunStats().RenewFailures - usFailed
	opstest.Must(t, euAgent.Stop())
	opstest.Must(t, usAgent.Stop())
	opstest.Must(t, coord.Stop())

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
	rep, events := c.Check()
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
