package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/afloat/afloat/quota/config"
	"github.com/afloat/afloat/quota/coordinator/replica"
)

// tokenEnv is where an operator's token may come from instead of a file.
const tokenEnv = "AFLOAT_QUOTA_OPERATOR_TOKEN"

// quotaTenants runs afloat quota tenants VERB: it sends the operator's
// request to the coordinators given, following a follower to the leader
// only when the leader is one of them (the token goes nowhere else).
func quotaTenants(verb string) func(c *command, args []string) int {
	return func(c *command, args []string) int {
		var coords, tokenFile, name, mode, lease, skew, regions string
		var rate, burst, emergency float64
		var version uint64
		c.StringVar(&coords, "coordinator", "", "the coordinators' `URLS` (host:port or http(s)://host:port), comma-separated")
		c.StringVar(&tokenFile, "token-file", "", "`FILE` holding the operator's token (or set "+tokenEnv+")")
		if verb != "list" {
			c.StringVar(&name, "name", "", "the tenant's `NAME`")
		}
		if verb == "create" || verb == "update" {
			c.Float64Var(&rate, "rate", 0, "R: `TOKENS` a second, above 0")
			c.Float64Var(&burst, "burst", 0, "B: `TOKENS`, 0 or more")
			c.StringVar(&mode, "mode", "", "hard or best-effort")
			c.Float64Var(&emergency, "emergency", 0, "E: `TOKENS` each region may spend beyond its lease, best-effort only")
			c.StringVar(&lease, "lease", "", "the lease `DURATION`, 100ms to 1h (default 10s; 0s is refused)")
			c.StringVar(&skew, "skew-margin", "", "max clock skew, a `DURATION` under half the lease (default 500ms; 0s: none)")
			c.StringVar(&regions, "regions", "", "the `REGIONS` its traffic enters, comma-separated (default every region)")
		}
		if verb == "update" || verb == "delete" {
			c.Uint64Var(&version, "version", 0, "apply only if the tenant is still at `VERSION` (what get showed)")
		}
		if status, ok := c.parse(args); !ok {
			return status
		}
		urls, err := splitURLs("--coordinator", coords)
		if err != nil {
			return c.usage(err)
		}
		token, err := operatorToken(tokenFile)
		if err != nil {
			return c.usage(err)
		}
		if verb != "list" && name == "" {
			return c.usage(errors.New("--name: want the tenant's name"))
		}
		spec := replica.TenantSpec{Name: name, Version: version}
		if verb == "create" || verb == "update" {
			if verb == "create" && (!c.given("rate") || !c.given("burst")) {
				return c.usage(errors.New("--rate and --burst: both are required to create a tenant"))
			}
			num := func(flag string, v float64, min float64) (*float64, error) {
				if !c.given(flag) {
					return nil, nil
				}
				if math.IsNaN(v) || math.IsInf(v, 0) || v < min {
					return nil, fmt.Errorf("--%s %v: want a number of at least %v", flag, v, min)
				}
				return &v, nil
			}
			var errs []error
			var e error
			spec.Rate, e = num("rate", rate, 0)
			errs = append(errs, e)
			spec.Burst, e = num("burst", burst, 0)
			errs = append(errs, e)
			spec.Emergency, e = num("emergency", emergency, 0)
			errs = append(errs, e)
			if err := errors.Join(errs...); err != nil {
				return c.usage(err)
			}
			if c.given("mode") {
				if mode != "hard" && mode != "best-effort" {
					return c.usage(fmt.Errorf("--mode %q: want hard or best-effort", mode))
				}
				spec.Mode = &mode
			}
			for _, d := range []struct {
				flag string
				v    string
				dst  **string
			}{{"lease", lease, &spec.LeaseDuration}, {"skew-margin", skew, &spec.SkewMargin}} {
				if !c.given(d.flag) {
					continue
				}
				if _, err := time.ParseDuration(d.v); err != nil {
					return c.usage(fmt.Errorf("--%s %q: want a duration such as 10s", d.flag, d.v))
				}
				v := d.v
				*d.dst = &v
			}
			if c.given("regions") {
				for r := range strings.SplitSeq(regions, ",") {
					if r = strings.TrimSpace(r); r != "" {
						spec.Regions = append(spec.Regions, r)
					}
				}
				if len(spec.Regions) == 0 {
					return c.usage(errors.New("--regions: empty: want at least one region"))
				}
			}
		}
		ctx, stop := interruptible()
		defer stop()
		cl := &tenantsClient{urls: urls, token: token, http: &http.Client{Timeout: 10 * time.Second}}
		var out []byte
		switch verb {
		case "list":
			out, err = cl.do(ctx, http.MethodGet, "/v1/tenants", nil)
		case "get":
			out, err = cl.do(ctx, http.MethodGet, "/v1/tenants/"+url.PathEscape(name), nil)
		case "create", "update":
			out, err = cl.do(ctx, http.MethodPost, "/v1/tenants/"+verb, spec)
		case "delete":
			out, err = cl.do(ctx, http.MethodPost, "/v1/tenants/delete", struct {
				Name    string `json:"name"`
				Version uint64 `json:"version,omitempty"`
			}{name, version})
		}
		if err != nil {
			return c.failed(err)
		}
		c.stdout.Write(out) //nolint:errcheck
		return exitOK
	}
}

// operatorToken reads the token from the file, or else the environment.
func operatorToken(file string) (string, error) {
	if file != "" {
		// The quota's rule for token files: 0600 or 0400 (config.ReadTokenFile).
		tok, err := config.ReadTokenFile("--token-file", file)
		if err != nil {
			return "", errors.New(strings.TrimPrefix(err.Error(), config.ErrConfigFile.Error()+": "))
		}
		return tok, nil
	}
	if tok := strings.TrimSpace(os.Getenv(tokenEnv)); tok != "" {
		return tok, nil
	}
	return "", fmt.Errorf("--token-file: want the operator's token in a FILE, or in %s", tokenEnv)
}

type tenantsClient struct {
	urls  []string
	token string
	http  *http.Client
}

// do sends the request to each coordinator until the leader answers.
func (cl *tenantsClient) do(ctx context.Context, method, path string, body any) ([]byte, error) {
	var data []byte
	if body != nil {
		var err error
		if data, err = json.Marshal(body); err != nil {
			return nil, err
		}
	}
	tried := map[string]bool{}
	queue := slices.Clone(cl.urls)
	var last error
	for len(queue) > 0 {
		u := strings.TrimSuffix(queue[0], "/")
		queue = queue[1:]
		if tried[u] {
			continue
		}
		tried[u] = true
		req, err := http.NewRequestWithContext(ctx, method, u+path, bytes.NewReader(data))
		if err != nil {
			return nil, err
		}
		req.Header.Set("Authorization", "Bearer "+cl.token)
		if body != nil {
			req.Header.Set("Content-Type", "application/json")
		}
		resp, err := cl.http.Do(req)
		if err != nil {
			last = fmt.Errorf("%s: %w", u, err)
			continue
		}
		out, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
		resp.Body.Close()
		if err != nil {
			last = fmt.Errorf("%s: %w", u, err)
			continue
		}
		var refusal struct{ Error, Leader string }
		json.Unmarshal(out, &refusal) //nolint:errcheck // shown as it came if not JSON
		switch {
		case resp.StatusCode == http.StatusOK:
			return out, nil
		case resp.StatusCode == http.StatusServiceUnavailable && refusal.Leader != "":
			leader := strings.TrimSuffix(refusal.Leader, "/")
			if slices.ContainsFunc(cl.urls, func(g string) bool { return strings.TrimSuffix(g, "/") == leader }) {
				queue = append([]string{leader}, queue...)
			}
			last = fmt.Errorf("%s is not the leader; the leader is %s (pass it in --coordinator to reach it)", u, refusal.Leader)
			continue
		case resp.StatusCode == http.StatusServiceUnavailable:
			last = fmt.Errorf("%s: %s", u, refusal.Error)
			continue
		}
		if refusal.Error == "" {
			refusal.Error = strings.TrimSpace(string(out))
		}
		return nil, fmt.Errorf("%s: %d %s", u, resp.StatusCode, refusal.Error)
	}
	return nil, last
}

// runQuotaTenants dispatches afloat quota tenants VERB.
func runQuotaTenants(c *command, args []string) int {
	verbs := []string{"list", "get", "create", "update", "delete"}
	if len(args) == 0 || !slices.Contains(verbs, args[0]) {
		if len(args) > 0 && isHelp(args[0]) {
			return quotaTenants("create")(c, args)
		}
		return c.usage(fmt.Errorf("want a verb first: %s", strings.Join(verbs, ", ")))
	}
	return quotaTenants(args[0])(c, args[1:])
}
