package servicetest_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/afloat/afloat/quota/agent"
	"github.com/afloat/afloat/quota/coordinator/replica"
	"github.com/afloat/afloat/quota/eventlog"
	"github.com/afloat/afloat/quota/internal/opstest"
	"github.com/afloat/afloat/quota/servicetest"
)

// TestClusterStartsAndStops: a coordinator on the cluster's member and an
// agent that gets its lease through it; Stop ends a process (twice is
// once), and the event logs of both are there to check.
func TestClusterStartsAndStops(t *testing.T) {
	c := servicetest.New(t, opstest.ConfigFile("good.yaml"))
	coord := c.Coordinator(replica.Options{})
	eu := c.Agent(agent.Options{Name: "eu"}, nil)
	if len(eu.Limiter().Tenants()) != 1 {
		t.Fatalf("eu serves %v, want acme", eu.Limiter().Tenants())
	}
	opstest.WaitFor(t, "eu's lease", func() bool { code, _ := opstest.Readyz(t, eu.URL); return code == 200 })
	opstest.Must(t, eu.Stop())
	opstest.Must(t, eu.Stop())
	select {
	case <-eu.Done():
	default:
		t.Fatal("the agent stopped, but is not done")
	}
	opstest.Must(t, coord.Stop())
	if n := len(c.EventLogs()); n != 2 {
		t.Fatalf("%d event logs, want the coordinator's and the agent's", n)
	}
	rep, events := c.Check()
	leases := 0
	for _, e := range events {
		if e.Kind == eventlog.Lease {
			leases++
		}
	}
	if rep.Violations != 0 || leases == 0 {
		t.Fatalf("%d violations, %d leases in the logs; want none, and eu's lease: %v", rep.Violations, leases, rep.Messages)
	}
}

// TestAgentCountsDecisions: an agent asked for counts (as production
// runs it by default) writes its decisions as counts over its interval,
// no line for each, and its log, rotated as it goes, checks whole with the
// coordinator's: every token the load had admitted is in the counts.
func TestAgentCountsDecisions(t *testing.T) {
	c := servicetest.New(t, opstest.ConfigFile("good.yaml"))
	coord := c.Coordinator(replica.Options{})
	eu := c.Agent(agent.Options{Name: "eu", EventLogInterval: 100 * time.Millisecond, EventLogMaxMB: 1, EventLogKeep: 5}, nil)
	opstest.WaitFor(t, "eu's lease", func() bool { code, _ := opstest.Readyz(t, eu.URL); return code == 200 })
	load := eu.Load("acme", 5)
	opstest.WaitFor(t, "admissions over three intervals", func() bool { return load.Admitted() >= 300 })
	load.Stop()
	opstest.Must(t, eu.Stop())
	opstest.Must(t, coord.Stop())
	rep, events := c.Check()
	if rep.Violations != 0 || rep.Counts == 0 || rep.Admitted != load.Admitted() || rep.CountInterval > int64(100*time.Millisecond) {
		t.Fatalf("counted: %d violations (%v), %d counts over up to %v, %d tokens admitted; the load had %d",
			rep.Violations, rep.Messages, rep.Counts, time.Duration(rep.CountInterval), rep.Admitted, load.Admitted())
	}
	for _, e := range events {
		if e.Kind == eventlog.Admit || e.Kind == eventlog.Reject {
			t.Fatalf("a line for a decision in a counted log: %+v", e)
		}
	}
	t.Logf("%d tokens in %d counts; slack %v tokens", rep.Admitted, rep.Counts, rep.Slack)
}

// TestMemoryCoordinator: an agent renewing through a coordinator in
// memory (no etcd: this runs in any build) gets a lease, and load on its
// decision API is admitted; without event logs, Check has none to read.
// A down coordinator leaves its agent serving but not ready.
func TestMemoryCoordinator(t *testing.T) {
	c := servicetest.New(t, opstest.ConfigFile("good.yaml"))
	c.NoEventLogs = true
	coord := c.MemoryCoordinator()
	eu := c.Agent(agent.Options{Name: "eu"}, nil)
	opstest.WaitFor(t, "eu's lease", func() bool { code, _ := opstest.Readyz(t, eu.URL); return code == 200 })
	load := eu.Load("acme", 5)
	opstest.WaitFor(t, "an admission", func() bool { return load.Admitted() > 0 })
	load.Stop()
	load.Stop()
	if n := load.Admitted(); n%5 != 0 {
		t.Errorf("%d tokens admitted, want a multiple of the 5 a request asks", n)
	}
	opstest.Must(t, eu.Stop())
	opstest.Must(t, coord.Stop())
	if logs := c.EventLogs(); len(logs) != 0 {
		t.Errorf("event logs %v, want none", logs)
	}

	down := servicetest.New(t, opstest.ConfigFile("good.yaml"))
	down.DownCoordinator()
	us := down.Agent(agent.Options{Name: "us"}, nil)
	opstest.WaitFor(t, "a refused renewal", func() bool { return us.Limiter().RunStats().RenewFailures > 0 })
	if code, _ := opstest.Readyz(t, us.URL); code != 503 {
		t.Errorf("an agent of a down coordinator: /readyz %d, want 503", code)
	}
}

// TestCoordinatorRefused: a replica that cannot start returns why, and
// the cluster goes on.
func TestCoordinatorRefused(t *testing.T) {
	c := servicetest.New(t, opstest.ConfigFile("good.yaml"))
	err := c.CoordinatorRefused(replica.Options{Etcd: []string{"http://127.0.0.1:1"}, Advertise: "no-scheme"})
	if !errors.Is(err, replica.ErrOptions) || !strings.Contains(err.Error(), "--advertise") {
		t.Fatalf("a bad --advertise: %v, want a refusal naming it", err)
	}
	if n := len(c.EventLogs()); n != 0 {
		t.Fatalf("%d event logs, want none: a refused coordinator's is not one Check reads", n)
	}
}
