package config_test

import (
	"errors"
	"fmt"

	"github.com/afloat/afloat/quota/config"
)

// A config file is checked whole; an error names the field.
func ExampleParseConfig() {
	cfg, err := config.ParseConfig([]byte(`
regions:
  eu: {token: "eu-token-0123456789"}
  us: {token: "us-token-0123456789"}
tenants:
  - {name: acme, rate: 500, burst: 6000}
`))
	if err != nil {
		panic(err)
	}
	t := cfg.QuotaTenants()[0]
	fmt.Println(t.Name, t.Rate, t.Burst, t.Mode, t.Regions, t.LeaseDuration)

	_, err = config.ParseConfig([]byte(`
regions: {eu: {token: "eu-token-0123456789"}}
tenants: [{name: acme, rate: -5, burst: 10}]
`))
	fmt.Println(errors.Is(err, config.ErrConfigFile), err)
	// Output:
	// acme 500 6000 hard [eu us] 10s
	// true config: invalid config file: tenants[0].rate -5: want above 0 and at most 1e9 tokens a second
}
