package agent_test

import (
	"fmt"

	"github.com/afloat/afloat/quota/agent"
	"github.com/afloat/afloat/quota/config"
)

// The config's envoy and proxy sections say whose quota a descriptor or
// a request spends; --upstream is checked before the proxy starts.
func ExampleCheckUpstream() {
	cfg, err := config.ParseConfig([]byte(`
regions: {eu: {token: "eu-token-0123456789"}}
tenants: [{name: acme, rate: 500, burst: 6000, costs: {/export: 100}}]
envoy:
  domain: edge
  descriptors:
    - {entries: [{key: tenant, value: acme}, {key: path, value: /export}], tenant: acme, endpoint: /export}
proxy:
  routes: [{host: api.acme.example, tenant: acme}]
`))
	fmt.Println(err, cfg.Envoy.Headers)
	u, err := agent.CheckUpstream("http://127.0.0.1:8080/app")
	fmt.Println(u, err)
	_, err = agent.CheckUpstream("ftp://files.example")
	fmt.Println(err)
	// Output:
	// <nil> x-ratelimit
	// http://127.0.0.1:8080/app <nil>
	// agent: invalid options: --upstream "ftp://files.example": scheme "ftp": want http or https
}
