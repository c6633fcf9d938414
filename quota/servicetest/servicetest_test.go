//go:build embedetcd

package servicetest_test

import (
	"testing"

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
