package servicetest_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/afloat/afloat/quota/agent"
	"github.com/afloat/afloat/quota/coordinator/replica"
	"github.com/afloat/afloat/quota/servicetest"
)

// In a test: a coordinator on the cluster's embedded etcd member, an
// agent of eu renewing through it, a decision; the test's cleanup stops
// them all. Then the merged event logs, checked.
func ExampleNew() {
	var t *testing.T // the test's
	c := servicetest.New(t, `regions: {eu: {token: "eu-token-0123456789"}}
tenants: [{name: acme, rate: 500, burst: 6000}]
`)
	coord := c.Coordinator(replica.Options{})
	eu := c.Agent(agent.Options{Name: "eu"}, nil)
	resp, err := http.Post(eu.URL+"/v1/allow", "application/json", strings.NewReader(`{"tenant":"acme"}`))
	if err == nil {
		resp.Body.Close()
	}
	eu.Stop()    //nolint:errcheck // its leases go back
	coord.Stop() //nolint:errcheck
	report, _ := c.Check()
	_ = report.Violations // 0: the run kept R·Δ + B
}
