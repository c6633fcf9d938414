//go:build embedetcd

package replica_test

import (
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

// TestShrinkUnderLoad: a coordinator on embedded etcd and three region
// agents over HTTP, traffic well above R into every region; mid-run an
// operator shrinks R and B through the tenants API. The merged event logs
// must check with 0 violations, the shrink must show in the admissions
// (the rate after the transition within the new R·Δ + B, and well below
// the rate before), and the same logs with the shrink moved to the start
// must fail the check: the checker does hold the run to the R in force.
func TestShrinkUnderLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a cluster with traffic for about 15 s")
	}
	c := servicetest.New(t, `regions:
  eu: {token: "eu-token-0123456789abcdef"}
  us: {token: "us-token-0123456789abcdef"}
  ap: {token: "ap-token-0123456789abcdef"}
tenants:
  - {name: acme, rate: 300, burst: 600, lease_duration: 2s, skew_margin: 200ms}
operators:
  alice: {token: "alice-token-0123456789"}
agent: {retry: 100ms, max_retry: 500ms}
`)
	var audit opstest.Buffer
	coord := c.Coordinator(replica.Options{Logger: slog.New(slog.NewJSONHandler(&audit, nil))})
	addr := coord.Addr
	var agents []*servicetest.Agent
	for _, r := range []string{"eu", "us", "ap"} {
		agents = append(agents, c.Agent(agent.Options{Name: r}, nil))
	}
	// Traffic: 5 tokens a request, a request every 2 ms or so per region:
	// ~2,500 tokens a second a region against R = 300 for all three.
	var traffic []*servicetest.Traffic
	for _, a := range agents {
		traffic = append(traffic, a.Load("acme", 5))
	}
	admitted := func() (n int64) {
		for _, tr := range traffic {
			n += tr.Admitted()
		}
		return n
	}
	time.Sleep(6 * time.Second)
	before := admitted()
	// The shrink, through the API, by alice.
	req, _ := http.NewRequest("POST", "http://"+addr+"/v1/tenants/update", strings.NewReader(`{"name":"acme","rate":60,"burst":120}`))
	req.Header.Set("Authorization", "Bearer alice-token-0123456789")
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("shrink: %d %s", resp.StatusCode, body)
	}
	shrunkAt := time.Now()
	time.Sleep(9 * time.Second)
	for _, tr := range traffic {
		tr.Stop()
	}
	for _, a := range agents {
		opstest.Must(t, a.Stop())
	}
	opstest.Must(t, coord.Stop())
	t.Logf("admitted %d tokens in the 6 s before the shrink, %d in the 9 s after", before, admitted()-before)

	rep, events := c.Check()
	check := func(evs []eventlog.Event) eventlog.Report {
		chk := eventlog.NewChecker()
		var end int64
		for i := range evs {
			chk.Write(&evs[i])
			end = max(end, evs[i].T)
		}
		return chk.Finish(end)
	}
	t.Logf("check: %d violations, worst excess %.1f, admitted %d, leases %d, peak rate %.1f", rep.Violations, rep.WorstExcess, rep.Admitted, rep.Leases, rep.PeakRate)
	if rep.Violations != 0 {
		t.Fatalf("%d violations: %v", rep.Violations, rep.Messages)
	}
	// The shrink in the log, by alice, and its effect on admissions.
	var change *eventlog.Event
	for i := range events {
		if e := &events[i]; e.Kind == eventlog.Tenant && e.Why == "update" {
			change = e
		}
	}
	if change == nil || change.By != "alice" || change.Rate.Float() != 60 {
		t.Fatalf("no tenant event for the shrink by alice: %+v", change)
	}
	// The window from 4 s after the shrink (old leases of 2.2 s ended) to
	// the end of traffic: within 60·Δ + 120, and served (not 0).
	from := shrunkAt.Add(4 * time.Second).UnixNano()
	var late, first int64
	var lastT int64
	for _, e := range events {
		if e.Kind != eventlog.Admit {
			continue
		}
		if e.T < change.T {
			first += e.N
		} else if e.T >= from {
			late += e.N
			lastT = max(lastT, e.T)
		}
	}
	lateBound := 60*float64(lastT-from)/1e9 + 120
	t.Logf("admitted %d before the shrink; %d from 4 s after it (bound %.0f)", first, late, lateBound)
	if late == 0 || float64(late) > lateBound {
		t.Fatalf("after the shrink: %d admitted, want 1 to %.0f", late, lateBound)
	}
	if first < 1000 {
		t.Fatalf("%d admitted before the shrink: the traffic did not load R", first)
	}
	// Moved before the first lease, the shrink makes the first phase a
	// violation.
	moved := make([]eventlog.Event, 0, len(events))
	placed := false
	for _, e := range events {
		if e.Kind == eventlog.Tenant && e.Why == "update" {
			continue
		}
		if e.Kind == eventlog.Lease && !placed {
			early := *change
			early.T = e.T
			moved, placed = append(moved, early), true
		}
		moved = append(moved, e)
	}
	if bad := check(moved); bad.Violations == 0 {
		t.Fatal("the checker passed the run with R = 60 from the start: it does not hold the run to the R in force")
	} else {
		t.Logf("with the shrink moved to the start: %d violations, e.g. %s", bad.Violations, bad.Messages[0])
	}
	a := audit.String()
	if !strings.Contains(a, `"operator":"alice"`) || !strings.Contains(a, `tenant changed"`) || strings.Contains(a, "alice-token") {
		t.Fatalf("audit log: %s", a)
	}
}
