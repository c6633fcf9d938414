package main

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/afloat/afloat/internal/cli"
	"github.com/afloat/afloat/quota/config"
	"github.com/afloat/afloat/quota/coordinator/replica"
	"github.com/afloat/afloat/quota/remote"
)

// tokenEnv is where an operator's token may come from instead of a file.
const tokenEnv = "AFLOAT_QUOTA_OPERATOR_TOKEN"

var tenantVerbs = []string{"list", "get", "create", "update", "delete"}

// runQuotaTenants dispatches afloat quota tenants VERB.
func runQuotaTenants(c *cli.Command, args []string) int {
	if len(args) > 0 && cli.IsHelp(args[0]) {
		return quotaTenants(c, "create", args)
	}
	if len(args) == 0 || !slices.Contains(tenantVerbs, args[0]) {
		return c.Refuse(fmt.Errorf("want a verb first: %s", strings.Join(tenantVerbs, ", ")))
	}
	return quotaTenants(c, args[0], args[1:])
}

// quotaTenants sends the operator's VERB to the coordinators given, through
// remote.Operator: it follows the leader among them only, so the token
// goes nowhere else.
func quotaTenants(c *cli.Command, verb string, args []string) int {
	var coords cli.List
	var tokenFile, caFile string
	var spec replica.TenantSpec
	c.Var(&coords, "coordinator", "the coordinators' `URLS` (host:port or http(s)://host:port), comma-separated")
	c.StringVar(&tokenFile, "token-file", "", "`FILE` holding the operator's token (or set "+tokenEnv+")")
	c.StringVar(&caFile, "ca", "", "verify the coordinators' certificates against the CAs in `FILE` (PEM) instead of the system's; --coordinator host:port then means https")
	if verb != "list" {
		c.StringVar(&spec.Name, "name", "", "the tenant's `NAME`")
	}
	if verb == "create" || verb == "update" {
		tenantFlags(c, &spec)
	}
	if verb == "update" || verb == "delete" {
		c.Uint64Var(&spec.Version, "version", 0, "apply only if the tenant is still at `VERSION` (what get showed)")
	}
	if status, ok := c.ParseFlags(args); !ok {
		return status
	}
	op, err := operator(coords, tokenFile, caFile)
	if err == nil && verb != "list" && spec.Name == "" {
		err = errors.New("--name: want the tenant's name")
	}
	if err != nil {
		return c.Refuse(err)
	}
	ctx, stop := cli.Interruptible()
	defer stop()
	var out []byte
	switch verb {
	case "list":
		out, err = op.List(ctx)
	case "get":
		out, err = op.Get(ctx, spec.Name)
	case "create":
		out, err = op.Create(ctx, spec)
	case "update":
		out, err = op.Update(ctx, spec)
	case "delete":
		out, err = op.Delete(ctx, spec.Name, spec.Version)
	}
	if err != nil {
		return c.Failed(err)
	}
	c.Stdout.Write(out) //nolint:errcheck
	return cli.ExitOK
}

// operator returns the operator's client of the coordinators given, with
// the token from the file, or else the environment.
func operator(coords []string, tokenFile, caFile string) (*remote.Operator, error) {
	tlsCfg, err := remote.LoadClientTLS(caFile, "", "")
	if err != nil {
		return nil, err
	}
	parse := remote.ParseEndpoints
	if tlsCfg != nil {
		parse = remote.ParseEndpointsTLS
	}
	urls, err := parse("--coordinator", coords)
	if err != nil {
		return nil, err
	}
	token := strings.TrimSpace(os.Getenv(tokenEnv))
	if tokenFile != "" {
		// The quota's rule for token files: 0600 or 0400.
		if token, err = config.ReadTokenFile("--token-file", tokenFile); err != nil {
			return nil, err
		}
	}
	if token == "" {
		return nil, fmt.Errorf("--token-file: want the operator's token in a FILE, or in %s", tokenEnv)
	}
	return remote.NewOperator(remote.OperatorConfig{Endpoints: urls, Token: token, TLS: tlsCfg})
}

// tenantFlags adds the flags of create and update: each sets its field of
// s only when given, so that in an update the others keep their values.
// The coordinator checks the tenant they make with the config file's
// rules, and its refusal names the field.
func tenantFlags(c *cli.Command, s *replica.TenantSpec) {
	c.Var(cli.Optional[float64]{P: &s.Rate}, "rate", "R: `TOKENS` a second, above 0")
	c.Var(cli.Optional[float64]{P: &s.Burst}, "burst", "B: `TOKENS`, 0 or more")
	c.Var(cli.Optional[string]{P: &s.Mode}, "mode", "`MODE`: hard or best-effort")
	c.Var(cli.Optional[float64]{P: &s.Emergency}, "emergency", "E: `TOKENS` each region may spend beyond its lease, best-effort only")
	c.Var(cli.Optional[string]{P: &s.LeaseDuration}, "lease", "the lease `DURATION`, 100ms to 1h (default 10s; 0s is refused)")
	c.Var(cli.Optional[string]{P: &s.SkewMargin}, "skew-margin", "max clock skew, a `DURATION` under half the lease (default 500ms; 0s: none)")
	c.Func("regions", "the `REGIONS` its traffic enters, comma-separated (default every region)", func(v string) error {
		s.Regions = nil
		for r := range strings.SplitSeq(v, ",") {
			s.Regions = append(s.Regions, strings.TrimSpace(r))
		}
		return nil
	})
}
