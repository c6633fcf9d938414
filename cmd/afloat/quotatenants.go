package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/afloat/afloat/quota/config"
	"github.com/afloat/afloat/quota/coordinator/replica"
	"github.com/afloat/afloat/quota/remote"
)

// tokenEnv is where an operator's token may come from instead of a file.
const tokenEnv = "AFLOAT_QUOTA_OPERATOR_TOKEN"

var tenantVerbs = []string{"list", "get", "create", "update", "delete"}

// runQuotaTenants dispatches afloat quota tenants VERB.
func runQuotaTenants(c *command, args []string) int {
	if len(args) > 0 && isHelp(args[0]) {
		return quotaTenants(c, "create", args)
	}
	if len(args) == 0 || !slices.Contains(tenantVerbs, args[0]) {
		return c.usage(fmt.Errorf("want a verb first: %s", strings.Join(tenantVerbs, ", ")))
	}
	return quotaTenants(c, args[0], args[1:])
}

// quotaTenants sends the operator's VERB to the coordinators given, through
// remote.Operator: it follows the leader among them only, so the token
// goes nowhere else.
func quotaTenants(c *command, verb string, args []string) int {
	var coords, tokenFile, name string
	var version uint64
	var tf tenantFlags
	c.StringVar(&coords, "coordinator", "", "the coordinators' `URLS` (host:port or http(s)://host:port), comma-separated")
	c.StringVar(&tokenFile, "token-file", "", "`FILE` holding the operator's token (or set "+tokenEnv+")")
	if verb != "list" {
		c.StringVar(&name, "name", "", "the tenant's `NAME`")
	}
	if verb == "create" || verb == "update" {
		tf.register(c)
	}
	if verb == "update" || verb == "delete" {
		c.Uint64Var(&version, "version", 0, "apply only if the tenant is still at `VERSION` (what get showed)")
	}
	if status, ok := c.parse(args); !ok {
		return status
	}
	spec := replica.TenantSpec{Name: name, Version: version}
	op, err := operator(coords, tokenFile)
	if err == nil && verb != "list" && name == "" {
		err = errors.New("--name: want the tenant's name")
	}
	if err != nil {
		return c.usage(err)
	}
	tf.spec(c, &spec)
	ctx, stop := interruptible()
	defer stop()
	var out []byte
	switch verb {
	case "list":
		out, err = op.List(ctx)
	case "get":
		out, err = op.Get(ctx, name)
	case "create":
		out, err = op.Create(ctx, spec)
	case "update":
		out, err = op.Update(ctx, spec)
	case "delete":
		out, err = op.Delete(ctx, name, version)
	}
	if err != nil {
		return c.failed(err)
	}
	c.stdout.Write(out) //nolint:errcheck
	return exitOK
}

// operator returns the operator's client of the coordinators given, with
// the token from the file, or else the environment.
func operator(coords, tokenFile string) (*remote.Operator, error) {
	urls, err := splitURLs("--coordinator", coords)
	if err != nil {
		return nil, err
	}
	token := strings.TrimSpace(os.Getenv(tokenEnv))
	if tokenFile != "" {
		// The quota's rule for token files: 0600 or 0400.
		if token, err = config.ReadTokenFile("--token-file", tokenFile); err != nil {
			return nil, errors.New(strings.TrimPrefix(err.Error(), config.ErrConfigFile.Error()+": "))
		}
	}
	if token == "" {
		return nil, fmt.Errorf("--token-file: want the operator's token in a FILE, or in %s", tokenEnv)
	}
	return remote.NewOperator(remote.OperatorConfig{Endpoints: urls, Token: token})
}

// tenantFlags are the flags of create and update.
type tenantFlags struct {
	rate, burst, emergency     float64
	mode, lease, skew, regions string
}

func (f *tenantFlags) register(c *command) {
	c.Float64Var(&f.rate, "rate", 0, "R: `TOKENS` a second, above 0")
	c.Float64Var(&f.burst, "burst", 0, "B: `TOKENS`, 0 or more")
	c.StringVar(&f.mode, "mode", "", "hard or best-effort")
	c.Float64Var(&f.emergency, "emergency", 0, "E: `TOKENS` each region may spend beyond its lease, best-effort only")
	c.StringVar(&f.lease, "lease", "", "the lease `DURATION`, 100ms to 1h (default 10s; 0s is refused)")
	c.StringVar(&f.skew, "skew-margin", "", "max clock skew, a `DURATION` under half the lease (default 500ms; 0s: none)")
	c.StringVar(&f.regions, "regions", "", "the `REGIONS` its traffic enters, comma-separated (default every region)")
}

// spec sets the fields given on s; in an update, the others keep their
// values. The coordinator checks the tenant they make with the config
// file's rules, and its refusal names the field.
func (f *tenantFlags) spec(c *command, s *replica.TenantSpec) {
	c.Visit(func(fl *flag.Flag) {
		switch fl.Name {
		case "rate":
			s.Rate = &f.rate
		case "burst":
			s.Burst = &f.burst
		case "emergency":
			s.Emergency = &f.emergency
		case "mode":
			s.Mode = &f.mode
		case "lease":
			s.LeaseDuration = &f.lease
		case "skew-margin":
			s.SkewMargin = &f.skew
		case "regions":
			for r := range strings.SplitSeq(f.regions, ",") {
				s.Regions = append(s.Regions, strings.TrimSpace(r))
			}
		}
	})
}
